"""The live loss figure kept as ranges judges exactly as the per-offset arrays it replaced.

The oracle below is the per-offset `doomed_in_runs` as it was before `LedgerTail` kept ranges:
random arrival sequences of one partition (several producers, leader changes that drop the
offsets back, duplicates after truncation, equal and different ack times, batches split
across ledger chunks) are judged by both, for many (epoch start, leader end, measured at).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from kinspect.load.ack_ledger import ACKED, LedgerWriter
from kinspect.load.liveloss import LedgerTail, doomed_in_runs, ranges_of
from kinspect.model import ClusterSnapshot, ReplicaLog, build_snapshot
from tests.helpers.model_fixtures import T0, broker_view, zk_view

TOPIC, PARTITION = "test1", 0


def oracle_doomed_in_runs(offsets: np.ndarray, ack_ts: np.ndarray, start: int,
                          leader_end: int | None, measured_at: int | None) -> int:
    """The per-offset judgement, verbatim from before ranges: the reference, not the code."""
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


@dataclass
class _Producer:
    leader: int = 0  # index of the leader log it writes to
    offsets: list[int] = field(default_factory=list)
    stamps: list[int] = field(default_factory=list)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.offsets, np.int64), np.array(self.stamps, np.int64)


def _arrivals(rng: np.random.Generator, producers: int = 3) -> list[_Producer]:
    """One partition's acknowledgements per producer, in arrival order: batches appended to
    the log of the leader each producer writes to; a leader change starts a new log where the
    newest one is truncated, and producers move to it one by one (some keep climbing on the
    cut-off leader meanwhile)."""
    logs, clock = [0], T0
    writers = [_Producer() for _ in range(producers)]
    steps, elections = int(rng.integers(3, 250)), float(rng.choice([0.0, 0.01, 0.07]))
    for _ in range(steps):
        if rng.random() < elections:
            logs.append(int(rng.integers(max(0, logs[-1] - 120), logs[-1] + 1)))
        writer = writers[int(rng.integers(producers))]
        if writer.leader < len(logs) - 1 and rng.random() < 0.5:
            writer.leader = len(logs) - 1
        clock += int(rng.integers(0, 3))  # 0: back-to-back batches stamped at one instant
        _batch(rng, writer, logs, clock)
    return writers


def _batch(rng: np.random.Generator, writer: _Producer, logs: list[int], clock: int) -> None:
    size = int(rng.integers(1, 30))
    first = logs[writer.leader]
    logs[writer.leader] += size
    offsets = list(range(first, first + size))
    stamps = [clock] * size
    if rng.random() < 0.1:  # a batch served by two polls: the stamp changes inside it
        cut = int(rng.integers(0, size + 1))
        stamps = [clock] * cut + [clock + 1] * (size - cut)
    if rng.random() < 0.05:  # the same offset reported twice
        offsets.append(offsets[-1])
        stamps.append(stamps[-1])
    writer.offsets += offsets
    writer.stamps += stamps


def _write_ledger(rng: np.random.Generator, run_dir: Path, writers: list[_Producer]) -> None:
    """Each producer's rows in about 8 chunks cut at random rows (batches split across them)."""
    for index, writer in enumerate(writers):
        ledger = LedgerWriter(run_dir, producer=index, topic=TOPIC, acks="1", run_id="r")
        cuts = set(rng.integers(0, len(writer.offsets) + 1, 7).tolist())
        for seq, (offset, stamp) in enumerate(zip(writer.offsets, writer.stamps, strict=True)):
            if seq in cuts:
                ledger.flush(T0)
            ledger.note_sent(seq, T0)
            ledger.record(seq, PARTITION, offset, None, "acked", None, T0, stamp)
        ledger.flush(T0)


def _triples(rng: np.random.Generator, writers: list[_Producer],
             n: int) -> list[tuple[int, int | None, int | None]]:
    """(start, leader_end, measured_at), often on an offset or stamp (the edges) or next to
    it; the start often where a run begins (as an epoch start does)."""
    offsets = np.concatenate([w.arrays()[0] for w in writers] + [np.zeros(1, np.int64)])
    stamps = np.concatenate([w.arrays()[1] for w in writers] + [np.full(1, T0, np.int64)])
    firsts = offsets[np.flatnonzero(np.diff(offsets, prepend=offsets[0] + 1) < 0)]

    def near(values: np.ndarray) -> int:
        if rng.random() < 0.3:
            return int(rng.integers(int(values.min()) - 2, int(values.max()) + 3))
        return int(rng.choice(values)) + int(rng.integers(-1, 2))

    out: list[tuple[int, int | None, int | None]] = []
    for _ in range(n):
        end = near(offsets) if rng.random() < 0.9 else None
        at = near(stamps) if rng.random() < 0.9 else None
        start = near(firsts) if firsts.size and rng.random() < 0.5 else near(offsets)
        out.append((max(0, start), end, at))
    return out


def test_doomed_in_runs_is_the_oracle_on_random_sequences() -> None:
    """The function on raw per-offset arrays, negatives and all, for many triples."""
    rng = np.random.default_rng(20261124)
    checked = 0
    for _ in range(40):
        writers = _arrivals(rng)
        for writer in writers:
            offsets, stamps = writer.arrays()
            if rng.random() < 0.1 and offsets.size:  # a stray offset of no log (-1)
                offsets[int(rng.integers(offsets.size))] = -1
            for start, end, at in _triples(rng, writers, 25):
                assert doomed_in_runs(offsets, stamps, start, end, at) == \
                    oracle_doomed_in_runs(offsets, stamps, start, end, at), (start, end, at)
                checked += 1
    assert checked >= 2_500


def _snapshot(base: ClusterSnapshot, start: int, leader_end: int,
              measured_at: int) -> ClusterSnapshot:
    """The new leader's epoch 1 starts at `start`; its log ended at `leader_end` when the
    brokers were asked at `measured_at`."""
    topics = []
    for t in base.topics:
        parts = tuple(replace(p, leader_epoch=1, epoch_ends=((0, 0, start),),
                              replica_logs=(ReplicaLog(p.leader or 1, leader_end, 1, 0),))
                      if p.name == f"{TOPIC}-{PARTITION}" else p for p in t.partitions)
        topics.append(replace(t, partitions=parts))
    return replace(base, topics=tuple(topics), replica_logs_at=measured_at)


def test_the_tail_judges_as_the_oracle_chunk_by_chunk(tmp_path: Path) -> None:
    """LedgerTail reading real chunks (batches cut across them) gives the oracle's sum over
    producers, and holds exactly the ranges of each producer's whole sequence."""
    rng = np.random.default_rng(7)
    base = build_snapshot(zk_view(), broker_view(zk_view()), [1, 2, 3], taken_at=T0)
    for case in range(8):
        writers = _arrivals(rng)
        run_dir = tmp_path / f"run{case}"
        _write_ledger(rng, run_dir, writers)
        tail = LedgerTail(run_dir)
        assert tail.refresh() == sum(len(w.offsets) for w in writers)
        held = tail.held()
        for index, writer in enumerate(writers):
            if writer.offsets:
                assert held[(TOPIC, PARTITION, index)] == ranges_of(*writer.arrays()).shape[1]
        for start, end, at in _triples(rng, writers, 30):
            if end is None or at is None:
                continue  # a snapshot always has both; the function test covers None
            want = sum(oracle_doomed_in_runs(*w.arrays(), start, end, at) for w in writers)
            assert tail.judge(_snapshot(base, start, end, at)).doomed_total == want


def test_ranges_never_hide_a_drop_nor_merge_stamps() -> None:
    offsets = np.array([5, 6, 7, 7, 8, 3, 4, 9, 10, 11], np.int64)
    stamps = np.array([1, 1, 1, 1, 1, 2, 2, 2, 3, 3], np.int64)
    assert ranges_of(offsets, stamps).T.tolist() == [
        [5, 7, 1], [7, 8, 1], [3, 4, 2], [9, 9, 2], [10, 11, 3]]


def test_memory_follows_batches_not_acknowledgements(tmp_path: Path) -> None:
    """1,000,000 acks in 1,000-offset batches, each stamped at its own instant, across 20
    chunks: 1,000 ranges kept (24 bytes each), where per-offset arrays held 16 MB."""
    batches, size = 1_000, 1_000
    ledger = LedgerWriter(tmp_path, producer=0, topic=TOPIC, acks="1", run_id="r")
    n = batches * size
    seqs = np.arange(n, dtype=np.int64)
    stamps = T0 + seqs // size
    for lo in range(0, n, 50_000):
        chosen = slice(lo, lo + 50_000)
        ledger.note_sent(lo + 49_999)
        ledger.append(seqs[chosen], np.zeros(50_000, np.int32), seqs[chosen], None,
                      np.full(50_000, ACKED, np.int8), None, stamps[chosen], stamps[chosen])
        ledger.flush(T0)
    tail = LedgerTail(tmp_path)
    assert tail.refresh() == n
    assert tail.held() == {(TOPIC, PARTITION, 0): batches}
    assert tail.nbytes <= 2 * 3 * 8 * batches  # doubling: at most twice what is used


def test_acks_without_an_offset_are_counted_not_kept(tmp_path: Path) -> None:
    """acks=0: the ledger's offset is -1, which says nothing of any leader's log; the rows
    count as acknowledged (and pending while the epoch start is unknown), no range is kept."""
    ledger = LedgerWriter(tmp_path, producer=0, topic=TOPIC, acks="0", run_id="r")
    n = 5_000
    ledger.note_sent(n - 1)
    ledger.append(np.arange(n), np.zeros(n, np.int32), None, None, np.full(n, ACKED, np.int8),
                  None, np.full(n, T0), np.full(n, T0 + 1))
    ledger.flush(T0)
    tail = LedgerTail(tmp_path)
    assert tail.refresh() == n and tail.held() == {(TOPIC, PARTITION, 0): 0}
    base = build_snapshot(zk_view(), broker_view(zk_view()), [1, 2, 3], taken_at=T0)
    assert tail.judge(base).pending == n
    assert tail.judge(_snapshot(base, 0, 0, T0 + 5)).doomed_total == 0
