"""Blockade partition semantics, without a lab."""

from __future__ import annotations

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import presets
from kinspect.lab.topology import CLIENTS, blocked_pairs, isolate_groups, parse_groups

NODES = ["zk1", "kafka1", "kafka2", "kafka3"]


def pair(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def test_single_node_group_isolates_it_from_everyone() -> None:
    groups = parse_groups(["kafka2"], NODES)
    assert groups == [["kafka2"], ["zk1", "kafka1", "kafka3"]]
    assert blocked_pairs(NODES, groups) == {pair("kafka2", n) for n in ("zk1", "kafka1", "kafka3")}


def test_overlapping_groups_cut_a_broker_from_zookeeper_only() -> None:
    groups = parse_groups(["kafka1,kafka2,kafka3", "kafka1,kafka3,zk1"], NODES)
    assert blocked_pairs(NODES, groups) == {pair("kafka2", "zk1")}
    assert isolate_groups("kafka2", NODES, "zk") == [["kafka2", "kafka1", "kafka3"],
                                                     ["zk1", "kafka1", "kafka3"]]


def test_clients_reach_everyone_unless_placed() -> None:
    groups = parse_groups(["kafka2"], NODES)
    assert all(CLIENTS not in p for p in blocked_pairs(NODES, groups))
    placed = blocked_pairs(NODES, groups, clients_with="kafka1")
    assert pair(CLIENTS, "kafka2") in placed and pair(CLIENTS, "kafka1") not in placed


def test_isolate_from_brokers_keeps_zookeeper() -> None:
    groups = isolate_groups("kafka1", NODES, "brokers")
    assert blocked_pairs(NODES, groups) == {pair("kafka1", "kafka2"), pair("kafka1", "kafka3")}


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["kafka1,kafka1"], "names a node twice"),
        (["kafka9"], "unknown node"),
        (["kafka1,"], "empty node name"),
        (["kafka1", "kafka1"], "given twice"),
        (["zk1,kafka1,kafka2,kafka3"], "nothing would be cut"),
        ([], "at least one group"),
    ],
)
def test_bad_groups(specs: list[str], message: str) -> None:
    with pytest.raises(KinspectError, match=message):
        parse_groups(specs, NODES)


def test_presets_and_overrides() -> None:
    demo = presets.effective("demo", presets.parse_overrides(["min.insync.replicas=1"]))
    assert demo["zookeeper.session.timeout.ms"] == "6000"
    assert demo["min.insync.replicas"] == "1"
    assert presets.effective("modern", {})["replica.lag.time.max.ms"] == "30000"
    with pytest.raises(KinspectError):
        presets.parse_overrides(["novalue"])
    with pytest.raises(KinspectError):
        presets.effective("ancient", {})
