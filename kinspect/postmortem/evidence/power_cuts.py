"""What the run's power cuts dropped, from the filesystem's own record (not Kafka's).

`verify` keeps each cut under RUN_DIR/power-cuts/<cut>/<node>/<topic>-<p>/*.log: the batches
the broker had written and never fsynced, laid out as a replica snapshot. A lost message found
there was acknowledged from the page cache and never reached the disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kinspect.lab.power import CUT_RECORD
from kinspect.load.rundir import POWER_CUTS_DIR
from kinspect.postmortem.evidence.segments import read_snapshots

Message = tuple[int, int]  # (producer, seq)


def cuts_in(run_dir: Path) -> list[Path]:
    root = run_dir / POWER_CUTS_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def dropped_messages(run_dir: Path, topic: str, run_id: str | None) -> set[Message]:
    """The run's messages in the batches some power cut dropped, on any broker."""
    table = read_snapshots(cuts_in(run_dir), topic, run_id).table()
    producers, seqs = table.column("producer").to_pylist(), table.column("seq").to_pylist()
    return set(zip(producers, seqs, strict=True))


def cut_records(run_dir: Path) -> list[tuple[str, int]]:
    """(node, epoch ms) of each kept cut, by its record."""
    records = []
    for cut in cuts_in(run_dir):
        try:
            at = float(json.loads((cut / CUT_RECORD).read_text())["at"])
        except (OSError, ValueError, KeyError):
            continue
        records.append((cut.name.split("-", 1)[1], int(at * 1000)))
    return records


def lost_among(dropped: set[Message], lost: Iterable[Message]) -> int:
    """How many of the lost messages the dropped batches hold."""
    return sum(message in dropped for message in lost)
