"""Live counters of one consumer, published about once a second for the runner and the TUI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kinspect.load.consumers.settings import consumer_dir

STATS_DIR = "stats"


class ConsumerStats:
    """Counters of one consumer across its incarnations' lifetimes (each writes its own file)."""

    def __init__(self, run_dir: Path, consumer: int, incarnation: int) -> None:
        self.dir = consumer_dir(run_dir) / STATS_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"c{consumer:03d}-i{incarnation:03d}.json"
        self.consumer, self.incarnation = consumer, incarnation
        self.received = self.processed = self.failed = self.aborted = self.commits = 0
        self._last = 0.0

    def maybe_publish(self) -> None:
        if time.monotonic() - self._last >= 1.0:
            self.publish()

    def publish(self, done: bool = False, crashed: bool = False) -> None:
        self._last = time.monotonic()
        data = {"consumer": self.consumer, "incarnation": self.incarnation,
                "received": self.received, "processed": self.processed, "failed": self.failed,
                "aborted": self.aborted, "commits": self.commits, "done": done,
                "crashed": crashed, "ts": time.time_ns() // 1_000_000}
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path)


def read_consumer_stats(run_dir: Path) -> dict[str, int]:
    """Totals over every consumer and incarnation (received, processed, failed, aborted,
    commits, crashes, incarnations)."""
    totals = {"received": 0, "processed": 0, "failed": 0, "aborted": 0, "commits": 0,
              "crashes": 0, "incarnations": 0}
    for path in sorted((consumer_dir(run_dir) / STATS_DIR).glob("c*-i*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being replaced this instant: the next read has it
        for key in ("received", "processed", "failed", "aborted", "commits"):
            totals[key] += int(data.get(key, 0))
        totals["crashes"] += 1 if data.get("crashed") else 0
        totals["incarnations"] += 1
    return totals
