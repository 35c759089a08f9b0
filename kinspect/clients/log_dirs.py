"""A broker's log directories and every replica in them: DescribeLogDirs (API key 35).

Sizes, offline dirs (a failed or full disk) and replicas being moved between dirs, which
only the broker itself knows.

Metadata shows only the topics the asking user may describe; the broker's log dirs hold every
partition it hosts, so a topic on disk but missing from the metadata is hidden from this user.
Only one broker answers for its own disks: ask each broker. kafka-python ships v0 only (which
Kafka 4.0 removed, and whose request schema has partitions as one int32), so v1 (v0's layout)
and v4 (flexible; the refusal said as an error code, v3+) are declared here with its types,
exactly as Kafka's DescribeLogDirsRequest.json / Response.json lay them out. Below v3 a refusal
is an answer with no log dir at all, which a broker never has otherwise.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.errors import ClusterAuthorizationFailedError
from kafka.protocol.api import Request, Response
from kafka.protocol.types import (
    Array,
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
)

from kinspect.clients.quorum import NO_ANSWER
from kinspect.clients.reassignments import broker_name, error_name
from kinspect.clients.wire import AsBytes, BrokerLink, told
from kinspect.errors import said
from kinspect.model.facts import NOT_ANSWERED, Unknown
from kinspect.model.views import BrokerLogDirs, LogDir, LogDirReplica

__all__ = ["DESCRIBE_LOG_DIRS", "DescribeLogDirsRequest", "DescribeLogDirsResponse",
           "ask_log_dirs", "log_dirs_of", "log_dirs_told"]

DESCRIBE_LOG_DIRS = 35
CLUSTER_AUTHORIZATION_FAILED = ClusterAuthorizationFailedError.errno
REFUSED = "no Describe permission on the cluster: log dirs unknown"


class DescribeLogDirsResponse_v1(Response):  # type: ignore[misc]  # kafka-python is untyped
    API_KEY = DESCRIBE_LOG_DIRS
    API_VERSION = 1
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("results", Array(
            ("error_code", Int16),
            ("log_dir", String("utf-8")),
            ("topics", Array(
                ("name", String("utf-8")),
                ("partitions", Array(
                    ("partition_index", Int32),
                    ("partition_size", Int64),
                    ("offset_lag", Int64),
                    ("is_future_key", Boolean))))))))


class DescribeLogDirsResponse_v4(Response):  # type: ignore[misc]
    """Flexible; v3's top-level error code, v4's volume sizes."""

    API_KEY = DESCRIBE_LOG_DIRS
    API_VERSION = 4
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("results", CompactArray(
            ("error_code", Int16),
            ("log_dir", CompactString("utf-8")),
            ("topics", CompactArray(
                ("name", CompactString("utf-8")),
                ("partitions", CompactArray(
                    ("partition_index", Int32),
                    ("partition_size", Int64),
                    ("offset_lag", Int64),
                    ("is_future_key", Boolean),
                    ("tags", TaggedFields))),
                ("tags", TaggedFields))),
            ("total_bytes", Int64),
            ("usable_bytes", Int64),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class DescribeLogDirsRequest_v1(Request):  # type: ignore[misc]
    API_KEY = DESCRIBE_LOG_DIRS
    API_VERSION = 1
    RESPONSE_TYPE = DescribeLogDirsResponse_v1
    SCHEMA = Schema(
        ("topics", Array(  # null: every partition of the broker
            ("topic", String("utf-8")),
            ("partitions", Array(Int32)))))


class DescribeLogDirsRequest_v4(Request):  # type: ignore[misc]
    API_KEY = DESCRIBE_LOG_DIRS
    API_VERSION = 4
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeLogDirsResponse_v4
    SCHEMA = Schema(
        ("topics", CompactArray(
            ("topic", CompactString("utf-8")),
            ("partitions", CompactArray(Int32)),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


DescribeLogDirsRequest: dict[int, type[Any]] = {1: DescribeLogDirsRequest_v1,
                                                4: DescribeLogDirsRequest_v4}
DescribeLogDirsResponse: dict[int, type[Any]] = {1: DescribeLogDirsResponse_v1,
                                                 4: DescribeLogDirsResponse_v4}

def log_dirs_of(raw: bytes, version: int, broker: int, asked: str) -> BrokerLogDirs | Unknown:
    """A DescribeLogDirs answer's bytes (v1 or v4) as the broker's log dirs and replicas, read
    here rather than by kafka-python's decode: at 10,000 partitions its field-by-field reading
    was a tenth of a snapshot. An answer cut short or not ending where it should is refused
    (ValueError, as a broken connection is)."""
    try:
        reader = _Reader(raw, flexible=version >= 4)
        code, results = reader.answer()
    except (struct.error, IndexError) as exc:
        raise ValueError(f"a DescribeLogDirs v{version} answer cut short: {exc}") from None
    return log_dirs_told(code, results, broker, asked)


def log_dirs_told(code: int, results: Any, broker: int, asked: str) -> BrokerLogDirs | Unknown:
    """An answer's error code and rows (as kafka-python's decode lays them out, and `_Reader`
    reads them) as the broker's log dirs and replicas. A replica being moved between
    its dirs has its current log in `replicas` and the copy being made in `future`. An offline
    dir (a failed or full disk) is kept with its error: the broker answers for its other dirs,
    and what the offline one held is not told."""
    refusal = _refusal(code, results, asked)
    if refusal is not None:
        return refusal
    dirs: list[LogDir] = []
    replicas: dict[tuple[str, int], LogDirReplica] = {}
    future: dict[tuple[str, int], LogDirReplica] = {}
    for row in results:
        dirs.append(_log_dir(row))
        for topic_row in row[2] or ():
            _file_replicas(topic_row, broker, row[1], replicas, future)
    return BrokerLogDirs(broker, tuple(sorted(dirs, key=lambda d: d.path)), replicas, future)


def _refusal(code: int, results: Any, asked: str) -> Unknown | None:
    """What an answer that tells no log dir says instead; None for one that tells them. Below
    v3 a refusal is an answer with no dir at all, which a broker never has otherwise."""
    if code == CLUSTER_AUTHORIZATION_FAILED:
        return Unknown(REFUSED)
    if code:
        return Unknown(f"{asked} answered DescribeLogDirs with {error_name(code)}")
    if not results:
        return Unknown(REFUSED)
    return None


def _log_dir(row: tuple[Any, ...]) -> LogDir:
    """A dir's row: an offline one says its error; v4 tells the volume's sizes."""
    error = None
    if row[0]:
        error = error_name(row[0])
    total = usable = None
    if len(row) > 4:
        total, usable = told(row[3]), told(row[4])  # -1: not told
    return LogDir(row[1], error, total, usable)


def _file_replicas(topic_row: tuple[str, Rows], broker: int, log_dir: str,
                   replicas: dict[tuple[str, int], LogDirReplica],
                   future: dict[tuple[str, int], LogDirReplica]) -> None:
    """A topic's replicas in this dir, each under `future` when it is the copy being made
    (the hot loop: one row per replica the broker holds)."""
    topic = topic_row[0]
    for index, size, lag, is_future, *_tags in topic_row[1] or ():
        into = replicas
        if is_future:
            into = future
        into[(topic, index)] = LogDirReplica(broker, log_dir, size, lag, is_future)


_PARTITION = struct.Struct(">iqq?")  # index, size, offset lag, is future
_INT16, _INT32, _VOLUME = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">qq")

Rows = list[tuple[Any, ...]]


class _Reader:
    """A cursor over one DescribeLogDirs answer, in either of its encodings: v1's fixed-width
    lengths, or v4's flexible one (varint lengths + 1, null as 0, tagged fields after each
    structure), laid out as in Kafka's DescribeLogDirsResponse.json."""

    def __init__(self, raw: bytes, flexible: bool) -> None:
        self.raw, self.at, self.flexible = raw, 0, flexible

    def answer(self) -> tuple[int, Rows]:
        """(the top-level error code, each dir's row as kafka-python's decode gives it)."""
        self.at = 4  # past the throttle time
        code = 0  # v1 says a refusal by telling no dir
        if self.flexible:
            code = self._int16()
        results = [self._dir() for _ in range(self._count())]
        self._tags()
        if self.at != len(self.raw):
            raise ValueError(f"a DescribeLogDirs answer ends at byte {self.at}, "
                             f"not {len(self.raw)}")
        return code, results

    def _dir(self) -> tuple[Any, ...]:
        error, log_dir = self._int16(), self._string()
        topics = [self._topic() for _ in range(self._count())]
        if not self.flexible:
            return error, log_dir, topics
        total, usable = _VOLUME.unpack_from(self.raw, self.at)
        self.at += _VOLUME.size
        self._tags()
        return error, log_dir, topics, total, usable

    def _topic(self) -> tuple[str, Rows]:
        name = self._string()
        raw, read, size, rows = self.raw, _PARTITION.unpack_from, _PARTITION.size, []
        for _ in range(self._count()):  # the hot loop: one row per replica the broker holds
            rows.append(read(raw, self.at))
            self.at += size
            if self.flexible:
                if raw[self.at] == 0:  # no tagged fields, as brokers send them today
                    self.at += 1
                else:
                    self._tags()
        self._tags()
        return name, rows

    def _int16(self) -> int:
        (value,) = _INT16.unpack_from(self.raw, self.at)
        self.at += 2
        return int(value)

    def _uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.raw[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("a DescribeLogDirs answer with a varint over 5 bytes")

    def _count(self) -> int:
        """An array's length; a null array reads as empty."""
        if self.flexible:
            return max(self._uvarint() - 1, 0)
        (value,) = _INT32.unpack_from(self.raw, self.at)
        self.at += 4
        return max(int(value), 0)

    def _string_length(self) -> int:
        """A string's length in bytes; below 0 for null."""
        if self.flexible:
            return self._uvarint() - 1
        return self._int16()

    def _string(self) -> str:
        length = self._string_length()
        if length < 0:
            return ""
        text = self.raw[self.at:self.at + length]
        if len(text) != length:
            raise ValueError("a DescribeLogDirs answer cut short in a string")
        self.at += length
        return text.decode()

    def _tags(self) -> None:
        """Skip a flexible structure's tagged fields (none in v1)."""
        if not self.flexible:
            return
        for _ in range(self._uvarint()):
            self._uvarint()  # the tag
            size = self._uvarint()  # read before `self.at +=` reads self.at
            self.at += size


class _AnswerBytes_v1(AsBytes, DescribeLogDirsResponse_v1):
    pass


class _AnswerBytes_v4(AsBytes, DescribeLogDirsResponse_v4):
    pass


class _EveryPartition_v1(DescribeLogDirsRequest_v1):
    RESPONSE_TYPE = _AnswerBytes_v1


class _EveryPartition_v4(DescribeLogDirsRequest_v4):
    RESPONSE_TYPE = _AnswerBytes_v4


def _every_partition(version: int) -> Any:
    """The request for all the broker's partitions (topics null), answered as its bytes."""
    if version >= 4:
        return _EveryPartition_v4(topics=None, tags={})
    return _EveryPartition_v1(topics=None)


def ask_log_dirs(link: BrokerLink, timeout_s: float) -> BrokerLogDirs | Unknown:
    """This broker's log dirs and every replica it holds (link.broker_id must be set: the
    answer is about it). Never raises: no answer or a refusal is an Unknown with its reason."""
    asked = broker_name(link)
    if link.broker_id is None:
        return Unknown(f"{asked}: its broker id is not known, so its log dirs are not asked")
    try:
        low, high = link.api_versions(timeout_s).get(DESCRIBE_LOG_DIRS, (0, -1))
        version = 1
        if high >= 4:
            version = 4
        if not low <= version <= high:
            return Unknown(f"{asked} takes no DescribeLogDirs version kinspect speaks")
        raw = link.ask(_every_partition(version), timeout_s)
        return log_dirs_of(raw, version, link.broker_id, asked)
    except NO_ANSWER as exc:
        return Unknown(f"{asked} {NOT_ANSWERED} DescribeLogDirs: {said(exc)}")
