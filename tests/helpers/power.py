"""A power lab's writes as a user makes them, and what survives, by what is not kinspect: the
producer's own delivery reports, kcat, and DumpLogSegments over the batches a cut dropped."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.helpers.oracles import TOPIC_COMMAND, dump_segments, kafka_tool

COUNT = 2000


def produce_acked(bootstrap: str, topic: str) -> dict[str, tuple[int, int]]:
    """Send COUNT messages with acks=all; the acknowledged ones by the producer's own
    delivery reports: value -> (partition, offset)."""
    from confluent_kafka import Producer

    acked: dict[str, tuple[int, int]] = {}

    def report(err: Any, msg: Any) -> None:
        if err is None:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(COUNT):
        producer.produce(topic, f"{topic}-{i:06d}|".encode() + b"x" * 80, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def read_back(bootstrap: str, topic: str) -> set[str]:
    """Every value kcat reads from the beginning."""
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                          "-q", "-f", "%s\n"], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    return {line for line in out.splitlines() if line}


def dropped_values(cuts: list[Path], topic: str) -> set[str]:
    """The values in the batches the filesystem dropped, as DumpLogSegments reads them."""
    files = [f for cut in cuts for f in sorted(cut.glob(f"{topic}-*/*.log"))]
    if not files:
        return set()
    return {r["payload"] for r in dump_segments(files) if r["payload"]}


def create(bootstrap: str, topic: str, *config: str) -> None:
    settings = [arg for item in ("min.insync.replicas=2", *config) for arg in ("--config", item)]
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--create", "--topic", topic,
               "--partitions", "3", "--replication-factor", "3", *settings)
