"""DescribeTopicPartitions as kinspect declares it with kafka-python's types, and ELR as a
broker tells it, with no broker: answers are encoded with the declared classes and decoded back;
whether ELR is on comes from the features of an ApiVersions v4 answer, encoded the same way."""

from __future__ import annotations

import io
from typing import Any

import pytest
from kafka.protocol.api import RequestHeaderV2
from kafka.protocol.api_versions import ApiVersionsResponse

from kinspect.clients.topic_partitions import (
    CURSOR,
    ELR_FEATURE,
    FINALIZED_SCHEMA,
    SUPPORTED_SCHEMA,
    WHOLE_TOPIC,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    Features,
    ask_eligible_leaders,
    eligible_from,
    elr_off,
    features_from,
)
from kinspect.model.facts import Unknown
from kinspect.model.views import EligibleLeaders

TOPIC_ID = (0x1234, 0x5678)
KRAFT_4 = {18: (0, 4), 55: (0, 2), 75: (0, 0)}


def partition(index: int, elr: list[int] | None = None, last: list[int] | None = None,
              code: int = 0) -> tuple[Any, ...]:
    return (code, index, 1, 4, [1, 2, 3], [1], elr, last, [], {})


def page(topics: list[tuple[Any, ...]], cursor: tuple[str, int] | None = None) -> Any:
    built = DescribeTopicPartitionsResponse[0](
        throttle_time_ms=0, topics=topics,
        next_cursor=None if cursor is None else (*cursor, {}), tags={})
    return DescribeTopicPartitionsResponse[0].decode(io.BytesIO(built.encode()))


def topic(name: str, *partitions: tuple[Any, ...], code: int = 0) -> tuple[Any, ...]:
    return (code, name, TOPIC_ID, False, list(partitions), -2147483648, {})


def test_a_page_decodes_to_each_partitions_elr_and_the_next_cursor() -> None:
    answer, cursor = eligible_from(page([topic("orders", partition(0, [3], []),
                                                partition(1, [], [2]))], ("payments", 4)))
    assert answer == {("orders", 0): EligibleLeaders((3,), ()),
                      ("orders", 1): EligibleLeaders((), (2,))}
    assert cursor == ("payments", 4)


def test_refused_and_failed_topics_and_partitions_are_unknown_with_the_permission() -> None:
    answer, cursor = eligible_from(page([topic("secret", code=29),
                                         topic("orders", partition(0, code=3)),
                                         topic("nulls", partition(0, None, None))]))
    assert cursor is None
    assert answer[("secret", WHOLE_TOPIC)] == Unknown(
        "no Describe permission on topic secret: its ELR unknown")
    assert answer[("orders", 0)] == Unknown(
        "partition orders-0: UnknownTopicOrPartitionError (3)")
    assert isinstance(answer[("nulls", 0)], Unknown)


def test_the_request_is_flexible_and_carries_a_nullable_cursor() -> None:
    request = DescribeTopicPartitionsRequest[0](topics=[("orders", {})],
                                                response_partition_limit=2000,
                                                cursor=("orders", 7, {}), tags={})
    assert (request.API_KEY, request.API_VERSION) == (75, 0)
    assert isinstance(request.build_header(1, "kinspect"), RequestHeaderV2)
    back = DescribeTopicPartitionsRequest[0].decode(io.BytesIO(request.encode()))
    assert (back.topics, back.response_partition_limit, back.cursor) == \
        ([("orders", {})], 2000, ("orders", 7, {}))
    assert CURSOR.encode(None) == b"\xff"  # Kafka's null struct marker (-1)
    assert CURSOR.decode(io.BytesIO(CURSOR.encode(("t", 1, {})))) == ("t", 1, {})


def versions_answer(supported: list[tuple[str, int, int]],
                    finalized: list[tuple[str, int, int]]) -> Any:
    tags = {0: SUPPORTED_SCHEMA.encode([(n, lo, hi, {}) for n, lo, hi in supported]),
            2: FINALIZED_SCHEMA.encode([(n, hi, lo, {}) for n, lo, hi in finalized])}
    built = ApiVersionsResponse[4](error_code=0, api_versions=[(75, 0, 0, {})],
                                   throttle_time_ms=0, _tagged_fields=tags)
    return ApiVersionsResponse[4].decode(io.BytesIO(built.encode()))


def test_features_come_from_the_api_versions_tagged_fields() -> None:
    features = features_from(versions_answer([(ELR_FEATURE, 0, 1), ("metadata.version", 7, 33)],
                                             [(ELR_FEATURE, 1, 1)]))
    assert features == Features({ELR_FEATURE: (0, 1), "metadata.version": (7, 33)},
                                {ELR_FEATURE: 1})


@pytest.mark.parametrize(("versions", "features", "reason"), [
    ({3: (0, 12)}, None, "Kafka in ZooKeeper mode has no ELR (DescribeTopicPartitions)"),
    ({55: (0, 1)}, None, "Kafka before 3.8 has no ELR (DescribeTopicPartitions)"),
    (KRAFT_4, Features({"metadata.version": (1, 21)}, {"metadata.version": 21}),
     "Kafka 3.8/3.9 has ELR only as a preview (the controllers' eligible.leader.replicas.enable, "
     "which brokers do not report): ELR unknown"),
    (KRAFT_4, Features({ELR_FEATURE: (0, 1)}, {}),
     "ELR is off on this cluster (eligible.leader.replicas.version 0)"),
    (KRAFT_4, Features({ELR_FEATURE: (0, 1)}, {ELR_FEATURE: 1}), None),
])
def test_why_the_elr_is_not_told(versions: dict[int, tuple[int, int]],
                                 features: Features | None, reason: str | None) -> None:
    assert elr_off(versions, features) == (Unknown(reason) if reason else None)


class FakeLink:
    """A 4.x KRaft broker with ELR on, answering pages in turn."""

    def __init__(self, pages: list[Any]) -> None:
        self.broker_id, self.address, self.pages = 1, "10.0.0.1:9092", pages
        self.requests: list[Any] = []

    def api_versions(self, timeout_s: float = 1.0) -> dict[int, tuple[int, int]]:
        return KRAFT_4

    def ask(self, request: Any, timeout_s: float = 1.0) -> Any:
        self.requests.append(request)
        if request.API_KEY == 18:
            return versions_answer([(ELR_FEATURE, 0, 1)], [(ELR_FEATURE, 1, 1)])
        return self.pages.pop(0)


def test_pages_are_followed_until_the_cursor_is_null() -> None:
    link = FakeLink([page([topic("a", partition(0, [2], []))], ("b", 0)),
                     page([topic("b", partition(0, [], [3]))])])
    answer = ask_eligible_leaders(link, None, 1.0)  # type: ignore[arg-type]
    assert answer == {("a", 0): EligibleLeaders((2,), ()), ("b", 0): EligibleLeaders((), (3,))}
    asked = [r for r in link.requests if r.API_KEY == 75]
    assert [r.cursor for r in asked] == [None, ("b", 0, {})]
    assert [r.API_VERSION for r in link.requests if r.API_KEY == 18] == [4]


def test_a_silent_broker_is_said() -> None:
    link = FakeLink([])
    link.ask = lambda request, timeout_s=1.0: (_ for _ in ()).throw(  # type: ignore[method-assign]
        TimeoutError("10.0.0.1:9092: no answer in 1.0 s"))
    assert ask_eligible_leaders(link, ["a"], 1.0) == Unknown(  # type: ignore[arg-type]
        "broker 1 did not answer DescribeTopicPartitions: 10.0.0.1:9092: no answer in 1.0 s")
    assert ask_eligible_leaders(link, [], 1.0) == {}  # type: ignore[arg-type]
