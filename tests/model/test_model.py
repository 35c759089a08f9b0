"""The pure model: flags, warnings, health, events and JSON, without Kafka."""

from __future__ import annotations

from kinspect.model import (
    HwStallTracker,
    PartitionStateZ,
    assess,
    build_snapshot,
    diff,
    keep_unchanged,
    snapshot_from_json,
    snapshot_to_json,
)
from tests.helpers.model_fixtures import T0, broker_view, demo_snapshot, zk_view


def one(isr: tuple[int, ...], leader: int | None = 3, min_isr: str = "2", epoch: int = 2):
    zk = zk_view(states={("test1", 0): PartitionStateZ(leader, epoch, isr, 3, T0 - 10_000)})
    snap = build_snapshot(zk, broker_view(zk, min_isr=min_isr), [1, 2, 3], T0)
    return snap, snap.partitions()[0]


def test_healthy_partition_has_no_flags() -> None:
    snap, p = one((3, 1, 2))
    assert (p.offline, p.under_replicated, p.under_min_isr, p.at_min_isr) == (False,) * 4
    assert p.preferred_leader and p.state == "ok" and not p.views_disagree
    assert assess(snap).verdict == "healthy"


def test_isr_levels() -> None:
    _, p = one((3, 1))
    assert p.under_replicated and p.at_min_isr and not p.under_min_isr and p.state == "warn"
    snap, p = one((3,))
    assert p.under_min_isr and p.state == "under_min_isr"
    assert assess(snap).verdict == "critical"
    snap, p = one((), leader=None)
    assert p.offline and p.leader is None and p.state == "offline"
    assert assess(snap).offline == ("test1-0",)


def test_not_on_preferred_leader() -> None:
    _, p = one((3, 1, 2), leader=1)
    assert not p.preferred_leader and p.replicas[0] == 3


def test_warnings() -> None:
    snap = demo_snapshot()
    kinds = [(w.kind, w.topic) for w in snap.findings]
    assert kinds[0] == ("replication_factor_1", "__consumer_offsets")
    _, _ = one((3, 1, 2))
    low, _ = one((3, 1, 2), min_isr="1")
    assert ("min_isr_below_2", "test1") in [(w.kind, w.topic) for w in low.findings]
    high, _ = one((3, 1, 2), min_isr="3")
    assert ("min_isr_ge_rf", "test1") in [(w.kind, w.topic) for w in high.findings]
    assert assess(high).verdict == "warning"
    zk = zk_view(brokers={1: "a:1", 2: "b:2"}, controller=None)
    snap = build_snapshot(zk, None, [1, 2, 3], T0)
    kinds = [w.kind for w in snap.findings]
    assert kinds[:2] == ["no_controller", "broker_missing"]
    assert assess(snap).verdict == "critical"


def test_zombie_leader_disagrees_only_after_metadata_grace() -> None:
    snap = demo_snapshot(isolated_leader=True)
    p = snap.partition("test1", 0)
    assert p is not None and p.views_disagree and p.leader == 1 and p.broker_leader == 3
    zk = zk_view(states={("test1", 0): PartitionStateZ(1, 3, (1, 2), 3, T0 - 100)})
    fresh = build_snapshot(zk, broker_view(zk, leaders={("test1", 0): 3}), None, T0)
    assert not fresh.partitions()[0].views_disagree  # metadata still propagating


def test_events_for_a_failover() -> None:
    before = demo_snapshot(taken_at=T0)
    after = demo_snapshot(isolated_leader=True, taken_at=T0 + 7000)
    events = diff(before, after)
    kinds = {(e.kind, e.partition) for e in events}
    assert ("leader_changed", "test1-0") in kinds
    assert ("isr_shrank", "test1-0") in kinds
    assert ("views_disagree_started", "test1-0") in kinds
    assert ("controller_changed", None) in kinds
    assert ("broker_gone", None) in kinds
    change = next(e for e in events if e.kind == "leader_changed" and e.partition == "test1-0")
    assert change.fields == {"old": 3, "new": 1, "epoch": 3} and change.ts == T0 + 7000
    back = diff(after, demo_snapshot(taken_at=T0 + 20_000))
    kinds = {(e.kind, e.partition) for e in back}
    assert {("isr_expanded", "test1-0"), ("views_disagree_stopped", "test1-0"),
            ("broker_registered", None)} <= kinds
    assert diff(None, before) == []


def test_offline_online_and_zk_session_events() -> None:
    online, _ = one((3, 1, 2))
    offline, _ = one((), leader=None)
    kinds = [e.kind for e in diff(online, offline)]
    assert "partition_offline" in kinds
    assert "partition_online" in [e.kind for e in diff(offline, online)]
    lost = build_snapshot(zk_view(session="lost"), None, None, T0 + 1)
    assert [e.kind for e in diff(online, lost) if e.kind == "zk_session"] == ["zk_session"]


def test_hw_stall_tracker() -> None:
    tracker = HwStallTracker(stall_ms=5000)
    zk = zk_view()
    assert tracker.observe(build_snapshot(zk, broker_view(zk, hw=10), None, T0)) == []
    assert tracker.observe(build_snapshot(zk, broker_view(zk, hw=20), None, T0 + 1000)) == []
    assert tracker.observe(build_snapshot(zk, broker_view(zk, hw=20), None, T0 + 4000)) == []
    stalled = tracker.observe(build_snapshot(zk, broker_view(zk, hw=20), None, T0 + 6500))
    assert [e.kind for e in stalled] == ["hw_stalled"]
    assert tracker.observe(build_snapshot(zk, broker_view(zk, hw=20), None, T0 + 9000)) == []


def test_json_contract_and_round_trip() -> None:
    snap = demo_snapshot(isolated_leader=True)
    data = snapshot_to_json(snap)
    assert data["controller"] == {"id": 1, "epoch": 4, "broker_reported_id": 1}
    assert data["zookeeper"] == {"state": "connected"}
    topic = next(t for t in data["topics"] if t["name"] == "test1")
    part = topic["partitions"][0]
    assert part["broker_view"] == {"leader": 3, "isr": [1, 2]}
    assert topic["config"] == {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    for key in ("partition", "leader", "leader_epoch", "replicas", "isr", "high_watermark",
                "log_start", "offline", "under_replicated", "under_min_isr", "at_min_isr",
                "preferred_leader", "views_disagree"):
        assert key in part
    assert snapshot_to_json(snapshot_from_json(data)) == data


def test_kraft_and_admin_down() -> None:
    zk = zk_view()
    kraft = build_snapshot(None, broker_view(zk), None, T0)
    assert not kraft.sees_zookeeper and kraft.controller.epoch is None
    assert kraft.partitions()[0].leader == 3
    assert any("no ZooKeeper" in text for text in kraft.limitations)
    blind = build_snapshot(zk, None, None, T0)
    assert blind.partitions()[0].high_watermark is None
    assert any("no AdminClient" in text for text in blind.limitations)


def test_a_poll_equal_to_the_last_shares_its_topics() -> None:
    """The observer keeps the older, equal objects: an idle cluster's polls hold one model."""
    old = demo_snapshot()
    new = demo_snapshot(taken_at=T0 + 1000)
    kept = keep_unchanged(old, new)
    assert kept == new and kept.taken_at == T0 + 1000
    assert all(a is b for a, b in zip(kept.topics, old.topics, strict=True))
    assert keep_unchanged(None, new) is new


def test_a_poll_with_a_change_keeps_only_the_equal_partitions() -> None:
    old = demo_snapshot()
    new = demo_snapshot(isolated_leader=True, taken_at=T0 + 1000)
    kept = keep_unchanged(old, new)
    assert kept == new
    was = {p.name: p for p in old.partitions()}
    moved = {"test1-0", "orders-2"}
    for p in kept.partitions():
        assert (p is was[p.name]) == (p.name not in moved and p == was[p.name]), p.name
    assert any(p is was[p.name] for p in kept.partitions())  # some kept
    assert diff(old, kept) == diff(old, new)  # the same events, told from shared objects
