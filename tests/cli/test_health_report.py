"""`kinspect health --json` and `snapshot --json` are the model's one assessment, rendered: their
JSON for the shared fixtures is pinned (data/health_golden.json), so a refactor of the rules
or of the rendering that changes a verdict, a problem's words or a key shows here."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kinspect.model import (
    ClusterSnapshot,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    PartitionStateZ,
    Unknown,
    build_snapshot,
    snapshot_to_json,
)
from tests.helpers.kraft_fixtures import kraft_snapshot, kraft_view
from tests.helpers.model_fixtures import T0, broker_view, demo_snapshot, zk_view
from tests.helpers.recorded import recorded_snapshot

GOLDEN = Path(__file__).parent / "data" / "health_golden.json"

Case = tuple[ClusterSnapshot, str | None, int | None, tuple[str, ...]]


def one_topic(isr: tuple[int, ...], refused: bool = False) -> ClusterSnapshot:
    """test1: RF 3, min.insync.replicas=2, this ISR; its configs refused to the user or not."""
    zk = zk_view(states={("test1", 0): PartitionStateZ(3, 2, isr, 3, T0 - 10_000)})
    broker = broker_view(zk)
    if refused:
        broker = dataclasses.replace(broker, configs={}, config_unknown={
            "test1": Unknown("no DescribeConfigs permission on the topic")})
    return build_snapshot(zk, broker, [1, 2, 3], T0)


def cases() -> dict[str, Case]:
    demo = demo_snapshot()
    mismatch = dataclasses.replace(demo, controller=ControllerInfo(1, 3, 2))
    no_admin = dataclasses.replace(demo, admin_state="error", admin_error="timed out")
    gone = dataclasses.replace(demo, admin_state="error", admin_error="timed out",
                               zookeeper_state=None)
    lagging = dataclasses.replace(
        one_topic((3, 1, 2)), groups_unknown=(("secret", Unknown("no Describe on the group")),),
        groups=(GroupInfo("billing", "Stable", 2, (GroupPartition("test1", 0, 10, 100),)),))
    return {
        "lag_listed": (lagging, None, None, ()),
        "lag_judged": (lagging, None, 50, ()),
        "healthy": (one_topic((3, 1, 2)), None, None, ()),
        "at_min_isr": (one_topic((3, 1)), None, None, ()),
        "under_min_isr": (one_topic((3,)), None, None, ()),
        "oncall_unknown": (one_topic((3,), refused=True), None, None, ()),
        "oncall_healthy_seen": (one_topic((3, 1, 2), refused=True), None, None, ()),
        "demo": (demo, None, None, ()),
        "isolated": (demo_snapshot(isolated_leader=True), None, None, ()),
        "no_zookeeper": (demo, "cannot reach ZooKeeper at zk1:2181", None, ()),
        "unreachable": (gone, "cannot reach ZooKeeper", None, ()),
        "unreachable_no_zk": (gone, None, None, ()),
        "no_admin": (no_admin, None, None, ()),
        "controller_mismatch": (mismatch, None, None, ()),
        "max_lag": (recorded_snapshot(), None, 0, ()),
        "watched_stall": (demo, None, None, ("orders-1",)),
        "kraft": (kraft_snapshot(), None, None, ()),
        "kraft_no_quorum": (kraft_snapshot(kraft_view(error="no answer")), None, None, ()),
        "kraft_fenced": (kraft_snapshot(kraft_view(listed=(1, 2))), None, 5, ()),
        "recorded": (recorded_snapshot(), None, None, ()),
    }


def health_of(case: Case) -> dict[str, Any]:
    from kinspect.cli.health import health_json

    snapshot, zk_error, max_lag, stalled = case
    return health_json(snapshot, zk_error, max_lag, stalled)


def rendered() -> dict[str, Any]:
    """Each case's health JSON, and its snapshot's --json `unchecked` (the same assessment)."""
    return json.loads(json.dumps({
        name: {"health": health_of(case),
               "snapshot_unchecked": snapshot_to_json(case[0])["unchecked"]}
        for name, case in cases().items()}))


def test_health_and_snapshot_json_are_unchanged() -> None:
    golden = json.loads(GOLDEN.read_text())
    now = rendered()
    assert now.keys() == golden.keys()
    for name in golden:
        assert now[name] == golden[name], name
        assert list(now[name]["health"]) == list(golden[name]["health"]), name  # key order
