"""Loss as it happens: acknowledgements the current leader's log does not hold.

A leader cut off from ZooKeeper keeps acknowledging acks=1 writes at its old epoch while the
controller elects another broker, whose new epoch starts where its copy of the old one ended
(asked of it with OffsetsForLeaderEpoch by the observer: `PartitionInfo.epoch_start`). Every
write the old leader acknowledged at or past that offset is doomed: when it rejoins, it
truncates them (unless it comes back as leader). The same holds for a leader killed with
acknowledged writes its followers had not copied.

Delivery reports do not say which leader acknowledged a write, but the offsets do: a
producer's acknowledgements of one partition climb while one leader serves it and drop when
it moves to the next leader's shorter log. So each producer's acknowledgements, in the order
they came, fall into runs, one per leader it wrote to. The current leader's run is the last
one when it starts at or past the epoch start and every write in it acknowledged before the
leader's log end was measured lies below that end (a producer still writing to the cut-off
leader climbs past it). Every other run's acknowledgements at or past the epoch start are
doomed. The count is the post-mortem's
acked-but-lost, known while it happens; they agree when the run is over (README: tolerance).

`LedgerTail` reads each ledger chunk once, as the producers write them (every 500 ms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinspect.load.ledger import ledger_dir
from kinspect.model import ClusterSnapshot, PartitionInfo

Key = tuple[str, int, int]  # topic, partition, producer
COLUMNS = ["topic", "partition", "producer", "offset", "ack_ts", "status"]


@dataclass(frozen=True)
class DoomedAcks:
    """Acknowledgements of one partition the current leader's log does not hold."""

    topic: str
    partition: int
    count: int
    writers: tuple[int, ...]  # replicas holding records past the epoch start (the old leader)


@dataclass(frozen=True)
class LiveLoss:
    """One run's acknowledgements judged against the cluster as it is now."""

    acked: int  # acknowledgements read from the ledger so far
    doomed: tuple[DoomedAcks, ...] = ()
    pending: int = 0  # acks of partitions whose epoch start the leader has not told yet

    @property
    def doomed_total(self) -> int:
        return sum(d.count for d in self.doomed)

    def writers(self) -> list[int]:
        return sorted({w for d in self.doomed for w in d.writers})

    def to_json(self) -> dict[str, Any]:
        return {"acked": self.acked, "doomed": self.doomed_total, "pending": self.pending,
                "writers": self.writers(),
                "partitions": [{"topic": d.topic, "partition": d.partition, "doomed": d.count,
                                "writers": list(d.writers)} for d in self.doomed]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LiveLoss:
        return cls(int(data["acked"]), tuple(
            DoomedAcks(p["topic"], int(p["partition"]), int(p["doomed"]),
                       tuple(p.get("writers", ()))) for p in data.get("partitions", [])),
            int(data.get("pending", 0)))


@dataclass
class _Acks:
    """One producer's acknowledged offsets of one partition, in the order they came, and when."""

    offset_parts: list[np.ndarray] = field(default_factory=list)
    ts_parts: list[np.ndarray] = field(default_factory=list)

    def add(self, offsets: np.ndarray, ack_ts: np.ndarray) -> None:
        self.offset_parts.append(offsets)
        self.ts_parts.append(ack_ts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if len(self.offset_parts) != 1:
            self.offset_parts = [_joined(self.offset_parts)]
            self.ts_parts = [_joined(self.ts_parts)]
        return self.offset_parts[0], self.ts_parts[0]


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def doomed_in_runs(offsets: np.ndarray, ack_ts: np.ndarray, start: int,
                   leader_end: int | None, measured_at: int | None) -> int:
    """Acks at or past `start` in every run but the current leader's (see the module doc).

    `leader_end` is the leader's log end as measured at `measured_at` (ms) or later: a write
    the leader acknowledged before then lies below it."""
    if offsets.size == 0:
        return 0
    cuts = np.flatnonzero(np.diff(offsets) < 0) + 1
    last = int(cuts[-1]) if cuts.size else 0
    tail, tail_ts = offsets[last:], ack_ts[last:]
    current = bool(tail[0] >= start)
    if current and leader_end is not None and measured_at is not None:
        current = not bool(np.any((tail >= leader_end) & (tail_ts <= measured_at)))
    judged = offsets[:last] if current else offsets
    return int(np.count_nonzero(judged >= start))


class LedgerTail:
    """A run's acknowledgements, read chunk by chunk as the producers write them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._seen: set[str] = set()
        self._acks: dict[Key, _Acks] = {}
        self._writers: dict[tuple[str, int], tuple[int, ...]] = {}  # kept: they truncate later
        self.acked = 0

    def refresh(self) -> int:
        """Read the chunks written since the last call; how many acknowledgements they held."""
        folder = ledger_dir(self.run_dir)
        if not folder.is_dir():
            return 0
        new = 0
        for path in sorted(folder.glob("p*.parquet")):  # a producer's chunks in order
            if path.name in self._seen:
                continue
            try:
                table = pq.read_table(path, columns=COLUMNS)
            except (OSError, ValueError):
                continue  # renamed into place complete, so only a vanished run dir lands here
            self._seen.add(path.name)
            new += self._take(table)
        self.acked += new
        return new

    def _take(self, table: Any) -> int:
        acked = table.filter(pc.equal(table["status"], "acked"))
        if acked.num_rows == 0:
            return 0
        topics = acked["topic"].to_numpy(zero_copy_only=False)
        partitions = acked["partition"].to_numpy()
        producers = acked["producer"].to_numpy()
        offsets = acked["offset"].to_numpy().astype(np.int64)
        ack_ts = acked["ack_ts"].fill_null(0).to_numpy().astype(np.int64)
        for topic in np.unique(topics):
            in_topic = topics == topic
            for partition in np.unique(partitions[in_topic]):
                in_partition = in_topic & (partitions == partition)
                for producer in np.unique(producers[in_partition]):
                    chosen = in_partition & (producers == producer)
                    key = (str(topic), int(partition), int(producer))
                    self._acks.setdefault(key, _Acks()).add(offsets[chosen], ack_ts[chosen])
        return int(acked.num_rows)

    def partitions(self) -> set[tuple[str, int]]:
        """The partitions written to (for the observer to ask where their epoch starts)."""
        return {(topic, partition) for topic, partition, _ in self._acks}

    def judge(self, snapshot: ClusterSnapshot | None) -> LiveLoss:
        """How many acknowledgements the current leaders' logs do not hold."""
        if snapshot is None:
            return LiveLoss(self.acked)
        parts = {(p.topic, p.partition): p for p in snapshot.partitions()}
        counts: dict[tuple[str, int], int] = {}
        pending = 0
        for (topic, partition, _producer), acks in self._acks.items():
            p = parts.get((topic, partition))
            start = p.epoch_start if p is not None else None
            offsets, ack_ts = acks.arrays()
            if p is None or start is None:
                pending += offsets.size
                continue
            count = doomed_in_runs(offsets, ack_ts, start, _leader_end(p),
                                   snapshot.replica_logs_at)
            counts[(topic, partition)] = counts.get((topic, partition), 0) + count
        doomed = []
        for (topic, partition), count in sorted(counts.items()):
            if not count:
                continue
            p = parts[(topic, partition)]
            ahead = tuple(r.broker for r in p.replica_logs if r.diverged > 0)
            if ahead:
                self._writers[(topic, partition)] = ahead
            doomed.append(DoomedAcks(topic, partition, count,
                                     self._writers.get((topic, partition), ())))
        return LiveLoss(self.acked, tuple(doomed), pending)


def _leader_end(p: PartitionInfo) -> int | None:
    """The current leader's own log end (its high watermark when it did not answer)."""
    lead = p.replica_log(p.leader) if p.leader is not None else None
    if lead is not None and lead.log_end is not None:
        return lead.log_end
    return p.high_watermark
