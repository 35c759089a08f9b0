"""The KRaft-aware observer on a real KRaft lab (ctl1 = node 101, kafka1..3), checked against
what is not kinspect: Kafka's own kafka-metadata-quorum and kafka-topics, and librdkafka's
ListOffsets for the leader epoch."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kinspect.clients.quorum import ask_quorum
from kinspect.clients.wire import BrokerLink
from kinspect.lab import dist
from kinspect.model import ClusterSnapshot, Event, EventKind
from kinspect.sources.observer import Observer
from tests.helpers import kinspect, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.resets_lab, pytest.mark.backends("process")]

TOPIC = "kraft_observed"


def kafka_tool(main_class: str, *args: str) -> str:
    kafka = dist.installed()
    assert kafka is not None
    return subprocess.run(kafka.tool_command(main_class, *args), capture_output=True, text=True,
                          timeout=120, check=True).stdout


def controllers(lab: dict[str, Any]) -> dict[int, str]:
    return {int(node): address for node, address in lab["controllers"].items()}


def brokers(lab: dict[str, Any]) -> dict[int, str]:
    return {n["broker_id"]: n["address"] for n in lab["nodes"] if n["role"] == "broker"}


def quorum_status(lab: dict[str, Any]) -> dict[str, str]:
    """kafka-metadata-quorum describe --status, asked of the controllers."""
    text = kafka_tool("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller",
                      ",".join(controllers(lab).values()), "describe", "--status")
    return dict(re.findall(r"^(\w+):\s+(.*)$", text, re.MULTILINE))


def described(lab: dict[str, Any]) -> tuple[int, tuple[int, ...]]:
    """Leader and ISR of TOPIC-0 as kafka-topics --describe says."""
    text = kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                      lab["bootstrap"], "--describe", "--topic", TOPIC)
    found = re.search(r"Partition: 0\s+Leader: (-?\d+)\s+Replicas: [\d,]+\s+Isr: ([\d,]+)", text)
    assert found, text
    return int(found[1]), tuple(int(b) for b in found[2].split(","))


def librdkafka_epoch(lab: dict[str, Any]) -> int:
    admin = AdminClient({"bootstrap.servers": lab["bootstrap"]})
    asked = admin.list_offsets({TopicPartition(TOPIC, 0): OffsetSpec.latest()},
                               request_timeout=10)
    return int(next(iter(asked.values())).result(timeout=15).leader_epoch)


def unfenced(lab: dict[str, Any]) -> set[int]:
    admin = AdminClient({"bootstrap.servers": lab["bootstrap"], "socket.timeout.ms": 3000})
    return set(admin.list_topics(timeout=10).brokers)


def ensure_topic(lab: dict[str, Any]) -> None:
    kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", lab["bootstrap"],
               "--create", "--if-not-exists", "--topic", TOPIC, "--partitions", "1",
               "--replication-factor", "3")
    wait_until(lambda: len(described(lab)[1]) == 3, 60, f"{TOPIC} with a full ISR")


def test_describe_quorum_agrees_with_kafkas_own_tool(kraft_lab: dict[str, Any]) -> None:
    """Asked of the controller directly and of each broker (which forwards it), on a kept
    connection: the leader and epoch kafka-metadata-quorum reports, in milliseconds."""
    oracle = quorum_status(kraft_lab)
    timings = {}
    for address in [*controllers(kraft_lab).values(), *brokers(kraft_lab).values()]:
        link = BrokerLink(address)
        try:
            ask_quorum(link, 5.0)  # connect, ApiVersions, warm the path
            started = time.perf_counter()
            answer = ask_quorum(link, 5.0)
            timings[address] = time.perf_counter() - started
        finally:
            link.close()
        assert (answer.leader_id, answer.leader_epoch) == (int(oracle["LeaderId"]),
                                                           int(oracle["LeaderEpoch"]))
        assert answer.high_watermark >= int(oracle["HighWatermark"])
        assert [v.replica_id for v in answer.voters] == [101]
        assert sorted(o.replica_id for o in answer.observers) == [1, 2, 3]
        assert all(o.last_fetch_ms is not None for o in answer.observers)  # v1 timestamps
    print("DescribeQuorum round trips (ms):",
          {a: round(t * 1000, 2) for a, t in timings.items()})
    assert max(timings.values()) < 0.5


def test_snapshot_json_names_the_quorum_leader_and_the_newest_decision(
        kraft_lab: dict[str, Any]) -> None:
    lab = kraft_lab
    ensure_topic(lab)
    oracle = quorum_status(lab)
    data = json.loads(kinspect("snapshot", "--json").stdout)
    assert data["mode"] == "kraft" and data["zookeeper"] is None
    assert (data["controller"]["id"], data["controller"]["epoch"]) == (
        int(oracle["LeaderId"]), int(oracle["LeaderEpoch"]))
    assert data["controller"]["broker_reported_id"] in {1, 2, 3}  # a broker, not the controller
    quorum = data["quorum"]
    assert [v["id"] for v in quorum["voters"]] == [101]
    assert sorted(o["id"] for o in quorum["observers"]) == [1, 2, 3]
    assert all(m["lag"] is not None and m["lag"] >= 0
               for m in quorum["voters"] + quorum["observers"])
    assert [(c["id"], c["state"]) for c in quorum["controllers"]] == [(101, "leader")]
    assert [(b["id"], b["fenced"]) for b in data["brokers"]] == [(1, False), (2, False), (3, False)]
    assert not any("ZooKeeper" in line for line in data["limitations"])
    part = next(p for t in data["topics"] if t["name"] == TOPIC for p in t["partitions"])
    leader, isr = described(lab)
    assert (part["leader"], tuple(sorted(part["isr"]))) == (leader, tuple(sorted(isr)))
    assert part["leader_epoch"] == librdkafka_epoch(lab)
    # KRaft's metadata keeps no time of a change: unknown, with why, never a made-up time
    assert part["state_changed_at"] == {
        "unknown": "KRaft's metadata keeps no time of a partition's change"}


@contextmanager
def observing(lab: dict[str, Any]) -> Iterator[tuple[Observer, list[Event]]]:
    observer = Observer(lab["bootstrap"], None, expected_brokers=brokers(lab),
                        controllers=controllers(lab))
    events: list[Event] = []
    observer.subscribe(lambda _s, new: events.extend(new))
    observer.start()
    try:
        wait_until(lambda: observer.latest is not None and observer.latest.kraft, 30,
                   "a KRaft snapshot")
        yield observer, events
    finally:
        observer.stop()


def latest(observer: Observer) -> ClusterSnapshot:
    assert observer.latest is not None
    return observer.latest


def test_fencing_and_a_new_quorum_leader_are_seen_live(kraft_lab: dict[str, Any]) -> None:
    """kafka3 killed: fenced once its 6 s session runs out (the brokers' metadata agrees), and
    unfenced when it is back. ctl1 killed: no quorum leader; restarted, it leads again at a
    higher epoch, and that is a quorum leader change."""
    lab = kraft_lab
    with observing(lab) as (observer, events):
        epoch = latest(observer).controller.epoch
        assert latest(observer).controller.id == 101 and epoch is not None
        kinspect("lab", "kill", "kafka3")
        try:
            wait_until(lambda: any(e.kind == EventKind.BROKER_FENCED and e.broker == 3
                                   for e in events), 40, "kafka3 fenced")
            assert unfenced(lab) == {1, 2}
            assert {b.id: b.fenced for b in latest(observer).brokers}[3] is True
        finally:
            kinspect("lab", "start", "kafka3")
        wait_until(lambda: any(e.kind == EventKind.BROKER_UNFENCED and e.broker == 3
                               for e in events), 90, "kafka3 unfenced")

        kinspect("lab", "kill", "ctl1")
        try:
            gone = wait_until(lambda: (s := latest(observer)).controller.id is None and s, 20,
                              "no quorum leader")
            assert gone.quorum is None  # its only voter is dead: nobody answers
            assert "no_controller" in {w.kind for w in gone.findings}
            assert any(line.startswith("KRaft quorum: ") for line in gone.limitations)
        finally:
            kinspect("lab", "start", "ctl1")
        back = wait_until(lambda: (s := latest(observer)).controller.id == 101
                          and (s.controller.epoch or 0) > epoch and s, 90, "ctl1 leading again")
        assert back.controller.epoch == int(quorum_status(lab)["LeaderEpoch"])
        changes = [e for e in events if e.kind == EventKind.CONTROLLER_CHANGED]
        # one line for the move: the vacancy is its own line only when it outlasted the grace
        # (model/controller_moves.py), and then the arrival says where from
        vacancy = any(e.fields.get("new") is None for e in changes)
        epoch_now = back.controller.epoch
        assert changes[-1].detail == (f"quorum leader none → 101 (epoch {epoch_now})" if vacancy
                                      else f"quorum leader 101 re-elected (epoch {epoch_now})")
