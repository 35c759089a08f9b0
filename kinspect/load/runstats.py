"""A run's counts: live ones each generator publishes about once a second, for other processes
to read, and the final ones the runner streams from the ledger (`ledger_totals`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinspect.load.ack_ledger import (
    LedgerTotals,
    chunk_producer,
    chunk_sent_upto,
    ledger_dir,
    read_marks,
)
from kinspect.load.counts import ProducerCounts
from kinspect.load.rundir import STATS_DIR

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

SUMMED = ("sent", "acked", "failed", "in_flight")  # the counts a run's producers add up
READ_BATCH = 65_536  # ledger rows read at a time by `ledger_totals`

# Log-scale latency buckets (ms): O(1) per message, percentiles good to a bucket's width.
_BOUNDS = [0.5 * 1.25**i for i in range(60)]
_BOUNDS_NP = np.array(_BOUNDS)


def _bucket(ms: float) -> int:
    lo, hi = 0, len(_BOUNDS) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ms <= _BOUNDS[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


class StatsPublisher:
    def __init__(self, run_dir: Path, producer: int) -> None:
        self.dir = run_dir / STATS_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"p{producer:03d}.json"
        self.producer = producer
        self.acked_count = 0
        self.failed_count = 0
        self.failed_by_error: dict[str, int] = {}
        self.hist = [0] * len(_BOUNDS)
        self.last_ms = 0
        self.last_done = 0
        self.history: list[tuple[int, int, int]] = []  # ts, acked, failed per publish

    def acked(self, latency_ms: float) -> None:
        self.acked_count += 1
        self.hist[_bucket(latency_ms)] += 1

    def acked_many(self, latencies_ms: Any) -> None:
        """A batch of acknowledgements at once (numpy): the same buckets as `acked`."""
        latencies = np.asarray(latencies_ms)
        if latencies.size:
            buckets = np.minimum(np.searchsorted(_BOUNDS_NP, latencies), len(_BOUNDS) - 1)
            counts = np.bincount(buckets, minlength=len(_BOUNDS))
            self.hist = [a + int(b) for a, b in zip(self.hist, counts, strict=True)]
            self.acked_count += int(latencies.size)

    def failed(self, error: str) -> None:
        self.failed_count += 1
        self.failed_by_error[error] = self.failed_by_error.get(error, 0) + 1

    def _percentile(self, q: float) -> float:
        total = sum(self.hist)
        if not total:
            return 0.0
        target, seen = q * total, 0
        for index, count in enumerate(self.hist):
            seen += count
            if seen >= target:
                return _BOUNDS[index]
        return _BOUNDS[-1]

    def maybe_publish(self, now_ms: int, sent: int, in_flight: int, done: bool = False,
                      force: bool = False) -> None:
        if not force and now_ms - self.last_ms < 1000:
            return
        elapsed = max(1, now_ms - self.last_ms) if self.last_ms else 1000
        finished = self.acked_count + self.failed_count
        rate = (finished - self.last_done) * 1000 / elapsed
        self.last_ms, self.last_done = now_ms, finished
        data: JsonObject = {
            "producer": self.producer, "pid": os.getpid(), "ts": now_ms, "sent": sent,
            "acked": self.acked_count, "failed": self.failed_count,
            "failed_by_error": self.failed_by_error, "in_flight": in_flight, "rate": rate,
            "latency_p50_ms": self._percentile(0.5), "latency_p99_ms": self._percentile(0.99),
            "done": done,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path)


def read_stats(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((run_dir / STATS_DIR).glob("p*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def aggregate(stats: list[dict[str, Any]]) -> ProducerCounts:
    """Totals over the producers' published counts (`read_stats`, decoded here once); a key a
    producer of an older kinspect did not publish counts as 0."""
    sums = dict.fromkeys(SUMMED, 0)
    rate, p50, p99 = 0.0, 0.0, 0.0
    by_error: dict[str, int] = {}
    for s in stats:
        for key in SUMMED:
            sums[key] += s.get(key, 0)
        if not s.get("done"):
            rate += s.get("rate", 0)  # a finished producer sends nothing more
        for name, count in (s.get("failed_by_error") or {}).items():
            by_error[name] = by_error.get(name, 0) + count
        p50, p99 = max(p50, s.get("latency_p50_ms", 0)), max(p99, s.get("latency_p99_ms", 0))
    done = False
    if stats:
        done = all(s.get("done") for s in stats)
    return ProducerCounts(len(stats), sums["sent"], sums["acked"], sums["failed"],
                          sums["in_flight"], rate, by_error, p50, p99, done,
                          max((s.get("ts", 0) for s in stats), default=0))


def ledger_totals(run_dir: Path) -> LedgerTotals:
    """sent / acked / failed / unknown and failures by error, as `ledger_summary(read_ledger())`
    says them, streamed a few record batches at a time: memory does not grow with the run.

    No set of ids is needed: each seq has one row at most (see ack_ledger.py), and read_ledger
    adds an 'unknown' row for each seq up to a producer's sent_upto that has none, so a
    producer sent max(sent_upto, its largest seq) + 1 messages, and those beyond its rows are
    the synthesized unknowns."""
    sent_upto = {producer: mark.upto for producer, mark in read_marks(run_dir).items()}
    rows: dict[int, int] = {}
    status: dict[str, int] = {}
    by_error: dict[str, int] = {}
    for path in sorted(ledger_dir(run_dir).glob("p*.parquet")):
        producer = chunk_producer(path)
        with pq.ParquetFile(path) as chunk:
            upto = max(sent_upto.get(producer, -1), chunk_sent_upto(chunk.schema_arrow.metadata))
            for batch in chunk.iter_batches(READ_BATCH, columns=["seq", "status", "error"]):
                rows[producer] = rows.get(producer, 0) + batch.num_rows
                largest = pc.max(batch["seq"]).as_py()
                upto = upto if largest is None else max(upto, largest)
                _count(status, pc.value_counts(batch["status"]))
                failed = pc.filter(batch["error"], pc.equal(batch["status"], "failed"))
                _count(by_error, pc.value_counts(failed))
        sent_upto[producer] = upto
    sent = sum(upto + 1 for upto in sent_upto.values())
    synthesized = sum(max(0, upto + 1 - rows.get(p, 0)) for p, upto in sent_upto.items())
    return LedgerTotals(sent, status.get("acked", 0), status.get("failed", 0),
                        status.get("unknown", 0) + synthesized, by_error)


def _count(into: dict[str, int], counts: Any) -> None:
    for value, count in zip(counts.field("values").to_pylist(),
                            counts.field("counts").to_pylist(), strict=True):
        into[value] = into.get(value, 0) + count


def now_ms() -> int:
    return time.time_ns() // 1_000_000
