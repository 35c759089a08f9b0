"""Eligible leader replicas (KIP-966) as a KRaft broker knows them: DescribeTopicPartitions
(API key 75, Kafka 3.8+, KRaft brokers only).

A replica that left the ISR while it was below min.insync.replicas still holds every committed
record: it is in the partition's ELR, and may be elected cleanly when the ISR is gone; the last
known ELR names the replicas that were when the ELR empties too. Only DescribeTopicPartitions
tells them. A broker answers them as empty lists whether ELR is on or off, so whether it is on
comes from the cluster's finalized features (ApiVersions v3+, tagged fields): the feature
`eligible.leader.replicas.version` is 4.0's (on by default for clusters formatted by 4.4); 3.8
and 3.9 had ELR only as a preview behind the controllers' `eligible.leader.replicas.enable`,
which no broker reports. ApiVersions is asked at v4 where the broker takes it: for v3 requests
a 4.x broker leaves out the features whose lowest version is 0 (older clients reject those),
ELR's among them.

kafka-python has no class for the request, so v0 is declared here with its own building blocks
exactly as Kafka's DescribeTopicPartitionsRequest.json / Response.json lay it out (flexible:
compact strings and arrays, tagged fields, request header v2). Two shapes it lacks are built
from its types too: a Uuid is two int64 (most, then least significant bits, as Kafka writes
it), and a nullable struct (the cursor) an int8 marker (-1 null, 1 present) before the struct.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka.errors import TopicAuthorizationFailedError
from kafka.protocol.abstract import AbstractType
from kafka.protocol.api import Request, Response
from kafka.protocol.api_versions import ApiVersionsRequest
from kafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

from kinspect.clients.quorum import NO_ANSWER
from kinspect.clients.reassignments import broker_name, error_name
from kinspect.clients.wire import BrokerLink
from kinspect.model.facts import Fact, Unknown
from kinspect.model.views import EligibleLeaders

__all__ = ["DESCRIBE_TOPIC_PARTITIONS", "ELR_FEATURE", "WHOLE_TOPIC",
           "DescribeTopicPartitionsRequest", "DescribeTopicPartitionsResponse", "Features",
           "NullableStruct", "ask_eligible_leaders", "ask_features", "eligible_from", "elr_off",
           "features_from"]

DESCRIBE_TOPIC_PARTITIONS = 75
API_VERSIONS, DESCRIBE_QUORUM = 18, 55
ELR_FEATURE = "eligible.leader.replicas.version"
PARTITION_LIMIT = 2000  # Kafka's default (and the brokers' max.request.partition.size.limit)
MAX_PAGES = 10_000
WHOLE_TOPIC = -1  # the partition of a key that stands for a whole topic refused or unknown
TOPIC_AUTHORIZATION_FAILED = TopicAuthorizationFailedError.errno
# ApiVersions v3+ tagged fields (ApiVersionsResponse.json): supported and finalized features
SUPPORTED_FEATURES, FINALIZED_FEATURES = 0, 2


class NullableStruct(AbstractType):  # type: ignore[misc]  # kafka-python is untyped
    """A struct Kafka may send as null: an int8 marker (-1 null, 1 present), then the struct."""

    def __init__(self, *fields: tuple[str, Any]) -> None:
        self.schema = Schema(*fields)

    def encode(self, value: Any) -> bytes:
        if value is None:
            return bytes(Int8.encode(-1))
        return bytes(Int8.encode(1) + self.schema.encode(value))

    def decode(self, data: Any) -> Any:
        return None if Int8.decode(data) < 0 else self.schema.decode(data)


UUID = Schema(("most_significant_bits", Int64), ("least_significant_bits", Int64))
CURSOR = NullableStruct(("topic_name", CompactString("utf-8")), ("partition_index", Int32),
                        ("tags", TaggedFields))


class DescribeTopicPartitionsResponse_v0(Response):  # type: ignore[misc]
    API_KEY = DESCRIBE_TOPIC_PARTITIONS
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", CompactArray(
            ("error_code", Int16),
            ("name", CompactString("utf-8")),
            ("topic_id", UUID),
            ("is_internal", Boolean),
            ("partitions", CompactArray(
                ("error_code", Int16),
                ("partition_index", Int32),
                ("leader_id", Int32),
                ("leader_epoch", Int32),
                ("replica_nodes", CompactArray(Int32)),
                ("isr_nodes", CompactArray(Int32)),
                ("eligible_leader_replicas", CompactArray(Int32)),
                ("last_known_elr", CompactArray(Int32)),
                ("offline_replicas", CompactArray(Int32)),
                ("tags", TaggedFields))),
            ("topic_authorized_operations", Int32),
            ("tags", TaggedFields))),
        ("next_cursor", CURSOR),
        ("tags", TaggedFields))


class DescribeTopicPartitionsRequest_v0(Request):  # type: ignore[misc]
    API_KEY = DESCRIBE_TOPIC_PARTITIONS
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeTopicPartitionsResponse_v0
    SCHEMA = Schema(
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("tags", TaggedFields))),
        ("response_partition_limit", Int32),
        ("cursor", CURSOR),
        ("tags", TaggedFields))


DescribeTopicPartitionsRequest: list[type[Any]] = [DescribeTopicPartitionsRequest_v0]
DescribeTopicPartitionsResponse: list[type[Any]] = [DescribeTopicPartitionsResponse_v0]

SUPPORTED_SCHEMA = CompactArray(("name", CompactString("utf-8")), ("min_version", Int16),
                          ("max_version", Int16), ("tags", TaggedFields))
FINALIZED_SCHEMA = CompactArray(("name", CompactString("utf-8")), ("max_version_level", Int16),
                          ("min_version_level", Int16), ("tags", TaggedFields))


@dataclass(frozen=True)
class Features:
    """The features a broker supports (name -> (min, max)) and the cluster's finalized level of
    each (name -> max version level), as its ApiVersions answer says."""

    supported: dict[str, tuple[int, int]]
    finalized: dict[str, int]


def features_from(response: Any) -> Features:
    """An ApiVersionsResponse v3+: its feature tagged fields, decoded with kafka-python's types."""
    tags = response._tagged_fields or {}
    supported = SUPPORTED_SCHEMA.decode(io.BytesIO(tags[SUPPORTED_FEATURES])) \
        if SUPPORTED_FEATURES in tags else []
    finalized = FINALIZED_SCHEMA.decode(io.BytesIO(tags[FINALIZED_FEATURES])) \
        if FINALIZED_FEATURES in tags else []
    return Features({name: (low, high) for name, low, high, _t in supported or ()},
                    {name: high for name, high, _low, _t in finalized or ()})


def ask_features(link: BrokerLink, version: int, timeout_s: float) -> Features:
    """The broker's and cluster's features (ApiVersions v3 or v4; raises without an answer)."""
    request = ApiVersionsRequest[version](client_software_name="kinspect",
                                          client_software_version="1", _tagged_fields={})
    return features_from(link.ask(request, timeout_s))


def elr_off(versions: dict[int, tuple[int, int]], features: Features | None) -> Unknown | None:
    """Why this cluster's brokers cannot tell the ELR (None: they can)."""
    if DESCRIBE_TOPIC_PARTITIONS not in versions:
        if DESCRIBE_QUORUM not in versions:
            return Unknown("Kafka in ZooKeeper mode has no ELR (DescribeTopicPartitions)")
        return Unknown("Kafka before 3.8 has no ELR (DescribeTopicPartitions)")
    level = features.finalized.get(ELR_FEATURE, 0) if features else 0
    if level >= 1:
        return None
    if features is None or ELR_FEATURE not in features.supported:
        return Unknown("Kafka 3.8/3.9 has ELR only as a preview (the controllers' "
                       "eligible.leader.replicas.enable, which brokers do not report): "
                       "ELR unknown")
    return Unknown(f"ELR is off on this cluster ({ELR_FEATURE} {level})")


Answer = dict[tuple[str, int], Fact[EligibleLeaders]]


def eligible_from(response: Any) -> tuple[Answer, tuple[str, int] | None]:
    """One page: each partition's ELR (or why not), and the cursor of the next page (None: last)."""
    out: Answer = {}
    for code, name, _id, _internal, partitions, _ops, _tags in response.topics or ():
        if code:
            out[(name, WHOLE_TOPIC)] = _topic_unknown(name, code)
            continue
        for p_code, index, _leader, _epoch, _rs, _isr, elr, last, _off, _t in partitions or ():
            out[(name, index)] = Unknown(f"partition {name}-{index}: {error_name(p_code)}") \
                if p_code else _eligible(elr, last)
    cursor = response.next_cursor
    return out, (None if cursor is None else (cursor[0], cursor[1]))


def _topic_unknown(topic: str, code: int) -> Unknown:
    if code == TOPIC_AUTHORIZATION_FAILED:
        return Unknown(f"no Describe permission on topic {topic}: its ELR unknown")
    return Unknown(f"topic {topic}: DescribeTopicPartitions answered {error_name(code)}")


def _eligible(elr: Iterable[int] | None, last: Iterable[int] | None) -> Fact[EligibleLeaders]:
    if elr is None or last is None:  # no broker sends null today; the schema allows it
        return Unknown("the broker did not say the ELR (null)")
    return EligibleLeaders(tuple(sorted(elr)), tuple(sorted(last)))


def ask_eligible_leaders(link: BrokerLink, topics: list[str] | None, timeout_s: float
                         ) -> Answer | Unknown:
    """Each partition's ELR and last known ELR, from any KRaft broker (its metadata cache), page
    after page (`timeout_s` each). topics None: every topic the user may describe (others are
    left out, as Kafka does); a named topic refused or unknown is one Unknown keyed
    (topic, WHOLE_TOPIC). Never raises: the cluster-wide reasons are an Unknown."""
    if topics is not None and not topics:
        return {}
    asked = broker_name(link)
    try:
        versions = link.api_versions(timeout_s)
        newest = min(versions.get(API_VERSIONS, (0, 0))[1], 4)
        features = ask_features(link, newest, timeout_s) if newest >= 3 else None
        off = elr_off(versions, features)
        if off is not None:
            return off
        return _pages(link, topics, timeout_s)
    except NO_ANSWER as exc:
        return Unknown(f"{asked} did not answer DescribeTopicPartitions: "
                       f"{str(exc) or type(exc).__name__}")


def _pages(link: BrokerLink, topics: list[str] | None, timeout_s: float) -> Answer:
    named: list[tuple[str, dict[int, bytes]]] = [(t, {}) for t in sorted(set(topics or ()))]
    out: Answer = {}
    cursor: tuple[str, int] | None = None
    for _page in range(MAX_PAGES):
        request = DescribeTopicPartitionsRequest_v0(
            topics=named, response_partition_limit=PARTITION_LIMIT,
            cursor=None if cursor is None else (*cursor, {}), tags={})
        page, following = eligible_from(link.ask(request, timeout_s))
        out.update(page)
        if following is None or following == cursor:
            break
        cursor = following
    return out
