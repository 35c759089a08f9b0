"""Small disks for a lab broker's extra log dirs, which a fault fills.

`lab up --log-dirs 2` gives each broker a second log dir on a tmpfs of its own, DISK_SIZE big:
a disk that can really fill. `lab fill-disk kafka2` writes a file into it until the kernel says
ENOSPC; Kafka's next append there fails with an IOException and the broker takes the dir offline
(its replicas go offline, their leadership moves), exactly as on a full disk in production. The
first dir stays on the machine's disk: it holds the KRaft metadata log, and the lab's oracles
(DumpLogSegments) read it. `lab free-disk` deletes the file; Kafka brings a dir back only when
the broker restarts, and so does the lab."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

from kinspect.errors import KinspectError

DISK_SIZE_MB = 64
FILLER = ".kinspect-filler"  # Kafka loads directories only: a file in a log dir is ignored
MAX_LOG_DIRS = 3


def log_dirs(data: Path, count: int) -> list[Path]:
    """A node's log dirs: `data`, then data2, data3… beside it."""
    return [data, *(data.parent / f"data{i}" for i in range(2, count + 1))]


def mounted(path: Path) -> bool:
    return str(path.resolve()) in _mount_points()


def _mount_points() -> set[str]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return set()
    return {line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1}


def mount_small(path: Path) -> None:
    """A tmpfs of DISK_SIZE_MB at `path` (kept if already there: a restarted broker keeps its
    disk and what is on it)."""
    path.mkdir(parents=True, exist_ok=True)
    if mounted(path):
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE_MB}m",
                           "kinspect-disk", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise KinspectError(f"cannot mount a small disk at {path}: "
                            f"{done.stderr.strip() or 'mount failed'} (--log-dirs needs root)")


def unmount_under(root: Path) -> list[str]:
    """Unmount every small disk under `root` (a lab's nodes): before their dirs are removed."""
    prefix = str(root.resolve()) + os.sep
    gone = []
    for point in sorted(_mount_points(), reverse=True):
        if point.startswith(prefix):
            subprocess.run(["umount", "-l", point], capture_output=True)
            gone.append(point)
    return gone


def fill(path: Path) -> int:
    """Write into `path` until its disk is full; the bytes written."""
    if not mounted(path):
        raise KinspectError(f"{path} is not one of the lab's small disks (lab up --log-dirs 2)")
    chunk, written = b"\0" * (1 << 20), 0
    with open(path / FILLER, "ab", buffering=0) as sink:  # unbuffered: nothing left to flush
        while True:
            try:
                written += sink.write(chunk) or 0
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise KinspectError(f"cannot fill {path}: {exc.strerror}") from exc
                break
    return written


def free(path: Path) -> int:
    """Delete what `fill` wrote; the bytes freed (0: it was not full)."""
    filler = path / FILLER
    try:
        size = filler.stat().st_size
        filler.unlink()
    except FileNotFoundError:
        return 0
    return size
