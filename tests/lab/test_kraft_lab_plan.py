"""A KRaft lab's plan without starting it: names, ids, quorum, config files, presets, options."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import presets
from kinspect.lab.backend import UpOptions, plan_nodes
from kinspect.lab.dist import kafka_version
from kinspect.lab.faults import Scope
from kinspect.lab.nodes import new_cluster_id, quorum_voters, render_broker
from kinspect.lab.readiness import wait_for_kraft
from kinspect.lab.state import LabState, NodeRecord
from kinspect.lab.topology import blocked_pairs, isolate_groups, node_names, node_of
from kinspect.scenarios.platform import Platform
from kinspect.scenarios.table import side_by_side


def lab(controllers: int, brokers: int = 3) -> LabState:
    nodes = plan_nodes(brokers, lambda index, name: (f"198.18.9.{10 + index}",
                                                     9093 if name.startswith("ctl") else 9092),
                       controllers, lambda index: 9093)
    return LabState(lab_id="x", backend="process", preset="demo", network="netns",
                    kafka_version="3.9.2", mode="kraft", nodes=nodes, created_at=0,
                    broker_config=presets.effective("demo", {}, "kraft"), overrides={},
                    extra={"cluster_id": "c"})


def properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_names_and_ids_keep_brokers_apart_from_controllers() -> None:
    assert node_names(3) == ["zk1", "kafka1", "kafka2", "kafka3"]
    assert node_names(2, 3) == ["ctl1", "ctl2", "ctl3", "kafka1", "kafka2"]
    assert node_names(2, 0) == ["kafka1", "kafka2"]
    state = lab(controllers=1)
    assert [(n.name, n.role, n.kraft_id) for n in state.nodes] == [
        ("ctl1", "controller", 101), ("kafka1", "broker", 1), ("kafka2", "broker", 2),
        ("kafka3", "broker", 3)]
    assert state.zookeeper is None and state.zookeeper_address is None
    assert state.controller_addresses == {101: "198.18.9.10:9093"}
    assert [node_of(i) for i in (101, 2)] == ["ctl1", "kafka2"]


def test_a_dedicated_controller_and_a_broker_get_their_own_settings() -> None:
    state = lab(controllers=1)
    ctl = properties(render_broker(state.nodes[0], state, Path("/d")))
    broker = properties(render_broker(state.nodes[2], state, Path("/d")))
    assert ctl["process.roles"] == "controller" and ctl["node.id"] == "101"
    assert ctl["listeners"] == "CONTROLLER://198.18.9.10:9093"
    assert broker["process.roles"] == "broker" and broker["node.id"] == "2"
    assert broker["listeners"] == "PLAINTEXT://198.18.9.12:9092"
    assert broker["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    for settings in (ctl, broker):
        assert settings["controller.quorum.voters"] == "101@198.18.9.10:9093"
        assert not any(key.startswith("zookeeper.") for key in settings)
    assert broker["broker.session.timeout.ms"] == "6000"  # the 2018 ZooKeeper session's 6 s
    assert ctl["broker.session.timeout.ms"] == "6000"  # the controller is who times it out


def test_combined_mode_makes_every_broker_a_voter() -> None:
    state = lab(controllers=0)
    assert quorum_voters(state) == ("1@198.18.9.10:9093,2@198.18.9.11:9093,"
                                    "3@198.18.9.12:9093")
    first = properties(render_broker(state.nodes[0], state, Path("/d")))
    assert first["process.roles"] == "broker,controller"
    assert first["listeners"] == "PLAINTEXT://198.18.9.10:9092,CONTROLLER://198.18.9.10:9093"
    assert first["advertised.listeners"] == "PLAINTEXT://198.18.9.10:9092"


def test_isolating_from_the_quorum_is_isolating_from_zookeeper_s_stand_in() -> None:
    names = node_names(3, 1)
    groups = isolate_groups("kafka2", names, Scope.parse("controllers"))
    assert blocked_pairs(names, groups) == {frozenset(("kafka2", "ctl1"))}
    assert Scope.ZK.words_in(kraft=True) == "from the controller quorum"
    with pytest.raises(KinspectError, match="combined mode"):
        isolate_groups("kafka2", node_names(3, 0), "zk")


def test_options_refuse_what_a_mode_does_not_have() -> None:
    UpOptions(mode="kraft", controllers=0).validate()
    assert UpOptions(mode="kraft").dedicated_controllers == 1
    assert UpOptions().dedicated_controllers is None
    bad = [(UpOptions(controllers=1), "--mode kraft"),
           (UpOptions(mode="kraft", controllers=7), "between 0 and 5"),
           (UpOptions(mode="raft"), "--mode must be"),
           (UpOptions(kafka="4.1.1"), "no ZooKeeper mode"),
           (UpOptions(mode="kraft", kafka="latest"), "not a Kafka release version"),
           (UpOptions(mode="kraft", overrides={"zookeeper.session.timeout.ms": "1"}),
            "no ZooKeeper")]
    for options, message in bad:
        with pytest.raises(KinspectError, match=message):
            options.validate()


def test_a_cluster_id_is_what_kafka_storage_random_uuid_gives() -> None:
    ids = {new_cluster_id() for _ in range(20)}
    assert len(ids) == 20 and all(len(i) == 22 and "=" not in i for i in ids)


def test_state_files_from_before_kraft_still_load() -> None:
    record = NodeRecord(name="kafka1", role="broker", host="h", port=1, broker_id=1)
    assert record.controller_address is None and record.kraft_id == 1


def test_the_matrix_puts_the_modes_side_by_side() -> None:
    rows = [{"scenario": "s1", "status": "ran", "mode": "zookeeper", "acked_lost": 10,
             "failover_ms": 7000, "unavailable_ms": None, "expectation_met": True},
            {"scenario": "s1", "status": "ran", "mode": "kraft", "acked_lost": 0,
             "failover_ms": 2500, "unavailable_ms": 1000, "expectation_met": False,
             "expectation_failed": ["acked_lost >= 1000"]}]
    pinned = kafka_version()
    table = side_by_side(rows, (Platform("zookeeper", pinned), Platform("kraft", pinned)),
                         markdown=True).splitlines()
    assert table[0].startswith(f"| scenario | ZooKeeper {pinned}: acked lost |")
    assert f"KRaft {pinned}: failover" in table[0]
    assert table[2] == ("| s1 | 10 | 7.0 s | - | yes | 0 | 2.5 s | 1.0 s | "
                        "NO: acked_lost >= 1000 |")


def test_a_cluster_id_never_starts_with_a_dash() -> None:
    """kafka-storage format -t -Xyz… fails ('expected one argument'); a 1-in-64 lab did."""
    from kinspect.lab.nodes import new_cluster_id

    ids = [new_cluster_id() for _ in range(2000)]
    assert not any(i.startswith("-") for i in ids) and all(len(i) == 22 for i in ids)


def test_brokers_nobody_listed_are_not_said_to_be_out() -> None:
    """Nine JVMs starting on two cores answered no Metadata request within its 2 s: the wait
    had said all nine "did not join", while the controller had five of them registered."""
    with socket.socket() as closed:  # a port nobody listens on, here
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    nodes = plan_nodes(2, lambda index, name: ("127.0.0.1", port), 1, lambda index: port)
    state = LabState(lab_id="x", backend="process", preset="demo", network="loopback",
                     kafka_version="3.9.2", mode="kraft", nodes=nodes, created_at=0,
                     broker_config={}, overrides={}, extra={"cluster_id": "c"})
    with pytest.raises(KinspectError) as refused:
        wait_for_kraft(state, time.monotonic() + 2.5, lambda: [], lambda line: None)
    message = str(refused.value)
    assert message.startswith("no broker answered a Metadata request in time (")
    assert "did not join" not in message
    assert message.endswith("lab up --timeout SECONDS waits longer)")
