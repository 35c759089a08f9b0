"""Asking the KRaft controller quorum who leads it: DescribeQuorum (API key 55).

In KRaft the "controller id" of Metadata and DescribeCluster names a random broker (kafka-ui
and AKHQ shipped that as the controller); the active controller is the leader of the quorum
that replicates `__cluster_metadata`, and only DescribeQuorum says who it is, at which epoch,
and how far each voter and observer has replicated. A broker forwards the request to the active
controller; a controller answers itself, and only while it leads (else NOT_LEADER_OR_FOLLOWER).
kafka-python has no class for it, so v0 to v2 are declared here with its own building blocks
(flexible versions: compact strings and arrays, tagged fields, request header v2), exactly as
Kafka's DescribeQuorumRequest.json / DescribeQuorumResponse.json lay them out. v2 (Kafka 3.9+,
KIP-853) also names each voter's endpoints: a profile that lists only brokers still gets every
controller asked directly (KIP-919's point: a client learns the controllers from the cluster).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kafka.errors import for_code
from kafka.protocol.abstract import AbstractType
from kafka.protocol.api import Request, Response
from kafka.protocol.types import CompactArray, CompactString, Int16, Int32, Int64, Schema, TaggedFields

from kinspect.clients.wire import BrokerLink, connection_settings, told
from kinspect.errors import KinspectError, said
from kinspect.model.views import ControllerAnswer, Mode, QuorumAnswer, QuorumReplica

__all__ = ["DescribeQuorumRequest", "DescribeQuorumResponse", "NotKRaft", "QuorumAnswer",
           "QuorumError", "QuorumPoll", "QuorumProbe", "QuorumReplica", "ask_quorum",
           "describe_quorum", "quorum_from"]

DESCRIBE_QUORUM = 55
METADATA_TOPIC, METADATA_PARTITION = "__cluster_metadata", 0
NOT_LEADER_OR_FOLLOWER = 6
NO_LEADER = -1


class NotKRaft(KinspectError):
    """The broker does not take DescribeQuorum: a ZooKeeper-mode cluster."""


class QuorumError(KinspectError):
    """DescribeQuorum answered with an error (e.g. a controller that does not lead)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Uuid(AbstractType):  # type: ignore[misc]
    """16 bytes (kafka-python has no UUID type): a voter's directory id, kept as hex."""

    @classmethod
    def encode(cls, value: str) -> bytes:
        return bytes.fromhex(value)

    @classmethod
    def decode(cls, data: Any) -> str:
        return bytes(data.read(16)).hex()


class UInt16(AbstractType):  # type: ignore[misc]
    """A port: unsigned 16 bits (kafka-python's Int16 is signed)."""

    @classmethod
    def encode(cls, value: int) -> bytes:
        return struct.pack(">H", value)

    @classmethod
    def decode(cls, data: Any) -> int:
        return int(struct.unpack(">H", data.read(2))[0])


_REPLICA_V0 = (("replica_id", Int32), ("log_end_offset", Int64), ("tags", TaggedFields))
_REPLICA_V1 = (("replica_id", Int32), ("log_end_offset", Int64),
               ("last_fetch_timestamp", Int64), ("last_caught_up_timestamp", Int64),
               ("tags", TaggedFields))
_REPLICA_V2 = (("replica_id", Int32), ("replica_directory_id", Uuid), ("log_end_offset", Int64),
               ("last_fetch_timestamp", Int64), ("last_caught_up_timestamp", Int64),
               ("tags", TaggedFields))


def _response_schema(replica: tuple[tuple[str, Any], ...]) -> Schema:
    return Schema(
        ("error_code", Int16),
        ("topics", CompactArray(
            ("topic_name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32),
                ("error_code", Int16),
                ("leader_id", Int32),
                ("leader_epoch", Int32),
                ("high_watermark", Int64),
                ("current_voters", CompactArray(*replica)),
                ("observers", CompactArray(*replica)),
                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class DescribeQuorumResponse_v0(Response):  # type: ignore[misc]  # kafka-python is untyped
    API_KEY = DESCRIBE_QUORUM
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    SCHEMA = _response_schema(_REPLICA_V0)


_MESSAGE = ("error_message", CompactString("utf-8"))  # v2: null when there is no error
_RESPONSE_V2 = Schema(
    ("error_code", Int16),
    _MESSAGE,
    ("topics", CompactArray(
        ("topic_name", CompactString("utf-8")),
        ("partitions", CompactArray(
            ("partition_index", Int32),
            ("error_code", Int16),
            _MESSAGE,
            ("leader_id", Int32),
            ("leader_epoch", Int32),
            ("high_watermark", Int64),
            ("current_voters", CompactArray(*_REPLICA_V2)),
            ("observers", CompactArray(*_REPLICA_V2)),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))),
    ("nodes", CompactArray(
        ("node_id", Int32),
        ("listeners", CompactArray(
            ("name", CompactString("utf-8")),
            ("host", CompactString("utf-8")),
            ("port", UInt16),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))),
    ("tags", TaggedFields))


class DescribeQuorumResponse_v2(Response):  # type: ignore[misc]
    """v2 adds error messages, each replica's directory id and the voters' endpoints."""

    API_KEY = DESCRIBE_QUORUM
    API_VERSION = 2
    FLEXIBLE_VERSION = True
    SCHEMA = _RESPONSE_V2


class DescribeQuorumResponse_v1(Response):  # type: ignore[misc]
    """v1 adds each replica's last fetch and last caught-up timestamps (KIP-836)."""

    API_KEY = DESCRIBE_QUORUM
    API_VERSION = 1
    FLEXIBLE_VERSION = True
    SCHEMA = _response_schema(_REPLICA_V1)


_REQUEST_SCHEMA = Schema(
    ("topics", CompactArray(
        ("topic_name", CompactString("utf-8")),
        ("partitions", CompactArray(
            ("partition_index", Int32),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))),
    ("tags", TaggedFields))


class DescribeQuorumRequest_v0(Request):  # type: ignore[misc]
    API_KEY = DESCRIBE_QUORUM
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeQuorumResponse_v0
    SCHEMA = _REQUEST_SCHEMA


class DescribeQuorumRequest_v1(Request):  # type: ignore[misc]
    """The same request; it asks for the v1 answer."""

    API_KEY = DESCRIBE_QUORUM
    API_VERSION = 1
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeQuorumResponse_v1
    SCHEMA = _REQUEST_SCHEMA


class DescribeQuorumRequest_v2(Request):  # type: ignore[misc]
    """The same request; it asks for the v2 answer."""

    API_KEY = DESCRIBE_QUORUM
    API_VERSION = 2
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeQuorumResponse_v2
    SCHEMA = _REQUEST_SCHEMA


DescribeQuorumRequest: list[type[Any]] = [DescribeQuorumRequest_v0, DescribeQuorumRequest_v1,
                                          DescribeQuorumRequest_v2]
DescribeQuorumResponse: list[type[Any]] = [DescribeQuorumResponse_v0, DescribeQuorumResponse_v1,
                                           DescribeQuorumResponse_v2]
NEWEST = len(DescribeQuorumRequest) - 1


def quorum_request(version: int) -> Any:
    """Ask about the metadata log's one partition."""
    return DescribeQuorumRequest[version](
        topics=[(METADATA_TOPIC, [(METADATA_PARTITION, {})], {})], tags={})


def _replica(row: Any) -> QuorumReplica:
    if len(row) > 5:  # v2: the directory id after the id
        return QuorumReplica(row[0], row[2], told(row[3]), told(row[4]))
    if len(row) > 3:  # v1
        return QuorumReplica(row[0], row[1], told(row[2]), told(row[3]))
    return QuorumReplica(row[0], row[1], None, None)


def _replicas(rows: Any) -> tuple[QuorumReplica, ...]:
    if not rows:
        return ()
    return tuple(_replica(row) for row in rows)


def voter_addresses(answer: QuorumAnswer) -> dict[int, str]:
    """Each voter's first listener as host:port, from a v2 answer (the controllers' own
    listeners: a voter's endpoints are its controller listeners)."""
    return {voter.replica_id: answer.endpoints[voter.replica_id][0].split("://", 1)[-1]
            for voter in answer.voters if answer.endpoints.get(voter.replica_id)}


def _endpoints(response: Any) -> dict[int, tuple[str, ...]]:
    """v2's nodes: each voter's listeners as NAME://host:port (what kafka-metadata-quorum
    describe --status prints as its endpoints); empty before v2."""
    nodes = getattr(response, "nodes", None)
    if not nodes:
        return {}
    return {node_id: tuple(f"{name}://{host}:{port}" for name, host, port, _tags in listeners)
            for node_id, listeners, _tags in nodes}


def _error(code: int, address: str) -> QuorumError:
    name = for_code(code).__name__
    return QuorumError(f"{address}: DescribeQuorum answered {name} ({code})", code)


def _partition_rows(response: Any) -> Iterator[tuple[str, Any]]:
    """Each topic's partitions as (topic, row), every version's row laid out as v0's (v2
    carries the partition's error message after its code: left out here)."""
    for topic, partitions, _tags in response.topics or ():
        for raw in partitions or ():
            if response.API_VERSION >= 2:
                yield topic, (*raw[:2], *raw[3:])
            else:
                yield topic, raw


def quorum_from(response: Any, asked: str) -> QuorumAnswer:
    """A DescribeQuorumResponse (v0 to v2) as a QuorumAnswer; QuorumError for an error."""
    if response.error_code:
        raise _error(response.error_code, asked)
    for topic, row in _partition_rows(response):
        index, code, leader, epoch, high_watermark, voters, observers = row[:7]
        if topic != METADATA_TOPIC or index != METADATA_PARTITION:
            continue
        if code:
            raise _error(code, asked)
        return QuorumAnswer(leader_id=told(leader), leader_epoch=epoch,
                            high_watermark=high_watermark, voters=_replicas(voters),
                            observers=_replicas(observers), asked=asked,
                            endpoints=_endpoints(response))
    raise QuorumError(f"{asked}: DescribeQuorum answered without {METADATA_TOPIC}-0", -1)


def ask_quorum(link: BrokerLink, timeout_s: float = 1.0) -> QuorumAnswer:
    """The quorum as this broker (forwarded to the active controller) or controller sees it.

    OSError/ConnectionError/TimeoutError when no answer comes; NotKRaft when the broker does
    not take DescribeQuorum (its ApiVersions, read at connect, say so: no request is sent);
    QuorumError when it answers with an error.
    """
    versions = link.api_versions(timeout_s)
    if DESCRIBE_QUORUM not in versions:
        raise NotKRaft(f"{link.address} does not take DescribeQuorum: not a KRaft cluster")
    low, high = versions[DESCRIBE_QUORUM]
    if low > NEWEST:
        raise KinspectError(f"{link.address} takes DescribeQuorum v{low}+ only")
    return quorum_from(link.ask(quorum_request(min(high, NEWEST)), timeout_s), link.address)


def _mode(versions: Mapping[int, Any]) -> Mode:
    """A broker that takes DescribeQuorum is a KRaft cluster's."""
    if DESCRIBE_QUORUM in versions:
        return "kraft"
    return "zookeeper"


def _why_unanswered(error: str | None, states: tuple[ControllerAnswer, ...]) -> str:
    """The brokers' error, else the first controller's, else "no answer"."""
    if error:
        return error
    for state in states:
        if state.error:
            return state.error
    return "no answer"


# What a broker or controller that does not answer may raise (a decoding error included).
NO_ANSWER = (OSError, ConnectionError, TimeoutError, ValueError, EOFError, struct.error)


def describe_quorum(addresses: Iterable[str], config: Mapping[str, Any] | None = None,
                    timeout_s: float = 2.0) -> QuorumAnswer | None:
    """One-shot: the first address (broker or controller listener) that answers, each asked on
    a connection of its own with `timeout_s`, closed after; None when none answers. NotKRaft
    when one is a ZooKeeper-mode broker (no address would ever answer)."""
    settings = connection_settings(config)
    for address in addresses:
        link = BrokerLink(address, settings)
        try:
            return ask_quorum(link, timeout_s)
        except (*NO_ANSWER, QuorumError):
            continue
        finally:
            link.close()
    return None


@dataclass(frozen=True)
class QuorumPoll:
    """One poll of the quorum. Failures are said here, never raised."""

    mode: Mode | None  # kraft | zookeeper, as the brokers' ApiVersions say; None: none reached
    answer: QuorumAnswer | None  # the newest answer (highest epoch) of this poll, or a recent one
    error: str | None  # why this poll got no answer
    controllers: tuple[ControllerAnswer, ...] = ()


class QuorumProbe:
    """Asks the quorum every poll, over connections kept between polls (as the AdminSource
    keeps its links): the brokers one at a time, the last that answered first (each forwards
    to the active controller, so one answer is enough; a failing one goes to the back), and
    each known controller directly, in parallel (each says whether it leads: a cut-off one
    still leading at an old epoch shows). An answer is kept `keep_s` through failed polls, so
    one slow answer on a busy machine is not a controller change."""

    def __init__(self, settings: Mapping[str, Any] | None, keep_s: float = 3.0) -> None:
        self.settings, self.keep_s = dict(settings or {}), keep_s
        self.learned: dict[int, str] = {}  # voters' addresses the quorum named (v2), if none given
        self._links: dict[str, BrokerLink] = {}
        self._order: list[str] = []
        self._last: tuple[QuorumAnswer, float] | None = None

    @property
    def answered(self) -> bool:
        """Some poll got an answer already."""
        return self._last is not None

    def poll(self, brokers: Mapping[int, str], controllers: Mapping[int, str],
             timeout_s: float = 1.0) -> QuorumPoll:
        """`controllers`: the profile's; when it gives none, those the quorum named (v2) are
        asked, the first time right after the answer that named them."""
        given = bool(controllers)
        if not given:
            controllers = self.learned
        with ThreadPoolExecutor(max_workers=max(1, len(controllers)),
                                thread_name_prefix="kinspect-quorum") as pool:
            direct = [pool.submit(self._ask_controller, node, address, timeout_s)
                      for node, address in sorted(controllers.items())]
            mode, forwarded, error = self._ask_brokers(brokers, timeout_s)
            asked = [future.result() for future in direct]
        if not given:
            asked += self._learn(forwarded, timeout_s)
        states = tuple(state for state, _answer in asked)
        if any(state.state in ("leader", "follower") for state in states):
            mode = "kraft"
        answers = [answer for _state, answer in asked if answer is not None]
        if forwarded is not None:
            answers.append(forwarded)
        return self._outcome(mode, answers, _why_unanswered(error, states), states)

    def _learn(self, forwarded: QuorumAnswer | None, timeout_s: float
               ) -> list[tuple[ControllerAnswer, QuorumAnswer | None]]:
        """Keeps the voters' addresses a v2 answer named; asks them right away the first
        time (what they say then belongs to this poll)."""
        if forwarded is None:
            return []
        if not forwarded.endpoints:
            return []
        first = not self.learned
        self.learned = voter_addresses(forwarded)
        if not first:
            return []
        return self._ask_all(self.learned, timeout_s)

    def _outcome(self, mode: Mode | None, answers: list[QuorumAnswer], error: str,
                 states: tuple[ControllerAnswer, ...]) -> QuorumPoll:
        """The newest answer of this poll; without one, the last while it is recent."""
        now = time.monotonic()
        if answers:
            best = max(answers, key=lambda a: (a.leader_epoch, a.high_watermark))
            self._last = (best, now)
            return QuorumPoll(mode, best, None, states)
        return QuorumPoll(mode, self._recent(now), error, states)

    def _recent(self, now: float) -> QuorumAnswer | None:
        """The last answer, while it is no older than keep_s."""
        if self._last is None:
            return None
        answer, when = self._last
        if now - when > self.keep_s:
            return None
        return answer

    def _ask_all(self, controllers: Mapping[int, str], timeout_s: float
                 ) -> list[tuple[ControllerAnswer, QuorumAnswer | None]]:
        with ThreadPoolExecutor(max_workers=max(1, len(controllers)),
                                thread_name_prefix="kinspect-quorum") as pool:
            return list(pool.map(lambda item: self._ask_controller(item[0], item[1], timeout_s),
                                 sorted(controllers.items())))

    def close(self) -> None:
        for link in self._links.values():
            link.close()
        self._links.clear()

    def _link(self, address: str) -> BrokerLink:
        link = self._links.get(address)
        if link is None:
            link = self._links[address] = BrokerLink(address, self.settings)
        return link

    def _ask_brokers(self, brokers: Mapping[int, str], timeout_s: float
                     ) -> tuple[Mode | None, QuorumAnswer | None, str | None]:
        addresses = [brokers[b] for b in sorted(brokers)]
        self._order = [a for a in self._order if a in addresses] + \
            [a for a in addresses if a not in self._order]
        deadline = time.monotonic() + timeout_s
        mode: Mode | None = None
        error: str | None = None
        for address in list(self._order):
            left = deadline - time.monotonic()
            if left < 0.05:
                break
            link = self._link(address)
            try:
                mode = _mode(link.api_versions(left))
                answer = ask_quorum(link, max(0.05, deadline - time.monotonic()))
            except NotKRaft as exc:
                return "zookeeper", None, str(exc)
            except (*NO_ANSWER, KinspectError) as exc:
                error = said(exc)
                self._order.remove(address)
                self._order.append(address)
                continue
            self._order.remove(address)
            self._order.insert(0, address)
            return "kraft", answer, None
        return mode, None, error

    def _ask_controller(self, node: int, address: str, timeout_s: float
                        ) -> tuple[ControllerAnswer, QuorumAnswer | None]:
        try:
            answer = ask_quorum(self._link(address), timeout_s)
        except QuorumError as exc:
            if exc.code == NOT_LEADER_OR_FOLLOWER:
                return ControllerAnswer(node, address, "follower"), None
            return ControllerAnswer(node, address, "error", error=str(exc)), None
        except (*NO_ANSWER, KinspectError) as exc:
            return ControllerAnswer(node, address, "unreachable", error=said(exc)), None
        if answer.leader_id != node:  # it answered for another: it does not lead
            return ControllerAnswer(node, address, "follower"), answer
        return ControllerAnswer(node, address, "leader", answer.leader_epoch), answer
