"""When a partition's leader and ISR were last written, as ZooKeeper says it: kinspect's
`state_changed_at` against zookeeper-shell's `stat` of the same state znode (Kafka's own
ZooKeeperMainWithTlsSupportForKafka), at rest and after the leader is killed."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from kinspect.lab import dist
from tests.helpers import kinspect, node_for_broker, wait_until
from tests.helpers.oracles import TOPIC_COMMAND, kafka_tool

pytestmark = [pytest.mark.lab, pytest.mark.backends("process")]

TOPIC = "changed"
STATE = f"/brokers/topics/{TOPIC}/partitions/0/state"
ZOOKEEPER_SHELL = "org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka"
MTIME = re.compile(r"^mtime = (.+)$", re.MULTILINE)


def mtime_by_zookeeper_shell(zookeeper: str) -> int:
    """The state znode's mtime (s) as zookeeper-shell prints it (Java's Date, in UTC here)."""
    out = kafka_tool(ZOOKEEPER_SHELL, "-server", zookeeper, "stat", STATE)
    said = MTIME.search(out)
    assert said is not None, out
    moment = datetime.strptime(said.group(1).replace("UTC", "+0000"), "%a %b %d %H:%M:%S %z %Y")
    return int(moment.astimezone(UTC).timestamp())


def partition() -> dict[str, Any]:
    data = json.loads(kinspect("snapshot", "--json", "--topic", TOPIC).stdout)
    topic = next(t for t in data["topics"] if t["name"] == TOPIC)
    return dict(topic["partitions"][0])


def test_state_changed_at_is_the_state_znodes_mtime(lab: dict[str, Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # the shell prints the znode's time in the JVM's zone
    assert dist.installed() is not None
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", lab["bootstrap"], "--create",
               "--if-not-exists", "--topic", TOPIC, "--partitions", "1",
               "--replication-factor", "3")
    at_rest = wait_until(lambda: partition() if len(partition()["isr"]) == 3 else None, 60,
                         "the topic with its full ISR")
    assert at_rest["state_changed_at"] // 1000 == mtime_by_zookeeper_shell(lab["zookeeper"])

    # The leader dies: the controller elects another and writes the state again.
    victim = node_for_broker(lab, at_rest["leader"])
    kinspect("lab", "kill", victim)
    try:
        moved = wait_until(lambda: partition() if partition()["leader"] not in (
            at_rest["leader"], None) else None, 60, "a new leader")
        assert moved["state_changed_at"] > at_rest["state_changed_at"]

        def agree() -> int | None:  # the ISR may be written again a moment after the election
            ours = partition()["state_changed_at"] // 1000
            return ours if ours == mtime_by_zookeeper_shell(lab["zookeeper"]) else None

        wait_until(agree, 30, "kinspect and zookeeper-shell to name the same write")
    finally:
        kinspect("lab", "start", victim)
