"""The live loss figure's rules, on ledgers and snapshots made here (no cluster)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from kinspect.load.ack_ledger import LedgerWriter
from kinspect.load.liveloss import LedgerTail, doomed_in_runs
from kinspect.model import ClusterSnapshot, ReplicaLog, build_snapshot
from tests.helpers.model_fixtures import T0, broker_view, zk_view


def test_a_producer_that_moved_to_the_new_leader() -> None:
    """Old leader's run 0..99, the new leader's epoch starts at 60, the producer moved there:
    the 40 acks at 60..99 by the old leader are doomed, the new leader's run is not."""
    offsets = np.concatenate([np.arange(0, 100), np.arange(60, 90)])
    ack_ts = np.arange(offsets.size) + T0
    assert doomed_in_runs(offsets, ack_ts, start=60, leader_end=90, measured_at=T0 + 500) == 40


def test_a_producer_still_writing_to_the_cut_off_leader() -> None:
    """One run climbing past the new leader's log end: all of it past the start is doomed."""
    offsets, ack_ts = np.arange(0, 500), np.arange(500) + T0
    assert doomed_in_runs(offsets, ack_ts, start=60, leader_end=60, measured_at=T0 + 400) == 440


def test_writes_acknowledged_after_the_log_end_was_measured_are_the_leaders() -> None:
    """A new run on the current leader, read from the ledger before the next poll: its acks
    past the measured log end came after the measure, so nothing is doomed."""
    offsets, ack_ts = np.arange(23_066, 40_000), np.arange(16_934) + T0
    assert doomed_in_runs(offsets, ack_ts, start=23_066, leader_end=30_000,
                          measured_at=T0 + 6_000) == 0
    # ... but a write acknowledged before the measure, past the leader's end, was not its own
    assert doomed_in_runs(offsets, ack_ts, start=23_066, leader_end=30_000,
                          measured_at=T0 + 8_000) == 40_000 - 23_066


def test_no_leader_change_dooms_nothing() -> None:
    offsets, ack_ts = np.arange(0, 500), np.arange(500) + T0
    assert doomed_in_runs(offsets, ack_ts, start=0, leader_end=500, measured_at=T0 + 499) == 0


def _snapshot(epoch: int, start: int, logs: tuple[ReplicaLog, ...]) -> ClusterSnapshot:
    base = build_snapshot(zk_view(), broker_view(zk_view()), [1, 2, 3], taken_at=T0)
    topics = []
    for t in base.topics:
        parts = tuple(replace(p, leader_epoch=epoch, replica_logs=logs,
                              epoch_ends=((epoch - 1, epoch - 1, start),) if epoch else ())
                      if p.name == "test1-0" else p for p in t.partitions)
        topics.append(replace(t, partitions=parts))
    return replace(base, topics=tuple(topics), replica_logs_at=T0 + 1_000)


def test_the_tail_reads_chunks_once_and_names_the_old_leader(tmp_path: Path) -> None:
    writer = LedgerWriter(tmp_path, producer=0, topic="test1", acks="1", run_id="r")
    for seq in range(100):  # the old leader acknowledges 0..99
        writer.note_sent(seq, T0)
        writer.record(seq, 0, seq, None, "acked", None, T0, T0 + seq)
    writer.flush(T0 + 10)
    tail = LedgerTail(tmp_path)
    assert tail.refresh() == 100 and tail.refresh() == 0
    leader = next(p for p in _snapshot(0, 0, ()).partitions() if p.name == "test1-0").leader
    assert leader is not None
    other = next(b for b in (1, 2, 3) if b != leader)
    logs = (ReplicaLog(leader, 60, 1, 0), ReplicaLog(other, 100, 0, -40, diverged=40))
    live = tail.judge(_snapshot(1, 60, logs))
    assert (live.acked, live.doomed_total, live.writers()) == (100, 40, [other])
    assert tail.partitions() == {("test1", 0)}
    unasked = tail.judge(_snapshot(0, 0, ()))
    assert unasked.doomed_total == 0 and unasked.pending == 0
