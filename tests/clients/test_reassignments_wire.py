"""ListPartitionReassignments through kafka-python's own classes, with no broker: answers are
encoded with its response class and decoded back, as a broker's bytes would be; each failure
becomes an Unknown with the reason a person acts on."""

from __future__ import annotations

import io
from typing import Any

import pytest
from kafka.protocol.admin import ListPartitionReassignmentsResponse

from kinspect.clients.reassignments import (
    ask_controller_reassignments,
    ask_reassignments,
    reassignments_from,
)
from kinspect.model.facts import Unknown
from kinspect.model.views import Reassignment
from tests.helpers.oracles import topic_line

ZK_BROKER = {3: (0, 12), 46: (0, 0)}


def response(code: int = 0, message: str | None = None, topics: Any = ()) -> Any:
    built = ListPartitionReassignmentsResponse[0](  # kept: encode() holds it weakly
        throttle_time_ms=0, error_code=code, error_message=message, topics=list(topics), tags={})
    return ListPartitionReassignmentsResponse[0].decode(io.BytesIO(built.encode()))


MOVING = [("orders", [(0, [1, 2, 3, 4], [4], [1], {}), (2, [3, 4], [], [], {})], {})]


class FakeLink:
    """Stands in for a BrokerLink: fixed ApiVersions, a canned answer or failure."""

    def __init__(self, broker_id: int | None, versions: dict[int, tuple[int, int]],
                 answer: Any = None, fail: Exception | None = None) -> None:
        self.broker_id, self.address = broker_id, f"10.0.0.{broker_id}:9092"
        self.versions, self.answer, self.fail = versions, answer, fail
        self.requests: list[Any] = []

    def api_versions(self, timeout_s: float = 1.0) -> dict[int, tuple[int, int]]:
        return self.versions

    def ask(self, request: Any, timeout_s: float = 1.0) -> Any:
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        return self.answer


def test_each_moving_partition_says_its_replicas_and_what_is_added_and_removed() -> None:
    assert reassignments_from(response(topics=MOVING), "broker 1") == {
        ("orders", 0): Reassignment((1, 2, 3, 4), (4,), (1,)),
        ("orders", 2): Reassignment((3, 4), (), ())}
    assert reassignments_from(response(), "broker 1") == {}


@pytest.mark.parametrize(("code", "reason"), [
    (31, "no Describe permission on the cluster: reassignments unknown"),
    (41, "broker 2 is not the controller: in ZooKeeper mode only the controller answers "
         "ListPartitionReassignments"),
    (7, "broker 2 answered ListPartitionReassignments with RequestTimedOutError (7): slow"),
])
def test_errors_are_unknown_with_a_reason(code: int, reason: str) -> None:
    assert reassignments_from(response(code, "slow"), "broker 2") == Unknown(reason)


def test_the_request_lists_every_topic_with_the_callers_timeout() -> None:
    link = FakeLink(1, ZK_BROKER, response(topics=MOVING))
    answer = ask_reassignments(link, 2.5)  # type: ignore[arg-type]
    assert not isinstance(answer, Unknown) and len(answer) == 2
    request = link.requests[0]
    assert (request.API_KEY, request.API_VERSION, request.timeout_ms, request.topics) == \
        (46, 0, 2500, None)


def test_an_old_kafka_and_a_silent_broker_are_said() -> None:
    old = FakeLink(1, {3: (0, 8)})
    assert ask_reassignments(old, 1.0) == Unknown(  # type: ignore[arg-type]
        "Kafka before 2.4 has no ListPartitionReassignments")
    assert old.requests == []
    silent = FakeLink(3, ZK_BROKER, fail=TimeoutError("10.0.0.3:9092: no answer in 1.0 s"))
    assert ask_reassignments(silent, 1.0) == Unknown(  # type: ignore[arg-type]
        "broker 3 did not answer ListPartitionReassignments: 10.0.0.3:9092: no answer in 1.0 s")


def test_the_controller_is_asked_first_and_the_others_when_it_moved() -> None:
    links = {1: FakeLink(1, ZK_BROKER, response(41)),
             2: FakeLink(2, ZK_BROKER, response(41)),
             3: FakeLink(3, ZK_BROKER, response(topics=MOVING))}
    answer = ask_controller_reassignments(links.values(), 2, 1.0)  # type: ignore[arg-type]
    assert not isinstance(answer, Unknown) and ("orders", 0) in answer
    assert [len(links[b].requests) for b in (1, 2, 3)] == [1, 1, 1]
    assert links[2].requests and links[1].requests  # 2 (the named controller) before 1


def test_a_refusal_ends_the_search() -> None:
    links = [FakeLink(1, ZK_BROKER, response(31)), FakeLink(2, ZK_BROKER, response(topics=MOVING))]
    answer = ask_controller_reassignments(links, 1, 1.0)  # type: ignore[arg-type]
    assert answer == Unknown("no Describe permission on the cluster: reassignments unknown")
    assert links[1].requests == []


def test_kafka_topics_lines_as_the_oracle_reads_them() -> None:
    moving = topic_line("\tTopic: a\tPartition: 3\tLeader: 2\tReplicas: 1,2,3,4\tIsr: 1,2,3\t"
                        "Adding Replicas: 4\tRemoving Replicas: 1\tElr: N/A\tLastKnownElr: N/A")
    assert moving is not None
    assert (moving["adding"], moving["removing"], moving["elr"]) == ((4,), (1,), None)
    headless = topic_line("\tTopic: e\tPartition: 0\tLeader: none\tReplicas: 1,2,3\tIsr: \t"
                          "Elr: 1,3\tLastKnownElr: 1")
    assert headless is not None
    assert (headless["leader"], headless["isr"], headless["elr"], headless["last_known_elr"],
            headless["adding"]) == (None, (), (1, 3), (1,), ())
    assert topic_line("Topic: e\tTopicId: x\tPartitionCount: 1\tReplicationFactor: 3") is None
