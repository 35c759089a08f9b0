"""The partition view's rows and cells: topic order, open/closed topics, filters, replica logs."""

from __future__ import annotations

from dataclasses import replace

from kinspect.model import ClusterSnapshot, PartitionInfo, ReplicaLog
from kinspect.tui.partition_cells import partition_cells
from kinspect.tui.partition_rows import PartitionTable, TopicSummary, row_key
from kinspect.tui.render import header_text, replica_logs_text
from tests.helpers.model_fixtures import demo_snapshot


def _default_open(summary: TopicSummary, filtered: bool) -> bool:
    return filtered or not summary.internal


def _keys(model: PartitionTable, **kwargs: object) -> list[tuple[str, int]]:
    return [row_key(r) for r in model.rows(_default_open, **kwargs)]  # type: ignore[arg-type]


def test_user_topics_first_internal_closed_pinned_first() -> None:
    snapshot = demo_snapshot(isolated_leader=True)
    keys = _keys(PartitionTable.of(snapshot))
    assert keys[0] == ("orders", -1) and keys[7] == ("test1", -1)
    assert keys[-1] == ("__consumer_offsets", -1)  # closed: its summary only
    assert _keys(PartitionTable.of(snapshot, pinned=("test1",)))[:2] == [("test1", -1), ("test1", 0)]


def test_summary_counts_what_is_wrong() -> None:
    model = PartitionTable.of(demo_snapshot(isolated_leader=True))
    orders = next(s for s, _ in model.topics if s.topic == "orders")
    assert (orders.partitions, orders.under_replicated, orders.offline) == (6, 1, 0)
    assert orders.high_watermark == 600


def test_filters_keep_matching_topics_open() -> None:
    model = PartitionTable.of(demo_snapshot(isolated_leader=True))
    assert _keys(model, needle="orders-2") == [("orders", -1), ("orders", 2)]
    unhealthy = _keys(model, unhealthy_only=True)
    assert ("orders", 2) in unhealthy and ("test1", 0) in unhealthy
    assert ("orders", 0) not in unhealthy


def test_changed_finds_the_partitions_that_moved() -> None:
    before, after = demo_snapshot(), demo_snapshot(isolated_leader=True)
    changed = PartitionTable.of(after).changed(PartitionTable.of(before), 300)
    moved = {(p.topic, p.partition) for _, p in changed}
    assert moved == {("test1", 0), ("orders", 2)}


def _with_logs(p: PartitionInfo) -> PartitionInfo:
    return replace(p, replica_logs=(ReplicaLog(1, 100, 3, 0), ReplicaLog(2, 97, 3, 3),
                                    ReplicaLog(3, 8_220, 2, -8_120, diverged=8_120)))


def test_replica_logs_show_lag_and_divergence() -> None:
    snapshot: ClusterSnapshot = demo_snapshot(isolated_leader=True)
    p = _with_logs(snapshot.partition("test1", 0))  # type: ignore[arg-type]
    assert replica_logs_text(p).plain == "⚠ 3 +8,120 past e2 1:100 2:-3"
    assert "DIVERGED" in partition_cells(p)["flags"].plain
    assert replica_logs_text(replace(p, replica_logs=())).plain == ""


def test_header_keeps_words_apart() -> None:
    snapshot = demo_snapshot()
    plain = header_text(snapshot, snapshot.taken_at + 700, "lab").plain
    assert "ZK connected │ admin ok │ 0.7 s ago" in plain


def test_header_says_whether_the_warm_engine_is_ready() -> None:
    snapshot = demo_snapshot()
    assert "spark" not in header_text(snapshot, snapshot.taken_at, "lab").plain
    for state in ("starting", "ready", "busy", "failed"):
        plain = header_text(snapshot, snapshot.taken_at + 700, "lab", engine=state).plain
        assert plain.endswith(f"0.7 s ago │ spark {state}")
