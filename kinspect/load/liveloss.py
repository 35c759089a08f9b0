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
acked-but-lost, known while it happens; they agree when the run is over (docs/guides/demo.md: the tolerance).

`LedgerTail` reads each ledger chunk once, as the producers write them (every 500 ms), and
keeps each producer's acknowledgements of a partition as ranges of consecutive offsets
acknowledged at one instant (one per producer batch, about): judging needs only where each run
starts and ends and when its writes came, so memory follows batches, not messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.model import ClusterSnapshot, PartitionInfo

if TYPE_CHECKING:  # imported where used: LiveLoss is a value the light install's TUI and
    import numpy as np  # replay read, without the load extra's numpy and pyarrow

    from kinspect.model.events import JsonObject

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

    def to_json(self) -> JsonObject:
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


class _Ranges:
    """One producer's acknowledgements of one partition, in the order they came, as ranges.

    A range is (first offset, last offset, ack_ts) of offsets that arrived one after another,
    each one more than the last, stamped at one instant: a producer batch is acknowledged at
    once, so a run of millions of acks is a few thousand ranges, not an array per offset. The
    columns live in one (3, capacity) array grown by doubling, so memory follows batches."""

    def __init__(self) -> None:
        import numpy as np

        self._buf = np.empty((3, 16), np.int64)
        self.size = 0  # ranges held
        self.acks = 0  # rows taken, those without an offset too (they are pending as well)

    def add(self, offsets: np.ndarray, ack_ts: np.ndarray) -> None:
        self.acks += offsets.size
        known = offsets >= 0  # -1: no offset (acks=0): says nothing of any leader's log
        new = ranges_of(offsets[known], ack_ts[known])
        if new.shape[1] and self.size and self._continues(new[:, 0]):
            self._buf[1, self.size - 1] = new[1, 0]  # a batch split across two chunks
            new = new[:, 1:]
        self._reserve(new.shape[1])
        self._buf[:, self.size:self.size + new.shape[1]] = new
        self.size += new.shape[1]

    def _continues(self, first: np.ndarray) -> bool:
        last = self._buf[:, self.size - 1]
        return bool(first[0] == last[1] + 1 and first[2] == last[2])

    def _reserve(self, more: int) -> None:
        import numpy as np

        capacity = self._buf.shape[1]
        if self.size + more <= capacity:
            return
        grown = np.empty((3, max(2 * capacity, self.size + more)), np.int64)
        grown[:, :self.size] = self._buf[:, :self.size]
        self._buf = grown

    def ranges(self) -> np.ndarray:
        """(3, n): first offsets, last offsets, ack times; a view, valid until the next add."""
        return self._buf[:, :self.size]

    @property
    def nbytes(self) -> int:
        return int(self._buf.nbytes)


def ranges_of(offsets: np.ndarray, ack_ts: np.ndarray) -> np.ndarray:
    """Offsets in arrival order as (3, n) ranges: a new one wherever the next offset is not
    one more than the last or was acknowledged at another instant (so no range hides a drop)."""
    import numpy as np

    if offsets.size == 0:
        return np.empty((3, 0), np.int64)
    breaks = np.flatnonzero((np.diff(offsets) != 1) | (np.diff(ack_ts) != 0)) + 1
    firsts = np.concatenate(([0], breaks))
    lasts = np.concatenate((breaks - 1, [offsets.size - 1]))
    return np.stack((offsets[firsts], offsets[lasts], ack_ts[firsts])).astype(
        np.int64, copy=False)


def doomed_in_runs(offsets: np.ndarray, ack_ts: np.ndarray, start: int,
                   leader_end: int | None, measured_at: int | None) -> int:
    """Acks at or past `start` in every run but the current leader's (see the module doc).

    `leader_end` is the leader's log end as measured at `measured_at` (ms) or later: a write
    the leader acknowledged before then lies below it."""
    return doomed_in_ranges(ranges_of(offsets, ack_ts), start, leader_end, measured_at)


def doomed_in_ranges(ranges: np.ndarray, start: int, leader_end: int | None,
                     measured_at: int | None) -> int:
    """`doomed_in_runs` over (3, n) ranges (`ranges_of`), in O(ranges): a run ends where the
    next range starts below the last one's end (offsets inside a range only climb)."""
    import numpy as np

    first, last, ts = ranges
    if first.size == 0:
        return 0
    cuts = np.flatnonzero(first[1:] < last[:-1]) + 1
    tail = int(cuts[-1]) if cuts.size else 0
    current = bool(first[tail] >= start)
    if current and leader_end is not None and measured_at is not None:
        current = not bool(np.any((last[tail:] >= leader_end) & (ts[tail:] <= measured_at)))
    if current:
        first, last = first[:tail], last[:tail]
    return int(np.maximum(last - np.maximum(first, start) + 1, 0).sum())


class LedgerTail:
    """A run's acknowledgements, read chunk by chunk as the producers write them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._seen: set[str] = set()
        self._acks: dict[Key, _Ranges] = {}
        self._writers: dict[tuple[str, int], tuple[int, ...]] = {}  # kept: they truncate later
        self.acked = 0

    def refresh(self) -> int:
        """Read the chunks written since the last call; how many acknowledgements they held."""
        import pyarrow.parquet as pq

        from kinspect.load.ack_ledger import ledger_dir

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
        import numpy as np
        import pyarrow.compute as pc

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
                    self._acks.setdefault(key, _Ranges()).add(offsets[chosen], ack_ts[chosen])
        return int(acked.num_rows)

    def held(self) -> dict[Key, int]:
        """Ranges kept per (topic, partition, producer): what grows with batches, not acks."""
        return {key: acks.size for key, acks in self._acks.items()}

    @property
    def nbytes(self) -> int:
        """Bytes of the kept ranges' arrays (capacity included)."""
        return sum(acks.nbytes for acks in self._acks.values())

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
            if p is None or start is None:
                pending += acks.acks
                continue
            count = doomed_in_ranges(acks.ranges(), start, _leader_end(p),
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
