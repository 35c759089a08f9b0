"""Observer benchmarks: snapshot time at 2,000 partitions; a leader change → event latency.

The latency run is bench/change_latency.py's on the running lab (50 leader changes, each timed
from the election asked to our leader_changed event, beside an AdminClient-only poller asking
every 1 s, the way web UIs do); `python -m bench.change_latency` runs it on both modes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.cimpl import NewTopic

from bench.lab import bench_lab, describe, kinspect, percentile
from kinspect.clients.kafka import quiet_admin
from kinspect.sources.observer import Observer

BIG_TOPIC, BIG_PARTITIONS = "bench-2k", 2000


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
        observer.build(anew=True)  # the model built again, not the same one taken later
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
    argparse.ArgumentParser(prog="python -m bench.observer", description=__doc__).parse_args(argv)
    from bench.change_latency import TOPIC, change_latency, create

    with bench_lab() as lab:
        delete_topics(lab["bootstrap"], [BIG_TOPIC, TOPIC])  # latency first, on a small cluster
        create(lab["bootstrap"], {TOPIC: 1})
        latency = change_latency(lab)
        print(f"latency: ours {describe(latency['ours_ms'])}; poller "
              f"{describe(latency['poller_ms'])}", file=sys.stderr)
        sizes = snapshot_times(lab)
    print("\n## Observer")
    print(f"- snapshot with {sizes['partitions']:,} partitions: `kinspect snapshot --json` "
          f"{sizes['cli_s']:.2f} s (median of 3, fresh process); observer first complete "
          f"model {sizes['observer_first_s']:.2f} s; in-process rebuild {sizes['rebuild_ms']:.1f} ms")
    print(f"- election asked → leader_changed event over {len(latency['ours_ms'])} leader "
          "changes (ms; both modes: python -m bench.change_latency):")
    print(f"  - kinspect: {describe(latency['ours_ms'])}")
    print(f"  - AdminClient poller every 1 s: {describe(latency['poller_ms'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
