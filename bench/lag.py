"""Consumer lag refresh: from a group's commit to the new lag in kinspect's model.

A consumer commits a known offset (synchronously, so the broker has it at t0); the observer
(the one behind the TUI's groups panel, polling every second) reports the snapshot in which
the group's committed offset is that one. Side by side, the peer on-call people use today:
Kafka's own `kafka-consumer-groups --describe`, timed from its start to its answer (a JVM each
time), which is the least a script polling it waits.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.lab import bench_lab, describe
from kinspect.lab import dist
from kinspect.lab.dist import CONSUMER_GROUPS
from kinspect.lab.topics import create_topics
from kinspect.model import ClusterSnapshot, Event
from kinspect.sources.observer import Observer

TOPIC, GROUP, COMMITS = "bench-lag", "bench-lag-group", 20


def _fill(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for n in range(COMMITS * 10 + 10):
        producer.produce(TOPIC, f"m{n}".encode())
    producer.flush(30)


def kinspect_latency(bootstrap: str) -> list[float]:
    seen: dict[int, float] = {}
    changed = threading.Condition()

    def note(snapshot: ClusterSnapshot, _events: list[Event]) -> None:
        for group in snapshot.groups:
            if group.group_id == GROUP:
                for part in group.partitions:
                    with changed:
                        seen.setdefault(part.committed, time.time())
                        changed.notify_all()

    observer = Observer(bootstrap, None, interval_s=1.0)
    observer.subscribe(note)
    observer.start()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False, "log_level": 0})
    out = []
    try:
        for n in range(1, COMMITS + 1):
            time.sleep(random.uniform(0.2, 1.2))  # commits land at any phase of the poll
            offset = n * 10
            consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
            committed_at = time.time()
            with changed:
                changed.wait_for(lambda offset=offset: offset in seen, timeout=30)  # type: ignore[misc]
            if offset in seen:
                out.append((seen[offset] - committed_at) * 1000)
    finally:
        consumer.close()
        observer.stop()
    return out


def peer_latency(bootstrap: str, runs: int = 5) -> list[float]:
    command = dist.ensure().tool_command(CONSUMER_GROUPS, "--bootstrap-server", bootstrap,
                                         "--describe", "--group", GROUP)
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        out.append((time.perf_counter() - started) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m bench.lag", description=__doc__).parse_args(argv)
    with bench_lab() as lab:
        create_topics(lab["bootstrap"], {TOPIC: 1})
        _fill(lab["bootstrap"])
        ours = kinspect_latency(lab["bootstrap"])
        peer = peer_latency(lab["bootstrap"])
    print("\n## Consumer lag refresh (ms)")
    print(f"- commit → new lag in kinspect's snapshot (AdminClient every 1 s), {len(ours)} of "
          f"{COMMITS} seen: {describe(ours or [0.0])}")
    print(f"- kafka-consumer-groups --describe, one answer: {describe(peer)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
