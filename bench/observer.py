"""Observer benchmarks: snapshot time at 2,000 partitions; ZooKeeper-mtime → event latency.

The latency run makes 50 leader changes one after another (rotate the replica order through
ZooKeeper's /admin/reassign_partitions, then a preferred election) and measures, for each, the
time from the state znode's mtime (ZooKeeper's clock, this machine) to our leader_changed event,
side by side with an AdminClient-only poller asking every 1 s, the way web UIs do.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.cimpl import NewTopic
from kazoo.client import KazooClient

from bench.lab import bench_lab, describe, kinspect, percentile
from kinspect.clients.kafka import quiet_admin
from kinspect.lab.topics import create_topics
from kinspect.model import ClusterSnapshot, Event
from kinspect.sources.observer import Observer, now_ms

BIG_TOPIC, BIG_PARTITIONS = "bench-2k", 2000
LATENCY_TOPIC, CHANGES, WARMUP = "bench-lat", 50, 3


def snapshot_times(lab: dict[str, Any]) -> dict[str, float]:
    """Wall time of `kinspect snapshot --json` (a fresh process) and of one in-process rebuild."""
    bootstrap, zookeeper = lab["bootstrap"], lab["zookeeper"]
    _create_big_topic(bootstrap)
    cli = []
    for _ in range(3):
        started = time.perf_counter()
        out = kinspect("snapshot", "--json")
        cli.append(time.perf_counter() - started)
        parts = sum(len(t["partitions"]) for t in json.loads(out)["topics"])
    observer = Observer(bootstrap, zookeeper)
    started = time.perf_counter()
    observer.start()
    observer.wait_ready(timeout_s=60)
    first = time.perf_counter() - started
    rebuilds = []
    for _ in range(10):
        started = time.perf_counter()
        observer.build()
        rebuilds.append((time.perf_counter() - started) * 1000)
    observer.stop()
    return {"partitions": parts, "cli_s": sorted(cli)[1], "observer_first_s": first,
            "rebuild_ms": percentile(rebuilds, 50)}


def _create_big_topic(bootstrap: str) -> None:
    """2,000 partitions x 3 replicas take the small-heap lab a while: wait for every leader."""
    admin = quiet_admin(bootstrap)
    if BIG_TOPIC not in admin.list_topics(timeout=10).topics:
        print(f"bench: creating {BIG_TOPIC} ({BIG_PARTITIONS} partitions) …", file=sys.stderr)
        topic = NewTopic(BIG_TOPIC, BIG_PARTITIONS, 3)
        try:
            admin.create_topics([topic], request_timeout=300, operation_timeout=300)[BIG_TOPIC].result()
        except KafkaException as exc:
            print(f"bench: create_topics said {exc}; waiting for the partitions", file=sys.stderr)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        meta = admin.list_topics(BIG_TOPIC, timeout=30).topics.get(BIG_TOPIC)
        if meta and len(meta.partitions) == BIG_PARTITIONS and all(
                p.leader >= 0 for p in meta.partitions.values()):
            return
        time.sleep(1.0)
    raise SystemExit(f"bench: {BIG_TOPIC} never got all its leaders")


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


def leader_latency(lab: dict[str, Any]) -> dict[str, list[float]]:
    bootstrap, zookeeper = lab["bootstrap"], lab["zookeeper"]
    create_topics(bootstrap, {LATENCY_TOPIC: 1})
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=10)
    admin = quiet_admin(bootstrap)
    events: dict[int, int] = {}
    arrived = threading.Condition()

    def on_update(_snapshot: ClusterSnapshot, new_events: list[Event]) -> None:
        with arrived:
            for event in new_events:
                if event.kind == "leader_changed" and event.partition == f"{LATENCY_TOPIC}-0":
                    events.setdefault(int(event.fields["new"]), event.ts)
            arrived.notify_all()

    observer = Observer(bootstrap, zookeeper)
    observer.subscribe(on_update)
    observer.start()
    observer.wait_ready()
    poller = AdminPoller(bootstrap, LATENCY_TOPIC)
    poller.start()
    time.sleep(2.0)  # let the watches settle and the poller take its first look
    rounds = CHANGES + WARMUP
    ours: list[float] = []
    polled: list[float] = []
    state_path = f"/brokers/topics/{LATENCY_TOPIC}/partitions/0/state"
    try:
        for round_ in range(rounds):
            state = json.loads(zk.get(state_path)[0])
            replicas = json.loads(zk.get(f"/brokers/topics/{LATENCY_TOPIC}")[0])["partitions"]["0"]
            leader = state["leader"]
            rotated = replicas[replicas.index(leader) + 1:] + replicas[:replicas.index(leader) + 1]
            target = rotated[0]
            _reassign(zk, rotated)
            with arrived:
                events.clear()
            poller.seen = {}
            futures = admin.elect_leaders(ElectionType.PREFERRED,
                                          [TopicPartition(LATENCY_TOPIC, 0)])
            futures.result()
            mtime = _wait_leader(zk, state_path, target)
            with arrived:
                arrived.wait_for(lambda t=target: t in events, timeout=10)  # type: ignore[misc]
            deadline = time.monotonic() + 3
            while target not in poller.seen and time.monotonic() < deadline:
                time.sleep(0.05)
            if target not in events or target not in poller.seen:
                side = "kinspect" if target not in events else "the poller"
                print(f"bench: round {round_}: {side} missed the change to {target}", file=sys.stderr)
                continue
            if round_ < WARMUP:
                continue
            ours.append(events[target] - mtime)
            if ours[-1] > 100 and observer.zk:
                heard = observer.zk.last_change_ns // 1_000_000 - mtime
                print(f"bench: round {round_}: event {ours[-1]} ms after the znode write "
                      f"(last ZooKeeper notification at +{heard} ms)", file=sys.stderr)
            polled.append(poller.seen[target] - mtime)
            if sys.stderr.isatty():
                print(f"\r  leader change {round_ + 1}/{rounds}", end="", file=sys.stderr)
    finally:
        poller.stop_flag.set()
        observer.stop()
        zk.stop()
    return {"ours_ms": ours, "poller_ms": polled}


def _reassign(zk: KazooClient, replicas: list[int]) -> None:
    """Same replicas, new order: the controller applies it at once and deletes the znode."""
    body = {"version": 1, "partitions": [{"topic": LATENCY_TOPIC, "partition": 0,
                                          "replicas": replicas}]}
    zk.create("/admin/reassign_partitions", json.dumps(body).encode(), makepath=True)
    deadline = time.monotonic() + 30
    while zk.exists("/admin/reassign_partitions") and time.monotonic() < deadline:
        time.sleep(0.02)


def _wait_leader(zk: KazooClient, path: str, leader: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        data, stat = zk.get(path)
        if json.loads(data)["leader"] == leader:
            return int(stat.mtime)
        time.sleep(0.01)
    raise SystemExit(f"bench: leader never moved to {leader}")


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    admin = quiet_admin(bootstrap)
    existing = set(admin.list_topics(timeout=10).topics)
    doomed = [t for t in topics if t in existing]
    for future in admin.delete_topics(doomed, operation_timeout=60).values() if doomed else []:
        future.result()
    deadline = time.monotonic() + 60
    while set(admin.list_topics(timeout=10).topics) & set(doomed) and time.monotonic() < deadline:
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    with bench_lab() as lab:
        delete_topics(lab["bootstrap"], [BIG_TOPIC])  # latency first, on a small cluster
        latency = leader_latency(lab)
        print(f"latency: ours {describe(latency['ours_ms'])}; poller "
              f"{describe(latency['poller_ms'])}", file=sys.stderr)
        sizes = snapshot_times(lab)
    print("\n## Observer")
    print(f"- snapshot with {sizes['partitions']:,} partitions: `kinspect snapshot --json` "
          f"{sizes['cli_s']:.2f} s (median of 3, fresh process); observer first complete "
          f"model {sizes['observer_first_s']:.2f} s; in-process rebuild {sizes['rebuild_ms']:.1f} ms")
    print(f"- ZooKeeper mtime → event over {len(latency['ours_ms'])} leader changes (ms):")
    print(f"  - kinspect (watches): {describe(latency['ours_ms'])}")
    print(f"  - AdminClient poller every 1 s: {describe(latency['poller_ms'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
