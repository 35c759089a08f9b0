"""Power loss on the lab: each broker's log dirs on kinspect's filesystem (powerfs.py).

`lab up --power` mounts, for every broker, a pass-through of its data dir (`nodes/<name>/data`,
the disk) at `nodes/<name>/power`, and the broker's log.dirs point there. `lab power-off`
freezes the broker, has the filesystem put every file back as it was at its last fsync (what a
power cut takes is the page cache), then kills the broker and unmounts: what was dropped is
kept under `LAB/power-cuts/<ms>-<node>/` (cut.json, and the dropped batches of each segment).
`lab power-on` mounts again and starts the broker, which recovers from an unclean shutdown.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab import disks
from kinspect.lab.nodes import POWER_MOUNT, node_dir
from kinspect.lab.state import LabState, NodeRecord

SOCKET = "powerfs.sock"
CUT_RECORD = "cut.json"  # powerfs.py writes it at the cut
CUTS_DIR = "power-cuts"
MOUNT_WAIT_S = 15.0
GONE_WAIT_S = 3.0
FUSE_DEVICE = Path("/dev/fuse")
EXPIRE_SETTING = Path("/proc/sys/vm/dirty_expire_centisecs")
DEFAULT_EXPIRE_S = 30.0


@dataclass(frozen=True)
class DroppedFile:
    """One file a power cut put back to its last fsync."""

    file: str  # relative to the broker's log dir: `<topic>-<p>/<segment>.log`, …
    synced_size: int
    size_at_cut: int
    dropped: tuple[tuple[int, int], ...]  # [start, end) byte ranges never on disk

    @property
    def dropped_bytes(self) -> int:
        return sum(end - start for start, end in self.dropped)


@dataclass(frozen=True)
class PowerCut:
    """What one broker's power cut dropped, read back from the filesystem's own record."""

    node: str
    at_ms: int
    expire_s: float  # writes older than this had been written back by the kernel
    files: tuple[DroppedFile, ...]
    evidence: Path

    @property
    def dropped_bytes(self) -> int:
        return sum(f.dropped_bytes for f in self.files)

    @property
    def words(self) -> str:
        """`12 files, 3.4 MB never on disk` — for the CLI line and the journal."""
        written = [f for f in self.files if f.dropped_bytes]
        return (f"{_size(self.dropped_bytes)} in {len(written)} "
                f"file{'' if len(written) == 1 else 's'} never on disk, dropped")


def _size(count: int) -> str:
    if count < 10_000:
        return f"{count} B"
    return f"{count / 1e6:.1f} MB"


def kernel_expire_s() -> float:
    """How old a dirty page gets before this machine's kernel writes it back by itself."""
    try:
        return int(EXPIRE_SETTING.read_text()) / 100
    except (OSError, ValueError):
        return DEFAULT_EXPIRE_S


def enabled(state: LabState) -> bool:
    return bool(state.extra.get("power"))


def expire_s(state: LabState) -> float:
    return float(state.extra.get("power", {}).get("expire_s", 30.0))


def mount_path(root: Path, node: NodeRecord) -> Path:
    return node_dir(root, node.name) / POWER_MOUNT


def cuts_root(root: Path) -> Path:
    return root / CUTS_DIR


def problem() -> str | None:
    """Why this machine cannot give a lab power loss (None: it can): the FUSE device, libfuse,
    the binding."""
    if not FUSE_DEVICE.exists():
        return "no /dev/fuse (load the fuse module: modprobe fuse; a container needs --device " \
               "/dev/fuse)"
    if not os.access(FUSE_DEVICE, os.R_OK | os.W_OK):
        return "/dev/fuse is not readable and writable by this user (power loss needs root)"
    if ctypes.util.find_library("fuse3") is None:
        return "libfuse3 is not installed (apt-get install fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"the FUSE binding does not load: {exc} (pip install 'kinspect[lab]')"
    return None


def mount(root: Path, node: NodeRecord, expire: float) -> None:
    """The broker's filesystem over its data dir (kept if already mounted)."""
    target, data = mount_path(root, node), node_dir(root, node.name) / "data"
    if disks.mounted(target):
        return
    reason = problem()
    if reason:
        raise KinspectError(f"cannot give {node.name} a disk that loses power: {reason}")
    target.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    sock = node_dir(root, node.name) / SOCKET
    evidence = cuts_root(root) / f"{time.time_ns() // 1_000_000}-{node.name}"
    log = node_dir(root, node.name) / "logs" / "powerfs.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        subprocess.Popen([sys.executable, "-m", "kinspect.lab.powerfs", str(data), str(target),
                          str(sock), str(expire), str(evidence)], stdout=sink,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    _wait_mounted(target, sock, log)


def _wait_mounted(target: Path, sock: Path, log: Path) -> None:
    deadline = time.monotonic() + MOUNT_WAIT_S
    while time.monotonic() < deadline:
        if disks.mounted(target) and sock.exists():
            return
        time.sleep(0.05)
    said = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no word"]
    raise KinspectError(f"the power filesystem at {target} did not mount within "
                        f"{MOUNT_WAIT_S:.0f} s: {said[0][:200]}")


def _ask(root: Path, node: NodeRecord, what: str) -> dict[str, object]:
    sock = node_dir(root, node.name) / SOCKET
    try:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(60)
            conn.connect(str(sock))
            conn.sendall(what.encode() + b"\n")
            answer = conn.makefile("rb").readline()
    except OSError as exc:
        raise KinspectError(f"{node.name}'s power filesystem does not answer ({sock}): "
                            f"{exc.strerror or exc}") from exc
    loaded: dict[str, object] = json.loads(answer)
    return loaded


def settle(root: Path, node: NodeRecord) -> None:
    """What the lab wrote before the broker starts (KRaft's format) counts as on disk."""
    _ask(root, node, "settle")


def unsynced_bytes(root: Path, node: NodeRecord) -> int | None:
    """Bytes the broker wrote that are not on disk yet (None: its filesystem is not mounted)."""
    if not disks.mounted(mount_path(root, node)):
        return None
    return int(str(_ask(root, node, "status")["unsynced_bytes"]))


def cut(root: Path, node: NodeRecord) -> PowerCut:
    """Drop every unsynced write of the broker's filesystem, which refuses writes from now."""
    answer = _ask(root, node, "cut")
    return read_cut(node.name, answer, Path(str(answer.get("evidence", ""))))


def read_cut(node: str, record: dict[str, object], evidence: Path) -> PowerCut:
    files = record.get("files")
    assert isinstance(files, list)
    return PowerCut(node=node, at_ms=int(float(str(record["at"])) * 1000),
                    expire_s=float(str(record["expire_s"])), evidence=evidence,
                    files=tuple(DroppedFile(
                        file=str(f["file"]), synced_size=int(f["synced_size"]),
                        size_at_cut=int(f["size_at_cut"]),
                        dropped=tuple((int(a), int(b)) for a, b in f["dropped"]))
                        for f in files))


def unmount(root: Path, node: NodeRecord) -> None:
    """Detach the broker's filesystem and wait for its process to end with it."""
    target = mount_path(root, node)
    if disks.mounted(target):
        subprocess.run(["umount", "-l", str(target)], capture_output=True)
    _wait_gone(node_dir(root, node.name) / SOCKET)


def unmount_all(root: Path, state: LabState) -> int:
    """Every broker's filesystem detached (a teardown); how many were mounted."""
    mounted = [n for n in state.brokers if disks.mounted(mount_path(root, n))]
    for node in state.brokers:
        unmount(root, node)
    return len(mounted)


def _wait_gone(sock: Path) -> None:
    """The filesystem's process removes its socket as it exits (serve's finally). A running
    node's namespace (ip netns exec copies every mount) may hold a copy of the mount: then the
    process lives on, refusing every write since the cut, until that node stops; no wait."""
    deadline = time.monotonic() + GONE_WAIT_S
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def power_cuts_between(root: Path, start_ms: int, end_ms: int) -> list[Path]:
    """The cuts made within [start_ms, end_ms] (by the time each record says it was made)."""
    found = []
    for cut in sorted(cuts_root(root).glob("*-*")):
        try:
            at = float(json.loads((cut / CUT_RECORD).read_text())["at"]) * 1000
        except (OSError, ValueError, KeyError):
            continue  # a mount never cut: no record
        if start_ms <= at <= end_ms:
            found.append(cut)
    return found
