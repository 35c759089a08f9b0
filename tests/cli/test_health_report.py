"""`kinspect health --json` and `snapshot --json` are the model's one assessment, rendered: their
JSON for the shared fixtures is pinned (data/health_golden.json), so a refactor of the rules
or of the rendering that changes a verdict, a problem's words or a key shows here."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kinspect.model import (
    BrokerLogDirs,
    ClusterSnapshot,
    ConfigValue,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    LogDir,
    LogDirReplica,
    PartitionStateZ,
    Unknown,
    build_snapshot,
    snapshot_to_json,
)
from kinspect.model.facts import Fact
from tests.helpers.kraft_fixtures import kraft_snapshot, kraft_view
from tests.helpers.model_fixtures import T0, broker_view, demo_snapshot, zk_view
from tests.helpers.recorded import recorded_snapshot

GOLDEN = Path(__file__).parent / "data" / "health_golden.json"

# snapshot, ZooKeeper's error, --max-lag, stalled moves[, --max-lag-seconds]
Case = tuple[Any, ...]


def one_topic(isr: tuple[int, ...], refused: bool = False) -> ClusterSnapshot:
    """test1: RF 3, min.insync.replicas=2, this ISR; its configs refused to the user or not."""
    zk = zk_view(states={("test1", 0): PartitionStateZ(3, 2, isr, 3, T0 - 10_000)})
    broker = broker_view(zk)
    if refused:
        broker = dataclasses.replace(broker, configs={}, config_unknown={
            "test1": Unknown("no DescribeConfigs permission on the topic")})
    return build_snapshot(zk, broker, [1, 2, 3], T0)


def disks(answer: Fact[BrokerLogDirs]) -> ClusterSnapshot:
    """test1 healthy, broker 2's log dirs as `answer`, brokers 1 and 3 answering with one
    healthy dir each."""
    zk = zk_view(states={("test1", 0): PartitionStateZ(3, 2, (3, 1, 2), 3, T0 - 10_000)})
    healthy = {b: BrokerLogDirs(b, (LogDir("/data/a", None, 10_000, 4_000),), {
        ("test1", 0): LogDirReplica(b, "/data/a", 1_000, 0, False)}) for b in (1, 3)}
    broker = dataclasses.replace(broker_view(zk), log_dirs={**healthy, 2: answer})
    return build_snapshot(zk, broker, [1, 2, 3], T0)


DAY_MS = 86_400_000


def lagging_in_time() -> ClusterSnapshot:
    """test1 keeps records 7 days; billing's next record is 90 s old, batch's 6 days (near
    retention), archiver's offset is below the log start (3 records deleted unconsumed), and
    tailer's next record was not read (no Read on the topic)."""
    base = one_topic((3, 1, 2))
    config = dict(base.topics[0].config) if not isinstance(base.topics[0].config, Unknown) \
        else {}
    config.update({"retention.ms": ConfigValue(str(7 * DAY_MS), "dynamic_topic"),
                   "cleanup.policy": ConfigValue("delete", "default")})
    topic = dataclasses.replace(base.topics[0], config=tuple(sorted(config.items())))
    groups = (
        GroupInfo("billing", "stable", 2, (GroupPartition("test1", 0, 10, 100, T0 - 90_000, 0),)),
        GroupInfo("batch", "empty", 0, (GroupPartition("test1", 0, 20, 100, T0 - 6 * DAY_MS, 8),)),
        GroupInfo("archiver", "empty", 0, (GroupPartition("test1", 0, 5, 100, None, 8),)),
        GroupInfo("tailer", "stable", 1, (GroupPartition("test1", 0, 50, 100, None, 8),)))
    return dataclasses.replace(base, topics=(topic,), groups=groups)


FAILED_DISK = BrokerLogDirs(2, (LogDir("/data/a", None), LogDir("/data/b", "KafkaStorageError (56)")))


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
        "log_dir_offline": (disks(FAILED_DISK), None, None, ()),
        # a listed broker that answers nothing (killed, not yet fenced): no unmade disk check
        "log_dirs_unanswered": (disks(Unknown("broker 2 did not answer DescribeLogDirs: "
                                              "timed out")), None, None, ()),
        "lag_seconds_judged": (lagging_in_time(), None, None, (), 60),
        "lag_seconds_listed": (lagging_in_time(), None, None, ()),
        # the topic's settings refused: retention's deadline is unknown, not "forever"
        "retention_refused": (dataclasses.replace(one_topic((3, 1, 2), refused=True),
                                                  groups=lagging_in_time().groups[:1]),
                              None, None, (), 60),
        "log_dirs_refused": (disks(Unknown("no Describe permission on the cluster: log dirs "
                                           "unknown")), None, None, ()),
    }


def health_of(case: Case) -> dict[str, Any]:
    from kinspect.cli.health import health_json

    snapshot, zk_error, max_lag, stalled, *seconds = case
    return health_json(snapshot, zk_error, max_lag, stalled, *seconds)


def rendered() -> dict[str, Any]:
    """Each case's health JSON, and its snapshot's --json `unchecked` (the same assessment)."""
    return json.loads(json.dumps({
        name: {"health": health_of(case),
               "snapshot_unchecked": snapshot_to_json(case[0])["unchecked"]}
        for name, case in cases().items()}))


def test_health_and_snapshot_json_are_unchanged(update_goldens: bool) -> None:
    now = rendered()
    if update_goldens:
        GOLDEN.write_text(json.dumps(now, indent=1) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert now.keys() == golden.keys()
    for name in golden:
        assert now[name] == golden[name], name
        assert list(now[name]["health"]) == list(golden[name]["health"]), name  # key order
