"""Consumer groups, asked in a process of their own.

librdkafka's AdminClient can abort the whole process when a DescribeConsumerGroups or
ListConsumerGroupOffsets response comes back after its request timed out (an assertion in
rd_kafka_enq_once_del_source_return, librdkafka issue #4605, open for 2.x; seen here while a
broker was isolated). A TUI must not die of a network fault it is there to show, so the group
queries run in this small process: it prints one JSON line per poll, and the caller
(GroupsWatch) starts it again if it dies.

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
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

if TYPE_CHECKING:  # the probe process never needs the model (50 ms of imports at its start)
    from kinspect.model import GroupView

GROUP_AUTHORIZATION_FAILED = 30
MAX_GROUPS = 200  # consumer groups described per poll (one offsets request each)
MAX_READS = 1000  # records read per poll for their timestamps (the rest wait for the next)
Position = tuple[str, int, int]  # topic, partition, offset
RESTART_PAUSE_S = 2.0


def _result(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


def read_groups(admin: AdminClient, timeout_s: float) -> dict[str, Any]:
    """{"listed": [ids], "groups": {group: {state, members, committed: [[topic, partition,
    offset], …]}}} of up to MAX_GROUPS groups; a listed group whose coordinator did not answer
    in time is listed without a view."""
    listing = _result(admin.list_consumer_groups(request_timeout=timeout_s), timeout_s)
    ids = sorted(g.group_id for g in listing.valid)[:MAX_GROUPS]
    if not ids:
        return {"listed": [], "groups": {}}
    described = admin.describe_consumer_groups(ids, request_timeout=timeout_s)
    offsets = {gid: admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(gid)], request_timeout=timeout_s)[gid] for gid in ids}
    out: dict[str, Any] = {}
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
        out[gid] = {"state": state, "members": len(description.members),
                    "committed": [[tp.topic, tp.partition, tp.offset] for tp in committed
                                  if tp.offset >= 0]}
    return {"listed": ids, "groups": out, "refused": refused}


class NextRecords:
    """The timestamp of the record at each committed offset (the next one a group consumes),
    read with a consumer that is only ever assigned: it joins no group and commits nothing."""

    def __init__(self, settings: dict[str, Any]) -> None:
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


def with_timestamps(answer: dict[str, Any], records: NextRecords, budget_s: float
                    ) -> dict[str, Any]:
    """The answer with each group's `next_ts`: [[topic, partition, ms], …] of the record at
    each committed offset that has one (a caught-up partition has none yet)."""
    wanted = sorted({(t, p, o) for g in answer["groups"].values() for t, p, o in g["committed"]})
    found = records.timestamps(wanted, budget_s)
    for group in answer["groups"].values():
        group["next_ts"] = [[t, p, found[(t, p, o)]] for t, p, o in group["committed"]
                            if (t, p, o) in found]
    return answer


def parse_groups(line: str) -> tuple[list[str], dict[str, GroupView], dict[str, str]]:
    """(the groups listed, the views of those that answered, why the others were refused)
    from one line of the probe."""
    from kinspect.model import GroupView

    data = json.loads(line)
    views = {gid: GroupView(gid, str(g["state"]), int(g["members"]),
                            {(str(t), int(p)): int(o) for t, p, o in g["committed"]},
                            {(str(t), int(p)): int(ts) for t, p, ts in g.get("next_ts", [])})
             for gid, g in data["groups"].items()}
    refused = {str(gid): str(why) for gid, why in (data.get("refused") or {}).items()}
    return [str(gid) for gid in data["listed"]], views, refused


class GroupsWatch:
    """Runs the probe process, keeps its last answer, starts it again when it dies."""

    def __init__(self, bootstrap: str, config: dict[str, Any], interval_s: float = 1.0,
                 timeout_s: float = 3.0, on_change: Callable[[], None] | None = None) -> None:
        self.bootstrap, self.config = bootstrap, config
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self._on_change = on_change or (lambda: None)
        self._lock = threading.Lock()
        self._groups: dict[str, GroupView] = {}
        self._refused: dict[str, str] = {}
        self.answered = threading.Event()
        self.restarts = 0
        self._stop = threading.Event()
        self._process: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kinspect-groups", daemon=True)
        self._thread.start()

    def view(self) -> dict[str, GroupView]:
        with self._lock:
            return dict(self._groups)

    def refused(self) -> dict[str, str]:
        """Groups listed that this user may not describe, and why."""
        with self._lock:
            return dict(self._refused)

    def stop(self) -> None:
        self._stop.set()
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
        if self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        import subprocess

        while not self._stop.is_set():
            self._process = process = subprocess.Popen(
                [sys.executable, "-m", "kinspect.clients.groups", "--bootstrap", self.bootstrap,
                 "--interval", str(self.interval_s), "--timeout", str(self.timeout_s),
                 "--parent", str(os.getpid())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(self.config))
            process.stdin.close()
            for line in process.stdout:
                self._take(line)
            process.wait()
            if not self._stop.wait(RESTART_PAUSE_S):
                self.restarts += 1

    def _take(self, line: str) -> None:
        try:
            listed, views, refused = parse_groups(line)
        except (ValueError, KeyError, TypeError):
            return
        with self._lock:
            # A listed group whose coordinator did not answer in time keeps its last view: lag
            # is reported as last known rather than dropped mid-failover; a group no longer
            # listed is gone.
            self._groups = {gid: views[gid] if gid in views else self._groups[gid]
                            for gid in listed if gid in views or gid in self._groups}
            self._refused = refused
        self.answered.set()
        self._on_change()


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
            print(json.dumps(answer), flush=True)
        except (KafkaException, TimeoutError):
            pass  # nothing this time: the caller keeps the last answer
        except BrokenPipeError:
            return 0
        time.sleep(max(0.05, args.interval - (time.monotonic() - began)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
