"""A KRaft lab on both backends: the status contract, the quorum as Kafka's own tool tells it,
and the faults the ZooKeeper lab has (kill, pause, isolation from the controller quorum, slow
links), each checked against something that is not kinspect."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from kinspect.clients.decisions import KRaftDecisions
from kinspect.clients.quorum import describe_quorum
from kinspect.lab import dist
from tests.helpers import kinspect, shaping_in_node, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.resets_lab, pytest.mark.backends("process", "docker")]

TOPIC = "kraft1"
# CI runs these faults on the process lab's KRaft quorum and brings a docker KRaft lab up once
# (the first test); the docker round trip of each fault runs in `make matrix`.
DOCKER_IN_MATRIX = pytest.mark.backends("process", "docker", matrix_only=("docker",))


def kafka_tool(main_class: str, *args: str) -> str:
    kafka = dist.installed()
    assert kafka is not None
    result = subprocess.run(kafka.tool_command(main_class, *args), capture_output=True,
                            text=True, timeout=120, check=True)
    return result.stdout


def quorum_status(lab: dict[str, Any]) -> dict[str, str]:
    """Kafka's own kafka-metadata-quorum, asked of the controllers: the independent oracle."""
    controllers = ",".join(lab["controllers"].values())
    text = kafka_tool("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller",
                      controllers, "describe", "--status")
    return dict(re.findall(r"^(\w+):\s+(.*)$", text, re.MULTILINE))


def unfenced(lab: dict[str, Any]) -> set[int]:
    """The brokers KRaft metadata lists: only unfenced ones are."""
    admin = AdminClient({"bootstrap.servers": lab["bootstrap"], "socket.timeout.ms": 3000})
    return set(admin.list_topics(timeout=10).brokers)


def decisions(lab: dict[str, Any]) -> KRaftDecisions:
    brokers = {n["broker_id"]: n["address"] for n in lab["nodes"] if n["role"] == "broker"}
    return KRaftDecisions(brokers, {int(i): a for i, a in lab["controllers"].items()})


def ensure_topic(lab: dict[str, Any]) -> None:
    kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", lab["bootstrap"],
               "--create", "--if-not-exists", "--topic", TOPIC, "--partitions", "1",
               "--replication-factor", "3")
    found = decisions(lab)
    try:
        wait_until(lambda: (s := found.partition(TOPIC, 0)) is not None and len(s.isr) == 3,
                   60, f"{TOPIC} with a full ISR")
    finally:
        found.close()


def described_leader(lab: dict[str, Any]) -> int:
    """The leader as Kafka's own kafka-topics --describe says."""
    text = kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                      lab["bootstrap"], "--describe", "--topic", TOPIC)
    found = re.search(r"Partition: 0\s+Leader: (-?\d+)", text)
    assert found, text
    return int(found[1])


def test_up_in_kraft_mode_reports_its_quorum(kraft_lab: dict[str, Any], lab_backend: str) -> None:
    lab = kraft_lab
    assert (lab["backend"], lab["mode"], lab["zookeeper"]) == (lab_backend, "kraft", None)
    roles = {n["name"]: (n["role"], n.get("node_id") or n.get("broker_id")) for n in lab["nodes"]}
    assert roles == {"ctl1": ("controller", 101), "kafka1": ("broker", 1),
                     "kafka2": ("broker", 2), "kafka3": ("broker", 3)}
    assert "zookeeper.session.timeout.ms" not in lab["broker_config"]
    assert lab["broker_config"]["broker.session.timeout.ms"] == "6000"
    oracle = quorum_status(lab)
    ours = describe_quorum(lab["controllers"].values())
    assert ours is not None
    assert (ours.leader_id, ours.leader_epoch) == (int(oracle["LeaderId"]),
                                                    int(oracle["LeaderEpoch"]))
    assert ours.leader_id == 101 and [v.replica_id for v in ours.voters] == [101]
    assert sorted(o.replica_id for o in ours.observers) == [1, 2, 3]
    assert unfenced(lab) == {1, 2, 3}
    text = kinspect("lab", "status").stdout
    assert f"ctl1 leads (node 101, epoch {oracle['LeaderEpoch']})" in text


def controller_says(line: str) -> bool:
    """ctl1's own logs hold the line (a docker lab's are copied out first)."""
    from kinspect.lab import open_backend

    logs = open_backend().broker_log_dir("ctl1")
    return logs is not None and any(line in path.read_text(errors="replace")
                                    for path in logs.glob("*.log"))


def brokers_seen_by(lab: dict[str, Any], node: str) -> set[int]:
    """The brokers one broker's own metadata lists (KRaft lists only unfenced ones)."""
    from kinspect.clients.wire import ask_metadata

    address = next(n["address"] for n in lab["nodes"] if n["name"] == node)
    return set(ask_metadata(address).brokers)


@DOCKER_IN_MATRIX
def test_isolating_a_broker_from_the_quorum_fences_it(kraft_lab: dict[str, Any]) -> None:
    """Cut from ctl1 only (as a broker cut from ZooKeeper), kafka2 misses its heartbeats: the
    controller fences it within the 6 s session (its own log says so, and the other brokers
    stop listing it), and unfences it after the heal. kafka2 itself, cut off, still lists
    itself: its metadata is as stale as a zombie leader's."""
    lab = kraft_lab
    said = kinspect("lab", "isolate", "kafka2", "--from", "controllers").stdout
    assert "isolated kafka2 from the controller quorum" in said
    wait_until(lambda: brokers_seen_by(lab, "kafka1") == {1, 3}, 30, "kafka2 fenced")
    assert controller_says("Fencing broker 2 because its session has timed out")
    assert 2 in brokers_seen_by(lab, "kafka2")
    kinspect("lab", "heal")
    wait_until(lambda: unfenced(lab) == {1, 2, 3} == brokers_seen_by(lab, "kafka1"), 60,
               "kafka2 unfenced again")


@DOCKER_IN_MATRIX
def test_killing_the_leader_elects_another_as_kafkas_tools_see_it(
        kraft_lab: dict[str, Any]) -> None:
    lab = kraft_lab
    ensure_topic(lab)
    old = described_leader(lab)
    kinspect("lab", "kill", f"kafka{old}")
    wait_until(lambda: described_leader(lab) not in (old, -1), 30, "a new leader")
    found = decisions(lab)
    try:
        assert found.partition(TOPIC, 0).leader == described_leader(lab)  # type: ignore[union-attr]
        assert found.controller() == 101
    finally:
        found.close()
    kinspect("lab", "start", f"kafka{old}")
    wait_until(lambda: unfenced(lab) == {1, 2, 3}, 90, f"kafka{old} back")


@DOCKER_IN_MATRIX
def test_a_paused_controller_leaves_no_quorum_leader_until_resumed(
        kraft_lab: dict[str, Any]) -> None:
    lab = kraft_lab
    kinspect("lab", "pause", "ctl1")
    try:
        assert describe_quorum(lab["controllers"].values(), timeout_s=1.0) is None
    finally:
        kinspect("lab", "resume", "ctl1")
    wait_until(lambda: (a := describe_quorum(lab["controllers"].values())) is not None
               and a.leader_id == 101, 30, "ctl1 leading again")


@DOCKER_IN_MATRIX
def test_a_controller_link_can_be_slowed_and_restored(kraft_lab: dict[str, Any]) -> None:
    """The shaping is really in ctl1's namespace (read with tc, ip and iptables), and gone
    after unslow: not only what the state file says."""
    said = kinspect("lab", "slow", "ctl1", "--rate", "1mbit").stdout
    assert "slowed ctl1" in said
    assert "ctl1" in kinspect_json("lab", "status")["slowed"]
    assert shaping_in_node(kraft_lab, "ctl1")  # the rate limit's qdisc at least
    kinspect("lab", "unslow")
    assert kinspect_json("lab", "status")["slowed"] == {}
    assert shaping_in_node(kraft_lab, "ctl1") == []


def kinspect_json(*args: str) -> dict[str, Any]:
    import json

    return dict(json.loads(kinspect(*args, "--json").stdout))
