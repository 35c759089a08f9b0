"""A broker's disk that can lose power: a FUSE pass-through that remembers what is not on disk.

`lab up --power` puts each broker's log dirs on this filesystem. Every write goes through to
the real directory at once (so Kafka reads what it wrote), and the filesystem notes, per file,
which bytes were written since the file's last fsync and what they overwrote. That is what a
power cut takes: the kernel's page cache. `cut` puts every such file back as it was at its last
fsync (appends truncated, overwrites restored), refuses every write after, and says what it
dropped; the lab kills the broker in the same instant.

The kernel writes a dirty file back by itself once its oldest unsynced write is older than
`vm.dirty_expire_centisecs` (30 s by default) — per inode, as here: a file whose first unsynced
write is older than that counts as written back. Names (create, rename, unlink, mkdir) are kept,
as a journaling filesystem keeps its metadata; only data that was never on disk is lost.

Runs as its own process (`python -m kinspect.lab.powerfs BACKING MOUNT SOCKET`), answering
`status` and `cut` on a UNIX socket, one JSON line each.
"""

from __future__ import annotations

import errno
import json
import os
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

import mfusepy as fuse

from kinspect.lab.power import CUT_RECORD

P = ParamSpec("P")
T = TypeVar("T")
SEGMENT_SUFFIX = ".log"


@dataclass
class Dirty:
    """One file's writes since its last fsync: what a power cut would take back."""

    path: str  # its latest name, relative to the filesystem's root
    synced_size: int  # its length at the last fsync (or when it was first dirtied)
    since: float  # when its oldest unsynced write happened (time.time())
    undo: list[tuple[int, bytes]] = field(default_factory=list)  # (offset, bytes overwritten)
    written: list[list[int]] = field(default_factory=list)  # [start, end) ranges, merged

    def note(self, start: int, end: int) -> None:
        """Add a written range, merged into the last one when it continues it (appends)."""
        if self.written and self.written[-1][0] <= start <= self.written[-1][1]:
            self.written[-1][1] = max(self.written[-1][1], end)
            return
        self.written.append([start, end])

    def unsynced_bytes(self) -> int:
        return sum(end - start for start, end in _merged(self.written))


def _first_written(entry: Dirty) -> int:
    """Where a file's unsynced bytes begin. A follower that truncates its log into what is on
    disk and appends again writes from below the fsynced length: kept from the fsynced length,
    the evidence began mid-batch and none of it could be read (the hour's nemesis: 2,002
    acknowledged messages dropped by a power cut were counted as lost outside any)."""
    starts = [start for start, _ in entry.written]
    return min([entry.synced_size, *starts])


def _merged(ranges: list[list[int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


class PowerFS(fuse.Operations):  # type: ignore[misc]
    """The pass-through, its dirty table keyed by the backing file's inode."""

    use_ns = True  # utimens in nanoseconds

    def __init__(self, backing: Path, expire_s: float, evidence: Path) -> None:
        self.backing = str(backing)
        self.evidence = evidence
        self.expire_s = expire_s
        self._guard = threading.Lock()
        self.dirty: dict[int, Dirty] = {}
        self.inodes: dict[int, int] = {}  # open file handle -> inode
        self.is_cut = False

    def _real(self, path: str) -> str:
        return self.backing + path

    # ----- what is kept track of ----------------------------------------------------------

    def _dirty(self, fh: int, path: str) -> Dirty:
        inode = self.inodes.get(fh) or os.fstat(fh).st_ino
        entry = self.dirty.get(inode)
        if entry is None:
            entry = Dirty(path, os.fstat(fh).st_size, time.time())
            self.dirty[inode] = entry
        return entry

    def _refuse_after_cut(self) -> None:
        if self.is_cut:
            raise fuse.FuseOSError(errno.EIO)

    def write_back_expired(self) -> None:
        """What the kernel would have written back by now is on disk."""
        oldest = time.time() - self.expire_s
        with self._guard:
            if self.is_cut:
                return
            for inode in [i for i, d in self.dirty.items() if d.since <= oldest]:
                del self.dirty[inode]

    def settle(self) -> dict[str, object]:
        """Everything written so far counts as on disk (the lab's own setup, e.g. KRaft's
        format: a real machine's install is long written back before its power fails)."""
        with self._guard:
            settled = len(self.dirty)
            self.dirty.clear()
        return {"settled": settled}

    def status(self) -> dict[str, object]:
        with self._guard:
            return {"files": len(self.dirty),
                    "unsynced_bytes": sum(d.unsynced_bytes() for d in self.dirty.values()),
                    "cut": self.is_cut, "expire_s": self.expire_s}

    def cut(self) -> dict[str, object]:
        """The power cut: every dirty file back to its last fsync; nothing written after."""
        with self._guard:
            self.is_cut = True
            at = time.time()
            self.evidence.mkdir(parents=True, exist_ok=True)
            dropped = [self._roll_back(d) for d in self.dirty.values()]
            self.dirty.clear()
        dropped.sort(key=lambda f: str(f["file"]))
        record = {"at": at, "expire_s": self.expire_s, "evidence": str(self.evidence),
                  "files": dropped}
        (self.evidence / CUT_RECORD).write_text(json.dumps(record, indent=1) + "\n")
        return record

    def _roll_back(self, entry: Dirty) -> dict[str, object]:
        real = self._real(entry.path)
        fd = os.open(real, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            first = _first_written(entry)
            if entry.path.endswith(SEGMENT_SUFFIX) and size > first:
                self._keep_dropped(entry, fd, first, size)
            for offset, old in reversed(entry.undo):
                os.pwrite(fd, old, offset)
            os.ftruncate(fd, entry.synced_size)
            os.fsync(fd)
        finally:
            os.close(fd)
        return {"file": entry.path.lstrip("/"), "synced_size": entry.synced_size,
                "size_at_cut": size, "unsynced_since": entry.since,
                "dropped": _merged(entry.written)}

    def _keep_dropped(self, entry: Dirty, fd: int, first: int, size: int) -> None:
        """A segment's batches that never reached the disk, kept as evidence that is not
        Kafka's: the batches alone from the first unsynced write, under the segment's own name
        (DumpLogSegments reads them; the post-mortem matches their messages)."""
        kept = self.evidence / entry.path.lstrip("/")
        kept.parent.mkdir(parents=True, exist_ok=True)
        with open(kept, "wb") as sink:
            offset = first
            while offset < size:
                chunk = os.pread(fd, min(1 << 20, size - offset), offset)
                if not chunk:
                    break
                sink.write(chunk)
                offset += len(chunk)

    # ----- the pass-through ---------------------------------------------------------------

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        try:
            st = os.lstat(self._real(path))
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return {key: getattr(st, key) for key in (
            "st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime",
            "st_ctime", "st_ino")}

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._real(path))
        return {key: getattr(st, key) for key in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}

    def access(self, path: str, amode: int) -> None:
        if not os.access(self._real(path), amode):
            raise fuse.FuseOSError(errno.EACCES)

    def open(self, path: str, flags: int) -> int:
        fh = _os(os.open, self._real(path), _readable(flags))
        self.inodes[fh] = os.fstat(fh).st_ino
        return fh

    def create(self, path: str, mode: int, fi: object = None) -> int:
        self._refuse_after_cut()
        fh = _os(os.open, self._real(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
        _owned_by_caller(self._real(path))
        self.inodes[fh] = os.fstat(fh).st_ino
        return fh

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self._guard:
            self._refuse_after_cut()
            entry = self._dirty(fh, path)
            if offset < entry.synced_size:  # an overwrite of what is on disk: keep the old
                end = min(offset + len(data), entry.synced_size)
                entry.undo.append((offset, os.pread(fh, end - offset, offset)))
            entry.note(offset, offset + len(data))
            return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        with self._guard:
            self._refuse_after_cut()
            target = fh if fh is not None else _os(os.open, self._real(path), os.O_RDWR)
            try:
                self._truncate(target, path, length)
            finally:
                if fh is None:
                    os.close(target)

    def _truncate(self, fd: int, path: str, length: int) -> None:
        """A segment's cut into what is on disk is undone by a power cut; any other file's
        new length counts as on disk with the file, as a journal keeps it: Kafka sizes its
        preallocated 10 MB indexes down and up at every load and roll, and keeping their old
        bytes held GBs per broker (an index is rebuilt by recovery, and holds no message)."""
        if not path.endswith(SEGMENT_SUFFIX):
            os.ftruncate(fd, length)
            self.dirty.pop(self.inodes.get(fd) or os.fstat(fd).st_ino, None)
            return
        entry = self._dirty(fd, path)
        size = os.fstat(fd).st_size
        if length < min(size, entry.synced_size):  # cuts into what is on disk: keep it
            entry.undo.append((length, os.pread(fd, entry.synced_size - length, length)))
        os.ftruncate(fd, length)  # a length, not data: nothing noted as written

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        with self._guard:
            self._refuse_after_cut()
            os.fsync(fh)
            self.dirty.pop(self.inodes.get(fh) or os.fstat(fh).st_ino, None)

    def flush(self, path: str, fh: int) -> None:
        return None

    def release(self, path: str, fh: int) -> None:
        self.inodes.pop(fh, None)
        os.close(fh)

    def fsyncdir(self, path: str, datasync: int, fh: int) -> None:
        return None

    def mkdir(self, path: str, mode: int) -> None:
        self._refuse_after_cut()
        _os(os.mkdir, self._real(path), mode)
        _owned_by_caller(self._real(path))

    def rmdir(self, path: str) -> None:
        self._refuse_after_cut()
        _os(os.rmdir, self._real(path))

    def unlink(self, path: str) -> None:
        with self._guard:
            self._refuse_after_cut()
            st = _os(os.lstat, self._real(path))
            _os(os.unlink, self._real(path))
            if st.st_nlink <= 1:
                self.dirty.pop(st.st_ino, None)

    def rename(self, old: str, new: str) -> None:
        with self._guard:
            self._refuse_after_cut()
            _os(os.rename, self._real(old), self._real(new))
            for entry in self.dirty.values():  # a dirty file (or one under a dir) renamed
                if entry.path == old or entry.path.startswith(old + "/"):
                    entry.path = new + entry.path[len(old):]

    def chmod(self, path: str, mode: int) -> None:
        _os(os.chmod, self._real(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        _os(os.chown, self._real(path), uid, gid)

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
        if times is None:
            _os(os.utime, self._real(path))
        else:
            _os(os.utime, self._real(path), ns=times)


def _owned_by_caller(real: str) -> None:
    """A new file or dir belongs to who made it, as on a real filesystem (this one may run as
    root for a broker that does not)."""
    uid, gid, _ = fuse.fuse_get_context()
    try:
        os.chown(real, uid, gid)
    except OSError:
        return  # not root: it is ours, as the caller's must be


def _readable(flags: int) -> int:
    """The backing file opened so an overwrite's old bytes can be read, and without O_APPEND
    (Linux's pwrite appends on such a file whatever the offset; the kernel gives the offset)."""
    flags &= ~os.O_APPEND
    if flags & os.O_ACCMODE == os.O_WRONLY:
        flags = (flags & ~os.O_ACCMODE) | os.O_RDWR
    return flags


def _os(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """An os call whose OSError becomes the same errno for the kernel."""
    try:
        return call(*args, **kwargs)
    except OSError as exc:
        raise fuse.FuseOSError(exc.errno) from None


class _Control(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        fs: PowerFS = self.server.fs  # type: ignore[attr-defined]
        asked = self.rfile.readline().decode().strip()
        answer = {"cut": fs.cut, "settle": fs.settle}.get(asked, fs.status)()
        self.wfile.write(json.dumps(answer).encode() + b"\n")


def _write_back_loop(fs: PowerFS) -> None:
    while True:
        time.sleep(min(5.0, max(fs.expire_s / 2, 0.1)))  # the kernel's flusher wakes every 5 s
        fs.write_back_expired()


def serve(backing: Path, mount: Path, socket_path: Path, expire_s: float,
          evidence: Path) -> None:
    """Mount, answer on the socket, return when unmounted."""
    fs = PowerFS(backing, expire_s, evidence)
    socket_path.unlink(missing_ok=True)
    server = socketserver.ThreadingUnixStreamServer(str(socket_path), _Control)
    ours = socket_path.stat().st_ino
    server.fs = fs  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Thread(target=_write_back_loop, args=(fs,), daemon=True).start()
    try:
        # allow_other lets a container's root in (root only: fuse.conf's user_allow_other is
        # off by default); a rootless lab's brokers run as this user, which FUSE lets in anyway
        fuse.FUSE(fs, str(mount), foreground=True, allow_other=os.geteuid() == 0,
                  fsname="kinspect-power", default_permissions=True)
    finally:
        server.shutdown()
        _remove_if_ours(socket_path, ours)


def _remove_if_ours(socket_path: Path, inode: int) -> None:
    """A process that outlived its mount (a copy in a node's namespace) must not remove the
    socket of the filesystem mounted since at the same path."""
    try:
        if socket_path.stat().st_ino == inode:
            socket_path.unlink()
    except FileNotFoundError:
        return


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]),
          Path(sys.argv[5]))
