"""Ask one broker what *it* holds and believes, over kafka-python's connection and protocol.

librdkafka merges metadata from whichever broker it likes and asks offsets of leaders only, so
two things the workshop wants to show are invisible through it: a leader cut off from
ZooKeeper that still believes it leads (each broker's own metadata), and each replica's own log
end (ListOffsets with the debugging replica id -2, which a follower answers from its own log).
kafka-python's `BrokerConnection` speaks PLAINTEXT, TLS and SASL (PLAIN, SCRAM, OAUTHBEARER with
the profile's token settings: clients/tokens.py) and its request
classes cover every version we use, so the protocol code is theirs, but for one read: the
topics of a Metadata v7 answer, which kafka-python's generic decoder took 1.6 s to read at
100,000 partitions, and the log ends of a ListOffsets v4 answer: `topic_claims` and
`log_ends_of` read just what the model holds, in a fourth of the time or less, and the tests
check both against kafka-python's decode of the same bytes. A `BrokerLink` keeps one connection per broker
between polls: a TLS or SASL handshake per poll would cost more than the questions.
"""

from __future__ import annotations

import hashlib
import io
import selectors
import socket
import ssl
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.conn import BrokerConnection
from kafka.errors import KafkaError
from kafka.protocol.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.offset_for_leader_epoch import OffsetForLeaderEpochRequest

from kinspect.clients.kafka import TLS_FAILED, verify_hint
from kinspect.clients.tokens import OAUTH_KEYS, LibrdkafkaTokens
from kinspect.errors import KinspectError
from kinspect.model import EpochEnd, ReplicaEnd
from kinspect.model.fast_values import fast_init

CLIENT_ID = "kinspect-probe"
DEBUGGING_REPLICA_ID = -2  # ListOffsets: answered from the broker's own log, leader or not
CONSUMER_REPLICA_ID = -1
LATEST = -1
NO_EPOCH = -1
# The newest versions kafka-python and every broker since 2.1 share: v7 of Metadata and v4 of
# ListOffsets have the leader epoch in their answers (in KRaft, the highest epoch any broker
# holds is the controller's newest decision), v3 of OffsetsForLeaderEpoch takes a replica id.
METADATA, LIST_OFFSETS, EPOCHS = MetadataRequest[7], ListOffsetsRequest[4], OffsetForLeaderEpochRequest[3]

TopicPartition = tuple[str, int]
# The largest answer a connection takes: librdkafka's receive.message.max.bytes default.
# kafka-python's own (1 MB) refused a broker's metadata past ~30,000 partitions (3.4 MB at
# 100,000: "Invalid frame length"), and every per-broker question with it.
RECEIVE_MAX_BYTES = 100_000_000


@fast_init
@dataclass(frozen=True, slots=True)
class BrokerClaim:
    """One partition as one broker's metadata cache describes it."""

    leader: int | None  # None: no leader (the wire's -1)
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int = NO_EPOCH  # -1: not said (Metadata before v7)
    offline: tuple[int, ...] = ()  # replicas on a failed log dir (kafka-topics' "Offline:")


@dataclass(frozen=True)
class MetadataAnswer:
    broker_id: int | None  # None when we asked an address and do not know its id
    controller_id: int
    brokers: dict[int, str]
    partitions: dict[TopicPartition, BrokerClaim]


# librdkafka settings (what profiles and -X give) → kafka-python's BrokerConnection settings.
_SETTINGS = {
    "sasl.username": "sasl_plain_username", "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile", "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile", "ssl.key.password": "ssl_password",
}
_IGNORED = ("bootstrap.servers", "client.id", "socket.timeout.ms", "logger", "error_cb")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
PROBES_OFF = "per-replica probes off"  # how a login the probes cannot make is said


def _mechanism(value: Any) -> str:
    mechanism = str(value).upper()
    if mechanism == "GSSAPI":
        raise KinspectError(f"{PROBES_OFF}: GSSAPI (Kerberos): kinspect's direct questions to "
                            "each broker log in with PLAIN, SCRAM or OAUTHBEARER only")
    if mechanism not in _MECHANISMS:
        raise KinspectError(f"{PROBES_OFF}: sasl.mechanism {value} is not supported (one of "
                            f"{', '.join(_MECHANISMS)})")
    return mechanism


def connection_settings(config: Mapping[str, Any] | None) -> dict[str, object]:
    """kafka-python settings for a librdkafka config; KinspectError names what it cannot do."""
    given = config or {}
    out: dict[str, object] = {"security_protocol": "PLAINTEXT"}
    for key, value in given.items():
        if key not in _IGNORED and key not in OAUTH_KEYS:
            out.update(_translate(key, value))
    if out.get("sasl_mechanism") == "OAUTHBEARER":
        out["sasl_oauth_token_provider"] = LibrdkafkaTokens(given)
    return out


def _translate(key: str, value: Any) -> list[tuple[str, object]]:
    """One librdkafka setting in kafka-python's words (none: kafka-python has no use for it)."""
    if key == "security.protocol":
        return [("security_protocol", str(value).upper())]
    if key in ("sasl.mechanism", "sasl.mechanisms"):
        return [("sasl_mechanism", _mechanism(value))]
    if key in _SETTINGS:
        return [(_SETTINGS[key], value)]
    if key == "ssl.endpoint.identification.algorithm":
        return [("ssl_check_hostname", str(value).lower() == "https")]
    if key == "enable.ssl.certificate.verification" and str(value).lower() == "false":
        return [("ssl_check_hostname", False), ("ssl_context", _unverified_context())]
    return []


def _unverified_context() -> Any:
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def tls_failure(address: str, exc: ssl.SSLError, cafile: str | None) -> str:
    """A failed handshake in one line, worded as librdkafka's clients word it (kafka.py)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = str(exc.verify_message or exc.reason or "")
        return (f"{TLS_FAILED} at {address}: certificate verify failed"
                f"{f': {detail}' if detail else ''} ({verify_hint(detail, cafile)})")
    return (f"{TLS_FAILED} at {address}: {exc.reason or exc} (check the ssl.* settings of the "
            "profile or -X)")


FIRST_LOGIN_S = 3.0  # a link's first connection (the AdminClient's own socket timeout)


class BrokerLink:
    """One broker's connection, reconnected when it breaks; `ask` is one request, bounded.
    `last_error` keeps why the last try failed (None once it answered): a refused login or
    TLS handshake, a closed connection, a timeout, so a caller can say why a broker did not
    answer."""

    def __init__(self, address: str, settings: Mapping[str, Any] | None = None,
                 broker_id: int | None = None) -> None:
        self.address, self.broker_id = address, broker_id
        self.settings = dict(settings or {})
        self._conn: BrokerConnection | None = None
        self._lock = threading.Lock()
        self._logged_in = False  # a connection was made once (TLS, SASL and all)
        self.last_error: str | None = None

    def _failed(self, conn: BrokerConnection | None, reason: str) -> ConnectionError:
        """Close, remember the reason and make the error to raise."""
        if conn is not None:
            conn.close()
        self.last_error = reason
        return ConnectionError(reason)

    def _connect(self, timeout_s: float) -> BrokerConnection:
        """The connection, made within `timeout_s`; a link's first within FIRST_LOGIN_S at
        least: a broker just started validates its first OAuth token against the key set it
        fetches then, and a probe's 1 s had run out on it (the question keeps its own time)."""
        if self._conn is not None and self._conn.connected():
            return self._conn
        self.close()
        if not self._logged_in:
            timeout_s = max(timeout_s, FIRST_LOGIN_S)
        host, _, port = self.address.rpartition(":")
        conn = BrokerConnection(host, int(port), socket.AF_UNSPEC, client_id=CLIENT_ID,
                                request_timeout_ms=int(timeout_s * 1000),
                                api_version_auto_timeout_ms=int(timeout_s * 1000),
                                reconnect_backoff_ms=0, node_id=self.broker_id or 0,
                                receive_message_max_bytes=RECEIVE_MAX_BYTES, **self.settings)
        closed: list[str] = []  # kafka-python says why it closed only to close() (and its log)
        close = conn.close

        def noting_close(error: Exception | None = None) -> None:
            if error is not None:
                closed.append(str(error))
            close(error)

        conn.close = noting_close
        try:
            connected = conn.connect_blocking(timeout=timeout_s)
        except KafkaError as exc:  # e.g. a refused login: said as a failed connection
            raise self._failed(conn, f"{self.address}: {exc}") from None
        except ssl.SSLError as exc:  # kafka-python raises all but a closed handshake
            raise self._failed(conn, tls_failure(self.address, exc,
                                                 self.settings.get("ssl_cafile"))) from None
        if not connected:
            why = f" ({closed[-1]}{self._protocol_hint(closed[-1])})" if closed else ""
            raise self._failed(conn, f"{self.address}: cannot connect{why}")
        self._conn, self._logged_in = conn, True
        return conn

    def _protocol_hint(self, reason: str) -> str:
        """A listener of another protocol than ours: how it looks from kafka-python."""
        tls = self.settings.get("security_protocol", "PLAINTEXT") in ("SSL", "SASL_SSL")
        if not tls and "Invalid frame length" in reason:
            return ": a TLS listener answers a plaintext client so; check security.protocol"
        if tls and "closed by server during handshake" in reason:
            return ": a plaintext listener? check security.protocol"
        return ""

    def api_versions(self, timeout_s: float = 1.0) -> dict[int, tuple[int, int]]:
        """API key → (min, max) version, as the broker's ApiVersions answer at connect said (no
        request of its own once connected): which requests it takes, and so its mode."""
        with self._lock:
            versions = dict(self._connect(timeout_s).get_api_versions() or {})
            self.last_error = None
            return versions

    def ask(self, request: Any, timeout_s: float = 1.0) -> Any:
        """Send one request and wait `timeout_s` for its answer, once connected (a reconnect
        takes up to `timeout_s` of its own); OSError/ConnectionError when none comes."""
        with self._lock:
            conn = self._connect(timeout_s)
            deadline = time.monotonic() + timeout_s
            # this question's own limit: the connection's was set by whichever came first
            future = conn.send(request, blocking=True, request_timeout_ms=int(timeout_s * 1000))
            with selectors.DefaultSelector() as selector:
                selector.register(conn._sock, selectors.EVENT_READ)
                while not future.is_done:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.close()
                        self.last_error = f"{self.address}: no answer in {timeout_s:.1f} s"
                        raise TimeoutError(self.last_error)
                    selector.select(min(left, 0.2))
                    for response, done in conn.recv():
                        done.success(response)
            if future.failed():
                self.close()
                raise self._failed(None, f"{self.address}: {future.exception}")
            self.last_error = None
            return future.value

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def told(value: int) -> int | None:
    """A leader id, a time or a size the wire gives as -1 when it has none: None then."""
    if value < 0:
        return None
    return value


def claims_from(response: Any) -> MetadataAnswer:
    """A MetadataResponse (v1, or v7+ with each partition's leader epoch) as each partition's
    claim."""
    brokers = {b[0]: f"{b[1]}:{b[2]}" for b in response.brokers}
    partitions = _claims(response.topics, response.API_VERSION >= 7)
    return MetadataAnswer(None, response.controller_id, brokers, partitions)


def _claims(topics: Any, with_epoch: bool) -> dict[TopicPartition, BrokerClaim]:
    partitions: dict[TopicPartition, BrokerClaim] = {}
    for topic_row in topics:
        topic, parts = topic_row[1], topic_row[3]
        for part in parts:
            partition, leader = part[1], part[2]
            epoch, replicas, isr, offline = (part[3], part[4], part[5], part[6]) if with_epoch \
                else (NO_EPOCH, part[3], part[4], ())  # offline replicas: Metadata v5+
            partitions[(topic, partition)] = BrokerClaim(leader if leader >= 0 else None,
                                                         tuple(replicas), tuple(isr), epoch,
                                                         tuple(offline or ()))
    return partitions


_COUNT, _NAME = struct.Struct(">i"), struct.Struct(">h")
_PARTITION = struct.Struct(">hiiii")  # error, index, leader, leader epoch, replicas' count
_INTS = tuple(struct.Struct(f">{n}i") for n in range(16))


def topic_claims(section: bytes) -> dict[TopicPartition, BrokerClaim]:
    """The topics array of a Metadata v7 answer (the answer's last field) as each partition's
    claim, the same as `_claims` of kafka-python's decode; a null array reads as empty, and an
    answer cut short or not ending where its topics do is refused (ValueError)."""
    try:
        return _topic_claims(section)
    except struct.error as exc:
        raise ValueError(f"a Metadata v7 answer cut short: {exc}") from None


def _ints(count: int) -> struct.Struct:
    """The struct of `count` big-endian int32s (replica lists are short: kept ready)."""
    return _INTS[count] if count < len(_INTS) else struct.Struct(f">{count}i")


def _topic_claims(section: bytes) -> dict[TopicPartition, BrokerClaim]:
    partitions: dict[TopicPartition, BrokerClaim] = {}
    count_at, head_at = _COUNT.unpack_from, _PARTITION.unpack_from
    (topics,), at = count_at(section, 0), 4
    for _ in range(max(topics, 0)):
        (length,) = _NAME.unpack_from(section, at + 2)  # past the topic's error code
        name = section[at + 4:at + 4 + length].decode()
        (count,), at = count_at(section, at + 5 + length), at + 9 + length
        for _ in range(max(count, 0)):
            _error, index, leader, epoch, n = head_at(section, at)
            n = max(n, 0)
            replicas, at = _ints(n).unpack_from(section, at + 18), at + 18 + 4 * n
            (n,) = count_at(section, at)
            n = max(n, 0)
            isr, at = _ints(n).unpack_from(section, at + 4), at + 4 + 4 * n
            (n,) = count_at(section, at)
            n = max(n, 0)
            offline, at = _ints(n).unpack_from(section, at + 4), at + 4 + 4 * n
            partitions[(name, index)] = BrokerClaim(leader if leader >= 0 else None, replicas,
                                                    isr, epoch, offline)
    if at != len(section):
        raise ValueError(f"a Metadata v7 answer's topics end at byte {at}, not {len(section)}")
    return partitions


class AsBytes:
    """An answer kafka-python's connection hands back as its bytes, undecoded: read by
    `claims_of_bytes` (Metadata), `log_ends_of` (ListOffsets) and `log_dirs_of`
    (DescribeLogDirs, clients/log_dirs.py)."""

    @classmethod
    def decode(cls, data: Any) -> bytes:
        return bytes(data.read())


class _MetadataBytes(AsBytes, MetadataResponse[7]):  # type: ignore[misc]
    pass


class _MetadataKeptAsBytes(METADATA):  # type: ignore[misc,valid-type]
    RESPONSE_TYPE = _MetadataBytes


class _ListOffsetsBytes(AsBytes, ListOffsetsResponse[4]):  # type: ignore[misc]
    pass


class _ListOffsetsKeptAsBytes(LIST_OFFSETS):  # type: ignore[misc,valid-type]
    RESPONSE_TYPE = _ListOffsetsBytes

    def _encode_self(self) -> bytes:
        """The request as kafka-python's Schema lays it out, written in one pass: its field by
        field encode of 3,300 partitions took 6 ms, and a snapshot of 10,000 sends nine."""
        return list_offsets_request(self.replica_id, self.isolation_level, self.topics)


_ASKED_HEAD, _ASKED = struct.Struct(">ibi"), struct.Struct(">iiq")  # partition, epoch, spec


def list_offsets_request(replica_id: int, isolation_level: int,
                         topics: list[tuple[str, list[tuple[int, int, int]]]]) -> bytes:
    """A ListOffsets v4 request's body: each topic's partitions with the leader epoch and the
    timestamp (or spec: -1 latest, -2 earliest) asked."""
    out = [_ASKED_HEAD.pack(replica_id, isolation_level, len(topics))]
    pack = _ASKED.pack
    for topic, partitions in topics:
        name = topic.encode()
        out += [_NAME.pack(len(name)), name, _COUNT.pack(len(partitions)),
                b"".join([pack(*asked) for asked in partitions])]
    return b"".join(out)


class _Decoded:
    """The last few distinct topic sections decoded, by their digest. Every broker of a
    healthy cluster answers the same bytes, and an unchanged cluster answers them again at
    every poll: at 10,000 partitions one decode (kafka-python, in Python) costs ~0.1-0.2 s.
    The brokers' answers arrive together: a section already being decoded is waited for, not
    decoded again beside it (three threads decoding the same bytes tripled the cost)."""

    def __init__(self, size: int = 4) -> None:
        self._size, self._lock = size, threading.Lock()
        self._kept: OrderedDict[bytes, dict[TopicPartition, BrokerClaim]] = OrderedDict()
        self._decoding: dict[bytes, threading.Event] = {}

    def claims(self, topics: bytes) -> dict[TopicPartition, BrokerClaim]:
        key = hashlib.blake2b(topics, digest_size=16).digest()
        with self._lock:
            if (kept := self._kept.get(key)) is not None:
                self._kept.move_to_end(key)
                return kept
            underway = self._decoding.get(key)
            if underway is None:
                self._decoding[key] = threading.Event()
        if underway is not None:
            underway.wait()
            with self._lock:
                kept = self._kept.get(key)
            return kept if kept is not None else self.claims(topics)  # the decode failed
        try:
            decoded = topic_claims(topics)
            with self._lock:
                self._kept[key] = decoded
                while len(self._kept) > self._size:
                    self._kept.popitem(last=False)
        finally:
            with self._lock:
                self._decoding.pop(key).set()
        return decoded


_PREFIX = MetadataResponse[7].SCHEMA.fields[:4]  # throttle, brokers, cluster id, controller
_DECODED = _Decoded()


def claims_of_bytes(raw: bytes) -> MetadataAnswer:
    """A Metadata v7 answer's claims: the brokers and controller read each time, the topics
    decoded once per distinct section (shared, so never to be changed by a caller)."""
    buffer = io.BytesIO(raw)
    _throttle, brokers, _cluster, controller = [field.decode(buffer) for field in _PREFIX]
    partitions = _DECODED.claims(raw[buffer.tell():])
    return MetadataAnswer(None, controller, {b[0]: f"{b[1]}:{b[2]}" for b in brokers},
                          partitions)


def _by_topic(keys: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in keys:
        out.setdefault(topic, []).append(partition)
    return out


def ask_claims(link: BrokerLink, timeout_s: float = 1.0) -> MetadataAnswer:
    answer = claims_of_bytes(link.ask(_MetadataKeptAsBytes(topics=None,
                                                          allow_auto_topic_creation=False),
                                      timeout_s))
    return MetadataAnswer(link.broker_id, answer.controller_id, answer.brokers, answer.partitions)


def ask_log_ends(link: BrokerLink, keys: Iterable[TopicPartition], timeout_s: float = 1.0
                 ) -> dict[TopicPartition, ReplicaEnd]:
    """This broker's own log end for each partition it hosts (leader or follower)."""
    return _ask_offsets(link, keys, LATEST, DEBUGGING_REPLICA_ID, timeout_s)


def ask_leader_offsets(link: BrokerLink, keys: Iterable[TopicPartition], spec: int,
                       timeout_s: float = 1.0) -> dict[TopicPartition, ReplicaEnd]:
    """The offset at `spec` (-1: the high watermark, -2: the log start) of each partition this
    broker leads, as it answers a consumer reading uncommitted, with its leader epoch: the
    request librdkafka's AdminClient sends each leader, one per broker and spec. A partition it
    no longer leads is answered with an error and left out (unknown until the next poll)."""
    return _ask_offsets(link, keys, spec, CONSUMER_REPLICA_ID, timeout_s)


def _ask_offsets(link: BrokerLink, keys: Iterable[TopicPartition], spec: int, replica_id: int,
                 timeout_s: float) -> dict[TopicPartition, ReplicaEnd]:
    topics = [(topic, [(p, NO_EPOCH, spec) for p in parts])
              for topic, parts in _by_topic(keys).items()]
    if not topics:
        return {}
    return log_ends_of(link.ask(_ListOffsetsKeptAsBytes(
        replica_id=replica_id, isolation_level=0, topics=topics), timeout_s))


_END = struct.Struct(">ihqqi")  # partition, error, timestamp, offset, leader epoch


def log_ends_of(answer: bytes) -> dict[TopicPartition, ReplicaEnd]:
    """A ListOffsets v4 answer as each partition's offset (a log end, or what was asked) and
    leader epoch (a partition answered with an error or no offset is left out), as
    kafka-python's decode reads it: read here for the same reason as `topic_claims` (20,000
    replicas at 10,000 partitions)."""
    try:
        return _log_ends(answer)
    except struct.error as exc:
        raise ValueError(f"a ListOffsets v4 answer cut short: {exc}") from None


def _log_ends(answer: bytes) -> dict[TopicPartition, ReplicaEnd]:
    out: dict[TopicPartition, ReplicaEnd] = {}
    end_at, count_at = _END.unpack_from, _COUNT.unpack_from
    (topics,), at = count_at(answer, 4), 8  # past the throttle time
    for _ in range(max(topics, 0)):
        (length,) = _NAME.unpack_from(answer, at)
        name = answer[at + 2:at + 2 + length].decode()
        (count,), at = count_at(answer, at + 2 + length), at + 6 + length
        for _ in range(max(count, 0)):
            partition, error, _timestamp, offset, epoch = end_at(answer, at)
            at += _END.size
            if error == 0 and offset >= 0:
                out[(name, partition)] = ReplicaEnd(offset, epoch if epoch >= 0 else None)
    if at != len(answer):
        raise ValueError(f"a ListOffsets v4 answer ends at byte {at}, not {len(answer)}")
    return out


def ask_epoch_ends(link: BrokerLink, asks: Mapping[TopicPartition, Iterable[int]],
                   timeout_s: float = 1.0) -> dict[TopicPartition, dict[int, EpochEnd]]:
    """Where each asked epoch ends in this broker's log (ask the leader: it answers as one)."""
    pending = {key: sorted(set(epochs)) for key, epochs in asks.items() if epochs}
    out: dict[TopicPartition, dict[int, EpochEnd]] = {}
    while pending:  # a partition at most once per request: one epoch of each per round
        round_ = {key: epochs.pop(0) for key, epochs in pending.items()}
        pending = {key: epochs for key, epochs in pending.items() if epochs}
        topics = [(topic, [(p, NO_EPOCH, round_[(topic, p)]) for p in parts])
                  for topic, parts in _by_topic(round_).items()]
        response = link.ask(EPOCHS(replica_id=CONSUMER_REPLICA_ID, topics=topics), timeout_s)
        for topic, parts in response.topics:
            for error, partition, found, end in parts:
                key = (topic, partition)
                if error == 0 and end >= 0 and key in round_:
                    out.setdefault(key, {})[round_[key]] = EpochEnd(found, end)
    return out


def ask_metadata(address: str, timeout: float = 2.0, broker_id: int | None = None,
                 config: Mapping[str, Any] | None = None) -> MetadataAnswer:
    """One broker's own metadata, on a connection of its own (for one-shot callers)."""
    link = BrokerLink(address, connection_settings(config), broker_id)
    try:
        return ask_claims(link, timeout)
    finally:
        link.close()
