"""A power cut of every broker at once, as Kafka's defaults meet it: `acks=all`, RF 3 and
min ISR 2 lose what was acknowledged from the page cache, and `flush.messages=1` loses nothing.

Judged by what is not kinspect: the producer's own delivery reports say what was acknowledged,
kcat reads what survived after power-on, and DumpLogSegments reads the batches the filesystem
kept as dropped: every acknowledged message that is gone lies in them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kinspect
from tests.helpers.lab import Lab
from tests.helpers.oracles import TOPIC_COMMAND, dump_segments, kafka_tool, kafka_topics

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]

LAZY, SYNCED = "power-lazy", "power-synced"
COUNT = 2000
PAYLOAD = re.compile(r"^(power-\w+)-(\d{6})\|")


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
    import subprocess

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


def test_a_power_cut_of_every_broker_loses_what_was_only_in_the_page_cache(
        lab_session: Lab, lab_backend: str) -> None:
    lab = lab_session.ensure_up(lab_backend, power=True)
    assert lab["power"] is True
    bootstrap = lab["bootstrap"]
    create(bootstrap, LAZY)
    create(bootstrap, SYNCED, "flush.messages=1")
    acked = {topic: produce_acked(bootstrap, topic) for topic in (LAZY, SYNCED)}
    assert len(acked[LAZY]) == COUNT and len(acked[SYNCED]) == COUNT

    said = kinspect("lab", "power-off", "all").stdout
    assert said.count("powered off kafka") == 3
    cuts = sorted((lab_session.home / "lab" / "power-cuts").iterdir())[-3:]
    records = [json.loads((cut / "cut.json").read_text()) for cut in cuts]
    assert all(r["files"] for r in records)  # each broker had writes never on disk
    status = json.loads(kinspect("lab", "status", "--json").stdout)
    assert {n["name"]: n["state"] for n in status["nodes"] if n["role"] == "broker"} == {
        f"kafka{i}": "powered-off" for i in (1, 2, 3)}

    kinspect("lab", "power-on", "all", timeout=240)
    described = kafka_topics(bootstrap, topic=LAZY)
    assert all(row["leader"] is not None and row["leader"] > 0 for row in described)

    lost = set(acked[LAZY]) - read_back(bootstrap, LAZY)
    assert lost, "writes acknowledged from the page cache survived a power cut of every replica"
    assert lost <= dropped_values(cuts, LAZY)  # each one lies in a range the filesystem dropped
    # Fsynced after every append: nothing acknowledged is lost, nothing of it was dropped.
    assert set(acked[SYNCED]) <= read_back(bootstrap, SYNCED)
    assert not set(acked[SYNCED]) & dropped_values(cuts, SYNCED)
