"""Consumer groups, asked in a process of their own.

librdkafka's AdminClient can abort the whole process when a DescribeConsumerGroups or
ListConsumerGroupOffsets response comes back after its request timed out (an assertion in
rd_kafka_enq_once_del_source_return, librdkafka issue #4605, open for 2.x; seen here while a
broker was isolated). A TUI must not die of a network fault it is there to show, so the group
queries run in this small process: it prints one JSON line per poll, and the caller
(groups_watch.GroupsWatch) starts it again if it dies.

Lag in time is the age of the next record a group will consume: the process reads the one record
at each committed offset that is behind (a consumer assigned to it, never joining or committing)
and reports its timestamp. An offset's record never changes, so each is read once and kept while
the group stays there: a stopped consumer costs one read per partition.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

GROUP_AUTHORIZATION_FAILED = 30
MAX_GROUPS = 200  # consumer groups described per poll (one offsets request each)
MAX_READS = 1000  # records read per poll for their timestamps (the rest wait for the next)
Position = tuple[str, int, int]  # topic, partition, offset


def _result(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


@dataclass(frozen=True)
class GroupAnswer:
    """One group as the probe saw it: its state, members, committed offsets and, once read,
    the timestamp of the record at each (`next_ts`)."""

    state: str
    members: int
    committed: tuple[Position, ...]
    next_ts: tuple[Position, ...] | None = None  # (topic, partition, ms); None: not read

    def to_json(self) -> JsonObject:
        out: JsonObject = {"state": self.state, "members": self.members,
                           "committed": [list(c) for c in self.committed]}
        if self.next_ts is not None:
            out["next_ts"] = [list(n) for n in self.next_ts]
        return out


@dataclass(frozen=True)
class ProbeAnswer:
    """One poll: the groups listed, the views of those that answered, why others were refused
    (None: none was asked)."""

    listed: tuple[str, ...]
    groups: Mapping[str, GroupAnswer]
    refused: Mapping[str, str] | None = None

    def to_json(self) -> JsonObject:
        """The probe's line, as groups_watch.read_probe_line reads it."""
        out: JsonObject = {"listed": list(self.listed),
                           "groups": {gid: g.to_json() for gid, g in self.groups.items()}}
        if self.refused is not None:
            out["refused"] = dict(self.refused)
        return out


def read_groups(admin: AdminClient, timeout_s: float) -> ProbeAnswer:
    """The groups listed and the views of up to MAX_GROUPS of them; a listed group whose
    coordinator did not answer in time is listed without a view."""
    listing = _result(admin.list_consumer_groups(request_timeout=timeout_s), timeout_s)
    ids = sorted(g.group_id for g in listing.valid)[:MAX_GROUPS]
    if not ids:
        return ProbeAnswer((), {})
    described = admin.describe_consumer_groups(ids, request_timeout=timeout_s)
    offsets = {gid: admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(gid)], request_timeout=timeout_s)[gid] for gid in ids}
    out: dict[str, GroupAnswer] = {}
    refused: dict[str, str] = {}
    for gid in ids:
        try:
            description = _result(described[gid], timeout_s)
            committed = _result(offsets[gid], timeout_s).topic_partitions or []
        except KafkaException as exc:
            if _refused(exc):  # listed (Describe on the cluster) but not describable
                refused[gid] = "no Describe permission on the group: its state and lag unknown"
            continue
        except TimeoutError:
            continue
        state = getattr(description.state, "name", str(description.state)).lower()
        positions = tuple((tp.topic, tp.partition, tp.offset) for tp in committed
                          if tp.offset >= 0)
        out[gid] = GroupAnswer(state, len(description.members), positions)
    return ProbeAnswer(tuple(ids), out, refused)


class NextRecords:
    """The timestamp of the record at each committed offset (the next one a group consumes),
    read with a consumer that is only ever assigned: it joins no group and commits nothing."""

    def __init__(self, settings: Mapping[str, object]) -> None:
        self._settings = {**settings, "group.id": "kinspect-lag-probe",
                          "enable.auto.commit": False, "enable.partition.eof": True,
                          "max.partition.fetch.bytes": 65536, "fetch.wait.max.ms": 100}
        self._made: Consumer | None = None
        # None: nothing to read there (caught up) or not ours to read (no Read on the topic)
        self._known: dict[Position, int | None] = {}

    @property
    def _consumer(self) -> Consumer:
        """Made at the first read, not before: a consumer with a group.id looks up its
        coordinator at once, and that FindCoordinator makes a cluster without consumer groups
        create __consumer_offsets (an inspector must change nothing). There is a read only
        where a group has committed offsets, so the topic is there already."""
        if self._made is None:
            self._made = Consumer(self._settings)
        return self._made

    def timestamps(self, wanted: list[Position], budget_s: float) -> dict[Position, int]:
        """Each position's record timestamp, where known (the rest: next poll)."""
        self._known = {p: ts for p, ts in self._known.items() if p in set(wanted)}
        todo = [p for p in wanted if p not in self._known][:MAX_READS]
        if todo:
            self._read(todo, budget_s)
        return {p: ts for p in wanted if (ts := self._known.get(p)) is not None}

    def _read(self, todo: list[Position], budget_s: float) -> None:
        pending = {(t, p): o for t, p, o in todo}
        self._consumer.assign([TopicPartition(t, p, o) for t, p, o in todo])
        deadline = time.monotonic() + budget_s
        try:
            while pending and time.monotonic() < deadline:
                for message in self._consumer.consume(len(pending), timeout=0.2):
                    key = (str(message.topic()), int(message.partition() or 0))
                    offset = pending.get(key)
                    if offset is None:
                        continue
                    error = message.error()
                    if error is not None:  # caught up, or no Read on the topic: not asked again
                        if error.code() in (KafkaError._PARTITION_EOF,
                                            KafkaError.TOPIC_AUTHORIZATION_FAILED):
                            self._known[(*key, offset)] = None
                            del pending[key]
                        continue
                    _kind, ts = message.timestamp()
                    self._known[(*key, offset)] = ts if ts >= 0 else None
                    del pending[key]
        finally:
            self._consumer.unassign()

    def close(self) -> None:
        if self._made is not None:
            self._made.close()


def _refused(exc: KafkaException) -> bool:
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.code() == GROUP_AUTHORIZATION_FAILED


def with_timestamps(answer: ProbeAnswer, records: NextRecords, budget_s: float
                    ) -> ProbeAnswer:
    """The answer with each group's `next_ts`: (topic, partition, ms) of the record at each
    committed offset that has one (a caught-up partition has none yet)."""
    wanted = sorted({c for g in answer.groups.values() for c in g.committed})
    found = records.timestamps(wanted, budget_s)
    groups = {gid: replace(g, next_ts=tuple((t, p, found[(t, p, o)]) for t, p, o in g.committed
                                            if (t, p, o) in found))
              for gid, g in answer.groups.items()}
    return replace(answer, groups=groups)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kinspect-groups")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--parent", type=int)
    args = parser.parse_args(argv)
    from kinspect.clients.kafka import client_config

    extra = json.loads(sys.stdin.read() or "{}")
    settings, _auth = client_config({"bootstrap.servers": args.bootstrap,
                                     "socket.timeout.ms": int(args.timeout * 1000), **extra})
    admin = AdminClient(settings)
    records = NextRecords(settings)
    while args.parent is None or os.getppid() == args.parent:
        began = time.monotonic()
        try:
            answer = with_timestamps(read_groups(admin, args.timeout), records,
                                     min(1.0, args.timeout))
            print(json.dumps(answer.to_json()), flush=True)
        except (KafkaException, TimeoutError):
            pass  # nothing this time: the caller keeps the last answer
        except BrokenPipeError:
            return 0
        time.sleep(max(0.05, args.interval - (time.monotonic() - began)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
