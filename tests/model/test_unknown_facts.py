"""Unknown is a value: a refused request leaves its facts unknown with the reason, flags that
depend on them are unknown, and no verdict is better than what was seen. Kafka's own
definitions (TopicCommand) for the four partition lists."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from kinspect.cli.health import EXIT, health_json
from kinspect.model import (
    PartitionStateZ,
    Reassignment,
    Unknown,
    build_snapshot,
    snapshot_from_json,
    snapshot_to_json,
)
from kinspect.model.assessment import assess, unchecked, verdict_of
from kinspect.sources.recording import apply_delta, snapshot_delta
from kinspect.tui.partition_cells import partition_flags
from kinspect.tui.partition_rows import summarize
from kinspect.tui.render import topic_summary_text, warnings_text
from tests.helpers.model_fixtures import T0, broker_view, zk_view

REFUSED = Unknown("no DescribeConfigs permission on the topic")


def one_replica_left(refused: bool, min_isr: str = "2"):  # type: ignore[no-untyped-def]
    """The issue's flow: RF 3, min.insync.replicas=2, the ISR down to one replica, seen by the
    admin (configs told) or by an on-call user whose DescribeConfigs is refused."""
    replicas = {"orders": {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}}
    states = {("orders", p): PartitionStateZ(1, 5, (1,), 3, T0 - 60_000) for p in range(3)}
    zk = zk_view(states=states, replicas=replicas)
    broker = broker_view(zk, min_isr=min_isr)
    if refused:
        broker = dataclasses.replace(broker, configs={}, config_unknown={"orders": REFUSED})
    return build_snapshot(zk, broker, [1, 2, 3], T0)


def test_refused_configs_make_min_isr_unknown_never_the_default() -> None:
    admin, oncall = one_replica_left(False), one_replica_left(True)
    p_admin, p_oncall = admin.partitions()[0], oncall.partitions()[0]
    assert p_admin.min_isr == 2 and p_admin.under_min_isr is True
    assert p_oncall.min_isr == REFUSED and p_oncall.under_min_isr == REFUSED
    assert p_oncall.at_min_isr == REFUSED
    assert p_oncall.under_replicated is True  # the ISR and replicas were told
    assert p_oncall.state == "unknown" and p_admin.state == "under_min_isr"
    with pytest.raises(TypeError):  # an unknown is never silently taken as true or false
        bool(p_oncall.under_min_isr)


def test_health_never_better_than_what_was_seen() -> None:
    admin = health_json(one_replica_left(False), None)
    oncall = health_json(one_replica_left(True), None)
    assert admin["verdict"] == "critical" and EXIT[admin["verdict"]] == 2
    assert oncall["verdict"] == "unknown" and EXIT[oncall["verdict"]] == 3
    assert oncall["seen"] == "warning" and oncall["under_replicated"]
    checks = {u["check"]: u for u in oncall["unchecked"]}
    assert checks["under_min_isr"]["severity"] == "critical"
    assert checks["under_min_isr"]["reason"] == REFUSED.reason
    assert checks["under_min_isr"]["subjects"] == ["orders-0", "orders-1", "orders-2"]
    assert checks["settings"]["subjects"] == ["orders"]  # unclean election: not told either
    assert "DescribeConfigs" in checks["under_min_isr"]["text"]


def test_verdict_of_keeps_a_seen_critical_and_a_warning_level_unknown() -> None:
    warn = [dataclasses.replace(u, severity="warn") for u in unchecked(one_replica_left(True))]
    crit = list(unchecked(one_replica_left(True)))
    assert verdict_of(True, True, crit) == ("critical", "critical")
    assert verdict_of(False, True, warn) == ("warning", "warning")
    assert verdict_of(False, False, warn) == ("unknown", "healthy")
    assert verdict_of(False, True, crit) == ("unknown", "warning")
    assert verdict_of(False, False, []) == ("healthy", "healthy")


def test_kafka_definitions_at_min_isr_without_missing_replicas_and_offline_under_min() -> None:
    replicas = {"two": {0: (1, 2)}, "gone": {0: (3,)}}
    states = {("two", 0): PartitionStateZ(1, 1, (1, 2), 3, T0 - 60_000),
              ("gone", 0): PartitionStateZ(None, 2, (3,), 3, T0 - 60_000)}
    zk = zk_view(states=states, replicas=replicas)
    snap = build_snapshot(zk, broker_view(zk, min_isr="2"), [1, 2, 3], T0)
    two, gone = snap.partition("two", 0), snap.partition("gone", 0)
    assert two is not None and gone is not None
    assert two.at_min_isr is True and two.under_replicated is False  # as --at-min-isr-partitions
    assert gone.offline and gone.under_min_isr is True and gone.unavailable
    report = assess(snap)
    assert report.at_min_isr == ("two-0",) and report.under_min_isr == ("gone-0",)


def test_a_dead_leader_is_unavailable_and_a_replica_being_added_is_not_urp() -> None:
    replicas = {"moved": {0: (1, 2, 3, 4)}}
    states = {("moved", 0): PartitionStateZ(1, 1, (1, 2, 3), 3, T0 - 60_000)}
    zk = dataclasses.replace(
        zk_view(states=states, replicas=replicas),
        reassignments={("moved", 0): Reassignment((1, 2, 3, 4), (4,), (3,))})
    snap = build_snapshot(zk, broker_view(zk), [1, 2, 3], T0)
    p = snap.partition("moved", 0)
    assert p is not None and p.moving and p.replication_factor == 3
    assert p.under_replicated is False and p.state == "moving"
    assert assess(snap).reassigning == ("moved-0",) and assess(snap).verdict == "healthy"
    assert "moving +4 -3" in partition_flags(p).plain
    # the leader's broker left the cluster's list of live brokers: Kafka's "unavailable"
    dead = dataclasses.replace(broker_view(zk), brokers={2: "b", 3: "c"})
    q = build_snapshot(zk, dead, [1, 2, 3], T0).partition("moved", 0)
    assert q is not None and q.unavailable and not q.offline


def test_unknown_reassignments_leave_a_short_isr_unjudged() -> None:
    states = {("t", 0): PartitionStateZ(1, 1, (1, 2), 3, T0 - 60_000)}
    zk = zk_view(states=states, replicas={"t": {0: (1, 2, 3)}})
    refused = Unknown("no Describe permission on the cluster: reassignments unknown")
    broker = dataclasses.replace(broker_view(zk, min_isr="1"), reassignments=refused,
                                 hidden_topics=frozenset())
    snap = build_snapshot(None, broker, [1, 2, 3], T0)  # no ZooKeeper: only the brokers tell
    p = snap.partitions()[0]
    assert p.under_replicated == refused and p.under_min_isr is False
    report = health_json(snap, None)
    assert report["verdict"] == "warning"  # a warning-level unknown cannot make it critical
    assert [u["check"] for u in report["unchecked"]] == ["under_replicated"]
    assert "URP?" in partition_flags(p).plain
    hidden = build_snapshot(None, dataclasses.replace(broker, hidden_topics=frozenset({"x"})),
                            [1, 2, 3], T0)
    assert hidden.hidden_topics == ("x",) and health_json(hidden, None)["verdict"] == "unknown"


def test_facts_survive_json_and_the_recording() -> None:
    snap = one_replica_left(True)
    data = json.loads(json.dumps(snapshot_to_json(snap)))
    row = data["topics"][0]["partitions"][0]
    assert row["min_isr"] == {"unknown": REFUSED.reason}
    assert row["under_min_isr"] == {"unknown": REFUSED.reason} and row["under_replicated"] is True
    assert data["topics"][0]["config"] == {"unknown": REFUSED.reason}
    assert data["unchecked"] and data["unchecked"][0]["check"] == "under_min_isr"
    back = snapshot_from_json(data)
    assert back.partitions()[0] == snap.partitions()[0]
    assert back.topics[0].config == REFUSED
    admin = one_replica_left(False)
    assert apply_delta(admin, snapshot_delta(admin, snap)) == dataclasses.replace(
        snap, findings=snap.findings)


def test_the_screen_says_question_mark_with_the_reason() -> None:
    snap = one_replica_left(True)
    p = snap.partitions()[0]
    assert "min-ISR?" in partition_flags(p).plain and "<min-ISR" not in partition_flags(p).plain
    summary = summarize(snap.topics[0])
    assert summary.unknown == 3
    assert "0+3? under min-ISR" in topic_summary_text(summary).plain
    panel = warnings_text(snap).plain
    assert "? under min ISR unknown for 3" in panel and REFUSED.reason in panel


def test_elr_explains_whether_an_under_min_isr_partition_can_recover_cleanly() -> None:
    from kinspect.model import EligibleLeaders
    from kinspect.model.assessment import elr_explained

    p = one_replica_left(False).partitions()[0]
    assert elr_explained(p) is None  # ZooKeeper mode: no ELR, nothing claimed
    with_elr = dataclasses.replace(p, elr=EligibleLeaders((2, 3), ()))
    assert elr_explained(with_elr) == "ISR 1 < min 2 (1); ELR 2,3 can still be elected cleanly"
    empty = dataclasses.replace(p, elr=EligibleLeaders((), (2,)))
    assert "last known ELR 2" in str(elr_explained(empty))
    assert "ELR 2,3" in partition_flags(with_elr).plain


def test_a_reassignment_starting_and_ending_are_events() -> None:
    from kinspect.model import EventKind, diff

    states = {("m", 0): PartitionStateZ(1, 1, (1, 2), 3, T0 - 60_000)}
    zk = zk_view(states=states, replicas={"m": {0: (1, 2, 3)}})
    before = build_snapshot(zk, broker_view(zk), [1, 2, 3], T0)
    moving_zk = dataclasses.replace(zk, reassignments={("m", 0): Reassignment((1, 2, 3), (3,), (2,))})
    during = build_snapshot(moving_zk, broker_view(moving_zk), [1, 2, 3], T0 + 1000)
    after = build_snapshot(zk, broker_view(zk), [1, 2, 3], T0 + 2000)
    assert [e.kind for e in diff(before, during)] == [EventKind.REASSIGNMENT_STARTED]
    assert [e.kind for e in diff(during, after)] == [EventKind.REASSIGNMENT_DONE]


def test_health_names_a_reassignment_that_did_not_grow_while_it_watched() -> None:
    from kinspect.model import ReplicaLog
    from kinspect.model.assessment import copying, stalled_between

    states = {("m", 0): PartitionStateZ(1, 1, (1, 2), 3, T0 - 60_000)}
    zk = dataclasses.replace(zk_view(states=states, replicas={"m": {0: (1, 3, 2)}}),
                             reassignments={("m", 0): Reassignment((1, 3, 2), (3,), (2,))})
    base = build_snapshot(zk, broker_view(zk), [1, 2, 3], T0)

    def with_logs(adding_end: int) -> Any:
        p = dataclasses.replace(base.partitions()[0], replica_logs=(
            ReplicaLog(1, 8000, 1, 0), ReplicaLog(3, adding_end, 1, 8000 - adding_end)))
        topic = dataclasses.replace(base.topics[0], partitions=(p,))
        return dataclasses.replace(base, topics=(topic,))

    assert copying(with_logs(1000))
    assert stalled_between(with_logs(1000), with_logs(1000)) == ("m-0",)
    assert stalled_between(with_logs(1000), with_logs(2500)) == ()  # a throttled copy grows
    assert stalled_between(with_logs(1000), with_logs(8000)) == ()  # caught up
    report = health_json(with_logs(1000), None, stalled=("m-0",))
    assert any("no progress while health watched" in p for p in report["problems"])
