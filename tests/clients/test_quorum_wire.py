"""DescribeQuorum as kinspect declares it with kafka-python's types, and the quorum poll, with
no broker: answers are encoded with the declared classes and decoded back, as a broker's bytes
would be."""

from __future__ import annotations

import io
import socket
import time
from typing import Any

import pytest
from kafka.protocol.api import RequestHeaderV2
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.types import UnsignedVarInt32

from kinspect.clients.quorum import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    NotKRaft,
    QuorumAnswer,
    QuorumError,
    QuorumProbe,
    QuorumReplica,
    ask_quorum,
    describe_quorum,
    quorum_from,
)
from kinspect.clients.wire import BrokerClaim, claims_from

NOW = 1_795_000_000_000


def quorum_response(leader: int = 101, epoch: int = 7, code: int = 0, partition_code: int = 0,
                version: int = 1) -> Any:
    def replica(node: int, end: int, fetch: int, caught_up: int) -> tuple[Any, ...]:
        if version >= 2:
            return (node, f"{node:032x}", end, fetch, caught_up, {})
        return (node, end, fetch, caught_up, {}) if version else (node, end, {})

    voters = [replica(101, 1240, NOW, NOW), replica(102, 1228, NOW - 30, NOW - 500),
              replica(103, -1, -1, -1)]
    observers = [replica(1, 1240, NOW - 10, NOW - 10)]
    if version >= 2:
        nodes = [(n, [("CONTROLLER", f"198.18.1.{n}", 9093, {})], {}) for n in (101, 102, 103)]
        return DescribeQuorumResponse[2](
            error_code=code, error_message=None,
            topics=[("__cluster_metadata", [(0, partition_code, None, leader, epoch, 1234, voters,
                                              observers, {})], {})],
            nodes=nodes, tags={})
    return DescribeQuorumResponse[version](
        error_code=code,
        topics=[("__cluster_metadata", [
            (0, partition_code, leader, epoch, 1234, voters, observers, {})], {})],
        tags={})


def decoded(response: Any, version: int) -> Any:
    """Through the bytes, as kafka-python's parser would hand it over."""
    return DescribeQuorumResponse[version].decode(io.BytesIO(response.encode()))


def test_a_v1_answer_decodes_to_the_quorum() -> None:
    answer = quorum_from(decoded(quorum_response(), 1), "198.18.1.101:9093")
    assert answer == QuorumAnswer(
        leader_id=101, leader_epoch=7, high_watermark=1234,
        voters=(QuorumReplica(101, 1240, NOW, NOW), QuorumReplica(102, 1228, NOW - 30, NOW - 500),
                QuorumReplica(103, -1, None, None)),
        observers=(QuorumReplica(1, 1240, NOW - 10, NOW - 10),), asked="198.18.1.101:9093")


def test_a_v2_answer_names_each_voters_endpoints() -> None:
    """KIP-853: the voters' listeners come with the answer (ports above 32767 too: unsigned)."""
    answer = quorum_from(decoded(quorum_response(version=2), 2), "b:9092")
    v1 = quorum_from(decoded(quorum_response(), 1), "b:9092")
    assert (answer.leader_id, answer.voters, answer.observers) == \
        (v1.leader_id, v1.voters, v1.observers)
    assert answer.endpoints == {n: (f"CONTROLLER://198.18.1.{n}:9093",) for n in (101, 102, 103)}
    high = DescribeQuorumResponse[2](error_code=0, error_message=None, topics=[],
                                     nodes=[(7, [("C", "h", 40000, {})], {})], tags={})
    assert decoded(high, 2).nodes[0][1][0][2] == 40000


def test_a_v0_answer_has_no_timestamps_and_no_leader_is_none() -> None:
    response = DescribeQuorumResponse[0](
        error_code=0, topics=[("__cluster_metadata", [
            (0, 0, -1, 3, 50, [(101, 50, {})], [], {})], {})], tags={})
    answer = quorum_from(decoded(response, 0), "x:1")
    assert (answer.leader_id, answer.leader_epoch, answer.high_watermark) == (None, 3, 50)
    assert answer.voters == (QuorumReplica(101, 50, None, None),)
    assert answer.observers == ()


def test_v1_is_not_v0_on_the_wire() -> None:
    """v1 carries two more int64 per replica: 4 replicas x 16 bytes."""
    assert len(quorum_response().encode()) - len(quorum_response(version=0).encode()) == 4 * 16


@pytest.mark.parametrize(("code", "partition_code", "expected"),
                         [(29, 0, 29), (0, 6, 6)])  # CLUSTER_AUTHORIZATION_FAILED, NOT_LEADER
def test_errors_are_raised_with_their_code(code: int, partition_code: int, expected: int) -> None:
    with pytest.raises(QuorumError) as raised:
        quorum_from(decoded(quorum_response(code=code, partition_code=partition_code), 1), "x:1")
    assert raised.value.code == expected


def test_the_request_is_flexible_and_asks_for_the_metadata_partition() -> None:
    request = DescribeQuorumRequest[1](topics=[("__cluster_metadata", [(0, {})], {})], tags={})
    assert (request.API_KEY, request.API_VERSION) == (55, 1)
    assert isinstance(request.build_header(1, "kinspect"), RequestHeaderV2)  # header v2
    wire = io.BytesIO(request.encode())
    assert UnsignedVarInt32.decode(wire) == 2  # a compact array of one topic
    back = DescribeQuorumRequest[1].decode(io.BytesIO(request.encode()))
    assert back.topics == [("__cluster_metadata", [(0, {})], {})]
    assert DescribeQuorumRequest[1].RESPONSE_TYPE is DescribeQuorumResponse[1]


class FakeLink:
    """Stands in for a BrokerLink: fixed ApiVersions, a canned answer, the requests it got."""

    def __init__(self, address: str, versions: dict[int, tuple[int, int]],
                 answer: dict[str, int] | None = None, fail: Exception | None = None) -> None:
        self.address, self.versions, self.answer, self.fail = address, versions, answer, fail
        self.requests: list[Any] = []

    def api_versions(self, timeout_s: float = 1.0) -> dict[int, tuple[int, int]]:
        if isinstance(self.fail, ConnectionError):  # cannot connect (a timeout comes later)
            raise self.fail
        return self.versions

    def ask(self, request: Any, timeout_s: float = 1.0) -> Any:
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        version = request.API_VERSION
        return decoded(quorum_response(**(self.answer or {}), version=version), version)

    def close(self) -> None:
        pass


def test_a_zookeeper_broker_is_not_asked() -> None:
    link = FakeLink("zk-broker:9092", {3: (0, 12), 18: (0, 3)})
    with pytest.raises(NotKRaft):
        ask_quorum(link)  # type: ignore[arg-type]
    assert link.requests == []


@pytest.mark.parametrize(("versions", "version"),
                         [((0, 3), 2), ((0, 2), 2), ((0, 1), 1), ((0, 0), 0)])
def test_ask_takes_the_newest_version_both_know(versions: tuple[int, int], version: int) -> None:
    link = FakeLink("b:9092", {55: versions}, {})
    answer = ask_quorum(link)  # type: ignore[arg-type]
    assert [r.API_VERSION for r in link.requests] == [version]
    assert answer.leader_id == 101
    assert (answer.voters[1].last_fetch_ms is None) == (version == 0)


def test_metadata_v7_claims_carry_the_leader_epoch() -> None:
    response = MetadataResponse[7](
        throttle_time_ms=0, brokers=[(1, "198.18.1.11", 9092, None)], cluster_id="c",
        controller_id=2, topics=[(0, "t", False, [(0, 0, 1, 9, [1, 2], [1], [])])])
    answer = claims_from(MetadataResponse[7].decode(io.BytesIO(response.encode())))
    assert answer.partitions == {("t", 0): BrokerClaim(1, (1, 2), (1,), 9)}


def test_describe_quorum_says_none_when_nobody_answers() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    assert describe_quorum([f"127.0.0.1:{port}"], timeout_s=1.0) is None
    assert time.monotonic() - started < 3


def probe_with(links: dict[str, FakeLink], keep_s: float = 3.0) -> QuorumProbe:
    probe = QuorumProbe({}, keep_s=keep_s)
    probe._links = links  # type: ignore[assignment]
    return probe


KRAFT = {55: (0, 1)}  # before KIP-853: no endpoints, only the controllers a profile gives


def test_a_profile_without_controllers_asks_those_the_quorum_names_at_once() -> None:
    """DescribeQuorum v2 names the voters' listeners: each is asked directly in the same
    poll (a one-shot `health` gets them too), and again every poll after."""
    v2 = {55: (0, 2)}
    links = {"b1:9092": FakeLink("b1:9092", v2, {"leader": 101, "epoch": 7}),
             "198.18.1.101:9093": FakeLink("198.18.1.101:9093", v2, {"leader": 101, "epoch": 7}),
             "198.18.1.102:9093": FakeLink("198.18.1.102:9093", v2, {"partition_code": 6}),
             "198.18.1.103:9093": FakeLink("198.18.1.103:9093", v2,
                                           fail=ConnectionRefusedError("refused"))}
    probe = probe_with(links)
    for _ in range(2):
        polled = probe.poll({1: "b1:9092"}, {})
        states = {c.node_id: (c.address, c.state) for c in polled.controllers}
        assert states == {101: ("198.18.1.101:9093", "leader"),
                          102: ("198.18.1.102:9093", "follower"),
                          103: ("198.18.1.103:9093", "unreachable")}
    assert len(links["198.18.1.101:9093"].requests) == 2


def test_the_probe_asks_the_broker_that_answered_first_and_moves_a_failing_one_back() -> None:
    links = {"b1:9092": FakeLink("b1:9092", KRAFT, fail=TimeoutError("b1: no answer")),
             "b2:9092": FakeLink("b2:9092", KRAFT, {}),
             "b3:9092": FakeLink("b3:9092", KRAFT, {})}
    probe = probe_with(links)
    brokers = {1: "b1:9092", 2: "b2:9092", 3: "b3:9092"}
    first = probe.poll(brokers, {})
    assert (first.mode, first.error) == ("kraft", None)
    assert first.answer is not None and first.answer.asked == "b2:9092"
    assert [len(link.requests) for link in links.values()] == [1, 1, 0]
    second = probe.poll(brokers, {})
    assert second.answer is not None and second.answer.asked == "b2:9092"
    assert [len(link.requests) for link in links.values()] == [1, 2, 0]  # b1 not asked again


def test_the_probe_keeps_an_answer_briefly_then_says_there_is_none() -> None:
    link = FakeLink("b1:9092", KRAFT, {})
    probe = probe_with({"b1:9092": link}, keep_s=0.2)
    assert probe.poll({1: "b1:9092"}, {}).answer is not None
    link.fail = TimeoutError("b1: no answer in 1.0 s")
    kept = probe.poll({1: "b1:9092"}, {})
    assert kept.answer is not None and kept.error == "b1: no answer in 1.0 s"
    time.sleep(0.25)
    gone = probe.poll({1: "b1:9092"}, {})
    assert (gone.mode, gone.answer, gone.error) == ("kraft", None, "b1: no answer in 1.0 s")


def test_each_controller_says_whether_it_leads_and_the_newest_epoch_wins() -> None:
    links = {"b1:9092": FakeLink("b1:9092", KRAFT, {"leader": 102, "epoch": 8}),
             "c101:9093": FakeLink("c101:9093", KRAFT, {"leader": 101, "epoch": 7}),
             "c102:9093": FakeLink("c102:9093", KRAFT, {"leader": 102, "epoch": 8}),
             "c103:9093": FakeLink("c103:9093", KRAFT, {"partition_code": 6}),
             "c104:9093": FakeLink("c104:9093", KRAFT, fail=ConnectionRefusedError("refused"))}
    probe = probe_with(links)
    polled = probe.poll({1: "b1:9092"}, {101: "c101:9093", 102: "c102:9093", 103: "c103:9093",
                                         104: "c104:9093"})
    assert polled.answer is not None
    assert (polled.answer.leader_id, polled.answer.leader_epoch) == (102, 8)
    states = {c.node_id: (c.state, c.leader_epoch) for c in polled.controllers}
    assert states == {101: ("leader", 7), 102: ("leader", 8), 103: ("follower", None),
                      104: ("unreachable", None)}


def test_a_zookeeper_cluster_is_said_so() -> None:
    link = FakeLink("b1:9092", {3: (0, 12)})
    polled = probe_with({"b1:9092": link}).poll({1: "b1:9092"}, {})
    assert (polled.mode, polled.answer) == ("zookeeper", None)
    assert "not a KRaft cluster" in (polled.error or "")


def test_without_an_answer_the_error_is_the_brokers_else_a_controllers_else_no_answer() -> None:
    """What a poll with no answer says: the brokers' error first; with no broker asked, the
    first controller's that failed; with nobody to ask, "no answer" (never an empty error)."""
    links = {"b1:9092": FakeLink("b1:9092", KRAFT, fail=TimeoutError("b1: no answer in 1.0 s")),
             "c101:9093": FakeLink("c101:9093", KRAFT, fail=ConnectionRefusedError("refused")),
             "c102:9093": FakeLink("c102:9093", KRAFT, {"partition_code": 6})}
    controllers = {101: "c101:9093", 102: "c102:9093"}
    both = probe_with(links).poll({1: "b1:9092"}, controllers)
    assert (both.answer, both.error) == (None, "b1: no answer in 1.0 s")
    alone = probe_with(links).poll({}, controllers)
    assert (alone.answer, alone.error) == (None, "refused")
    assert probe_with({}).poll({}, {}).error == "no answer"
