"""Foundation: a real 3-broker lab that can be broken on purpose (kill, pause, partition)."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient

from kinspect.lab import dist
from tests.helpers import kinspect, node_for_broker, partition_state, shaping_in_node, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.backends("process", "docker")]
# CI runs a kill and a network cut on both backends; the docker round trips of pause and a
# slowed link (the same faults through `docker pause` and tc in the container) run in the matrix.
DOCKER_IN_MATRIX = pytest.mark.backends("process", "docker", matrix_only=("docker",))

TOPIC = "test1"


def ensure_topic(lab: dict[str, Any], zk: KazooClient) -> None:
    """Create test1 with Kafka's own TopicCommand (an independent reference tool)."""
    if zk.exists(f"/brokers/topics/{TOPIC}/partitions/0/state"):
        return
    kafka = dist.installed()
    assert kafka is not None
    cmd = kafka.tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                             lab["bootstrap"], "--create", "--if-not-exists", "--topic", TOPIC,
                             "--partitions", "1", "--replication-factor", "3")
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    wait_until(lambda: zk.exists(f"/brokers/topics/{TOPIC}/partitions/0/state"), 30, "test1")


def produce(lab: dict[str, Any], count: int) -> int:
    acked = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal acked
        acked += err is None

    producer = Producer({"bootstrap.servers": lab["bootstrap"], "acks": "all"})
    for i in range(count):
        producer.produce(TOPIC, value=f"m{i}".encode(), on_delivery=on_delivery)
    producer.flush(60)
    return acked


def full_isr(zk: KazooClient) -> dict[str, Any] | None:
    state = partition_state(zk, TOPIC, 0)
    return state if len(state["isr"]) == 3 else None


def new_leader(zk: KazooClient, old: int) -> int | None:
    leader = int(partition_state(zk, TOPIC, 0)["leader"])
    return leader if leader not in (old, -1) else None


def test_up_reports_the_status_contract(lab: dict[str, Any], lab_backend: str) -> None:
    assert lab["backend"] == lab_backend
    assert lab["network_faults"] is True
    assert lab["preset"] == "demo"
    assert [n["name"] for n in lab["nodes"]] == ["zk1", "kafka1", "kafka2", "kafka3"]
    assert {n["state"] for n in lab["nodes"]} == {"running"}
    assert [n["broker_id"] for n in lab["nodes"][1:]] == [1, 2, 3]
    assert lab["bootstrap"] == ",".join(n["address"] for n in lab["nodes"][1:])
    assert lab["groups"] == []
    assert lab["broker_config"]["zookeeper.session.timeout.ms"] == "6000"
    block = {"process": "198.18.", "docker": "198.19."}[lab_backend]
    assert all(n["address"].startswith(block) for n in lab["nodes"])
    assert all(bool(n.get("container")) == (lab_backend == "docker") for n in lab["nodes"])


def test_second_up_does_not_double(lab: dict[str, Any]) -> None:
    again = kinspect("lab", "up", "--json")
    assert "already running" in again.stderr
    pids = subprocess.run(["pgrep", "-f", f"kinspect.lab={lab['lab_id']}"],
                          capture_output=True, text=True).stdout.split()
    assert len(pids) == 4


def test_produce_and_kill_leader_elects_another(lab: dict[str, Any], zk: KazooClient) -> None:
    ensure_topic(lab, zk)
    wait_until(lambda: full_isr(zk), 60, "a full ISR")
    assert produce(lab, 20) == 20
    leader = int(partition_state(zk, TOPIC, 0)["leader"])
    victim = node_for_broker(lab, leader)
    started = time.monotonic()
    kinspect("lab", "kill", victim)
    elected = wait_until(lambda: new_leader(zk, leader), 30, "a new leader after kill")
    print(f"failover after kill -9 of {victim}: {time.monotonic() - started:.2f} s")
    assert elected != leader
    assert kinspect("lab", "status", "--json").stdout.count('"killed"') == 1
    kinspect("lab", "start", victim)
    back = wait_until(lambda: full_isr(zk), 90, f"{victim} back in the ISR")
    assert leader in back["isr"]


@DOCKER_IN_MATRIX
def test_pause_leader_elects_another_and_resume_rejoins(lab: dict[str, Any],
                                                        zk: KazooClient) -> None:
    ensure_topic(lab, zk)
    wait_until(lambda: full_isr(zk), 90, "a full ISR")
    leader = int(partition_state(zk, TOPIC, 0)["leader"])
    victim = node_for_broker(lab, leader)
    started = time.monotonic()
    kinspect("lab", "pause", victim)
    try:
        wait_until(lambda: new_leader(zk, leader), 30, "a new leader after pause")
        print(f"failover after SIGSTOP of {victim}: {time.monotonic() - started:.2f} s")
    finally:
        kinspect("lab", "resume", victim)
    back = wait_until(lambda: full_isr(zk), 90, f"{victim} back in the ISR")
    assert leader in back["isr"]


def test_isolate_leader_from_zookeeper_only(lab: dict[str, Any], zk: KazooClient) -> None:
    ensure_topic(lab, zk)
    wait_until(lambda: full_isr(zk), 90, "a full ISR")
    leader = int(partition_state(zk, TOPIC, 0)["leader"])
    victim = node_for_broker(lab, leader)
    started = time.monotonic()
    kinspect("lab", "isolate", victim, "--from", "zk")
    try:
        status = kinspect("lab", "status", "--json").stdout
        assert '"groups": [[' in status
        wait_until(lambda: new_leader(zk, leader), 30, "a new leader after isolation")
        print(f"failover after cutting {victim} from ZooKeeper: "
              f"{time.monotonic() - started:.2f} s")
    finally:
        kinspect("lab", "heal")
    back = wait_until(lambda: full_isr(zk), 120, f"{victim} back in the ISR after heal")
    assert leader in back["isr"]


@DOCKER_IN_MATRIX
def test_slow_follower_leaves_the_isr_and_rejoins_at_full_speed(lab: dict[str, Any],
                                                                zk: KazooClient) -> None:
    """A follower whose link is slower than the writes (acks=1: the leader's log runs ahead)
    leaves the ISR within replica.lag.time.max.ms plus a margin, and rejoins once unslowed."""
    ensure_topic(lab, zk)
    wait_until(lambda: full_isr(zk), 90, "a full ISR")
    state = partition_state(zk, TOPIC, 0)
    follower = next(b for b in state["isr"] if b != state["leader"])
    victim = node_for_broker(lab, follower)
    said = kinspect("lab", "slow", victim, "--rate", "256kbit", "--loss", "5",
                    "--direction", "in").stdout
    assert said.startswith(f"slowed {victim}: rate 256 kbit + 5 % loss, inbound (")
    assert "tbf" in said or "netem" in said  # and it says which
    slowed = kinspect("lab", "status", "--json").stdout
    assert f'"{victim}": {{' in slowed
    assert len(shaping_in_node(lab, victim)) >= 3  # the root and ifb qdiscs, the ingress hook
    lag_s = float(lab["broker_config"]["replica.lag.time.max.ms"]) / 1000
    producer = Producer({"bootstrap.servers": lab["bootstrap"], "acks": "1", "linger.ms": 20})
    started = time.monotonic()
    try:
        def writing_until_it_left() -> bool:
            for i in range(4000):  # ~800 KB a round: far more than 256 kbit/s carries
                producer.produce(TOPIC, value=b"s" * 200)
                if i % 500 == 0:
                    producer.poll(0)
            producer.flush(30)
            return follower not in partition_state(zk, TOPIC, 0)["isr"]

        wait_until(writing_until_it_left, lag_s + 20, f"{victim} out of the ISR")
        print(f"{victim} left the ISR {time.monotonic() - started:.1f} s after its link was "
              f"slowed (replica.lag.time.max.ms {lag_s:.0f} s)")
    finally:
        kinspect("lab", "unslow", victim)
    assert "slow links: none" in kinspect("lab", "status").stdout
    assert shaping_in_node(lab, victim) == []  # no qdisc, ifb device or loss rule left
    back = wait_until(lambda: full_isr(zk), 120, f"{victim} back in the ISR at full speed")
    assert follower in back["isr"]
