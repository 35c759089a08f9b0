"""Replica snapshots: what each broker's log held, kept before anything can truncate it.

A broker that comes back (healed, restarted, resumed) truncates its log to the new leader's,
and the writes it acknowledged alone vanish without a trace. So before the lab heals, starts
or resumes anything it copies every broker's segment files of the user topics into
`LAB/replicas/<ms>-<reason>/<node>/<topic>-<p>/`. The post-mortem reads them as ground truth
for "who acknowledged what": a lost message found in broker B's log, in a batch of leader
epoch E, was written by B at epoch E.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from kinspect.lab.nodes import node_dir
from kinspect.lab.state import LabState

REPLICAS_DIR = "replicas"
KEEP_SNAPSHOTS = 12  # a lab keeps the newest snapshots; a run copies the ones in its window
MAX_BYTES = 1 << 30  # per snapshot: a topic larger than this is not copied whole
PARTITION_DIR = re.compile(r"^(?!__)(.+)-(\d+)$")  # user topics only (no __consumer_offsets)


def snapshots_root(root: Path) -> Path:
    return root / REPLICAS_DIR


def keep_replicas(root: Path, state: LabState, reason: str) -> Path | None:
    """Copy every broker's segments of user topics; None when there was nothing to copy.

    A live broker may append while we copy: the last batch of a file can be cut short, which
    the reader tolerates. Nothing here may fail the fault it precedes.
    """
    target = snapshots_root(root) / f"{time.time_ns() // 1_000_000}-{reason}"
    copied = 0
    for broker in state.brokers:
        data = node_dir(root, broker.name) / "data"
        if not data.is_dir():
            continue
        for part in sorted(data.iterdir()):
            if not part.is_dir() or not PARTITION_DIR.match(part.name):
                continue
            for segment in sorted(part.glob("*.log")):
                size = segment.stat().st_size
                if copied + size > MAX_BYTES:
                    continue
                dest = target / broker.name / part.name
                dest.mkdir(parents=True, exist_ok=True)
                try:
                    shutil.copyfile(segment, dest / segment.name)
                except OSError:
                    continue  # deleted by retention under us: nothing to keep
                copied += size
    _prune(snapshots_root(root))
    return target if target.exists() else None


def _prune(folder: Path) -> None:
    snapshots = sorted((p for p in folder.iterdir() if p.is_dir()), key=snapshot_ms)
    for old in snapshots[:-KEEP_SNAPSHOTS]:
        shutil.rmtree(old, ignore_errors=True)


def snapshot_ms(path: Path) -> int:
    head = path.name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def snapshots_between(root: Path, start_ms: int, end_ms: int) -> list[Path]:
    """The snapshots taken in a run's window, oldest first."""
    folder = snapshots_root(root)
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.is_dir() and start_ms <= snapshot_ms(p) <= end_ms),
                  key=snapshot_ms)
