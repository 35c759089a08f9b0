"""A leader change → kinspect's event, on a ZooKeeper lab and a KRaft lab in one run, with the
brokers' CPU cost of watching.

Each mode gets a fresh process lab with a 1,000-partition topic beside the measured one. The
partition's leader moves 100 times (--changes) one after another (its replica order rotated by
AlterPartitionReassignments, then a preferred election); each change is timed from the
election request sent to kinspect's leader_changed event (an upper bound: the controller
commits after the request arrives), beside an AdminClient-only poller asking every 1 s. In
ZooKeeper mode kinspect follows the watches; in KRaft mode, which has none, its fast poll of
each broker's metadata (sources/admin.py). Then the brokers' CPU over 30 s: nobody watching,
then kinspect's observer watching.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.cimpl import NewTopic
from kafka.protocol.admin import AlterPartitionReassignmentsRequest_v0

from bench.lab import bench_lab, describe
from kinspect.clients.kafka import quiet_admin
from kinspect.clients.wire import BrokerLink
from kinspect.model import ClusterSnapshot, Event
from kinspect.sources.observer import Observer, now_ms

TOPIC, BIG_TOPIC, BIG_PARTITIONS = "bench-change", "bench-1k", 1000
CHANGES, WARMUP, CPU_WINDOW_S = 100, 3, 30.0  # 100: p99 is the worst but one
TICKS = os.sysconf("SC_CLK_TCK")


def create(bootstrap: str, topics: dict[str, int]) -> None:
    """The topics at replication factor 3, once every partition has a leader."""
    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 30000})
    futures = admin.create_topics([NewTopic(t, n, 3) for t, n in topics.items()],
                                  request_timeout=300, operation_timeout=300)
    for future in futures.values():
        future.result()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        meta = admin.list_topics(timeout=30).topics
        if all(t in meta and len(meta[t].partitions) == n
               and all(p.leader >= 0 for p in meta[t].partitions.values())
               for t, n in topics.items()):
            return
        time.sleep(1.0)
    raise SystemExit("bench: the topics never got all their leaders")


class AdminPoller(threading.Thread):
    """What an AdminClient-only tool sees: metadata every second, nothing in between."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.admin = quiet_admin(bootstrap)
        self.topic = topic
        self.seen: dict[int, int] = {}  # leader -> first time seen (ms), reset per round
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(1.0):
            meta = self.admin.list_topics(self.topic, timeout=5)
            leader = meta.topics[self.topic].partitions[0].leader
            self.seen.setdefault(leader, now_ms())


class Mover:
    """Moves the measured partition's leadership to the next replica, as an operator would."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = quiet_admin(bootstrap)
        self.bootstrap = bootstrap

    def state(self) -> tuple[int, list[int]]:
        part = self.admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]
        return part.leader, list(part.replicas)

    def move(self) -> tuple[int, int]:
        """Rotate the replica order, elect the preferred: (new leader, ms the election was asked)."""
        leader, replicas = self.state()
        rotated = replicas[replicas.index(leader) + 1:] + replicas[:replicas.index(leader) + 1]
        self._reassign(rotated)
        asked = now_ms()
        self.admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result()
        return rotated[0], asked

    def _reassign(self, replicas: list[int]) -> None:
        """AlterPartitionReassignments (to the controller; a KRaft broker forwards it), then
        wait until the metadata shows the new order: same replicas, nothing to copy."""
        meta = self.admin.list_topics(timeout=10)
        controller = meta.brokers[meta.controller_id]
        link = BrokerLink(f"{controller.host}:{controller.port}")
        try:
            link.ask(AlterPartitionReassignmentsRequest_v0(
                timeout_ms=30000, topics=[(TOPIC, [(0, replicas, {})], {})], tags={}), 30)
        finally:
            link.close()
        deadline = time.monotonic() + 30
        while self.state()[1] != replicas and time.monotonic() < deadline:
            time.sleep(0.02)


def change_latency(lab: dict[str, Any], changes: int = CHANGES) -> dict[str, list[float]]:
    bootstrap = lab["bootstrap"]
    events: dict[int, int] = {}
    arrived = threading.Condition()

    def on_update(_snapshot: ClusterSnapshot, new_events: list[Event]) -> None:
        with arrived:
            for event in new_events:
                new = event.fields.get("new")
                if event.kind == "leader_changed" and event.partition == f"{TOPIC}-0" \
                        and isinstance(new, int):
                    events.setdefault(new, event.ts)
            arrived.notify_all()

    observer = Observer(bootstrap, lab.get("zookeeper"),
                        controllers=lab_controllers(lab))
    observer.subscribe(on_update)
    observer.start()
    observer.wait_ready(timeout_s=60)
    poller = AdminPoller(bootstrap, TOPIC)
    poller.start()
    mover = Mover(bootstrap)
    time.sleep(3.0)  # the KRaft mode learnt, the watches armed, the poller's first look
    ours: list[float] = []
    polled: list[float] = []
    try:
        for round_ in range(changes + WARMUP):
            with arrived:
                events.clear()
            poller.seen = {}
            target, asked = mover.move()
            with arrived:
                arrived.wait_for(lambda t=target: t in events, timeout=10)  # type: ignore[misc]
            deadline = time.monotonic() + 3
            while target not in poller.seen and time.monotonic() < deadline:
                time.sleep(0.05)
            if target not in events or target not in poller.seen:
                side = "kinspect" if target not in events else "the poller"
                print(f"bench: round {round_}: {side} missed the change to {target}",
                      file=sys.stderr)
                continue
            if round_ >= WARMUP:
                ours.append(events[target] - asked)
                polled.append(poller.seen[target] - asked)
    finally:
        poller.stop_flag.set()
        observer.stop()
    return {"ours_ms": ours, "poller_ms": polled}


def lab_controllers(lab: dict[str, Any]) -> dict[int, str]:
    return {int(n["node_id"]): n["controller_address"] for n in lab["nodes"]
            if "node_id" in n and "controller_address" in n}


def broker_cpu_s(lab: dict[str, Any], seconds: float) -> float:
    """CPU seconds the broker JVMs used over `seconds` (user + system, from /proc)."""
    pids = [n["pid"] for n in lab["nodes"] if n["role"] == "broker" and n.get("pid")]

    def used() -> float:
        total = 0
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / TICKS

    before = used()
    time.sleep(seconds)
    return used() - before


def cpu_cost(lab: dict[str, Any]) -> dict[str, float]:
    idle = broker_cpu_s(lab, CPU_WINDOW_S)
    observer = Observer(lab["bootstrap"], lab.get("zookeeper"), controllers=lab_controllers(lab))
    observer.start()
    try:
        observer.wait_ready(timeout_s=60)
        watched = broker_cpu_s(lab, CPU_WINDOW_S)
    finally:
        observer.stop()
    return {"idle_s": idle, "watched_s": watched}


def measure(mode: str, changes: int) -> dict[str, Any]:
    with bench_lab(reuse=False, up_args=("--mode", mode)) as lab:
        create(lab["bootstrap"], {TOPIC: 1, BIG_TOPIC: BIG_PARTITIONS})
        latency = change_latency(lab, changes)
        print(f"bench: {mode}: ours {describe(latency['ours_ms'])}; poller "
              f"{describe(latency['poller_ms'])}", file=sys.stderr)
        return {**latency, **cpu_cost(lab)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modes", default="zookeeper,kraft")
    parser.add_argument("--changes", type=int, default=CHANGES,
                        help=f"leader changes timed per mode (default {CHANGES})")
    args = parser.parse_args(argv)
    results = {mode: measure(mode, args.changes) for mode in args.modes.split(",")}
    print(f"\n## A leader change → kinspect's event ({BIG_PARTITIONS + 1:,} partitions, "
          f"{args.changes} changes, from the election asked, ms)")
    print("| mode | kinspect | AdminClient poller, 1 s | brokers' CPU over "
          f"{CPU_WINDOW_S:.0f} s: idle → kinspect watching |")
    print("|---|---|---|---|")
    for mode, r in results.items():
        print(f"| {mode} | {describe(r['ours_ms'])} | {describe(r['poller_ms'])} | "
              f"{r['idle_s']:.2f} s → {r['watched_s']:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
