"""Consumers that look at the cluster while a fault is on: can anyone still read?

Two questions the source material asks: with min.insync.replicas unmet, do reads continue
(a plain reader, no group)? With __consumer_offsets on one dead broker, can a consumer group
consume at all (it needs its coordinator)?
"""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

GROUP = "kinspect-scenario"


def _consumer(bootstrap: str, group: str, commit: bool = True) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": commit, "auto.offset.reset": "earliest",
                     "socket.timeout.ms": 5000, "session.timeout.ms": 6000, "log_level": 0})


def read_count(bootstrap: str, topic: str, seconds: float) -> int:
    """Records a reader with no group gets from partition 0's start within `seconds`."""
    consumer = _consumer(bootstrap, f"kinspect-reader-{uuid.uuid4().hex[:6]}", commit=False)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    return _drain(consumer, seconds)


def group_count(bootstrap: str, topic: str, seconds: float, group: str = GROUP) -> int:
    """Records a consumer group member gets within `seconds` (0 when it cannot join)."""
    consumer = _consumer(bootstrap, group, commit=False)
    consumer.subscribe([topic])
    return _drain(consumer, seconds)


def warm_group(bootstrap: str, topic: str, timeout_s: float = 60.0, group: str = GROUP) -> bool:
    """Join the group once so __consumer_offsets exists and the group has a coordinator."""
    consumer = _consumer(bootstrap, group)
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            consumer.poll(0.5)
            if consumer.assignment():
                return True
        return False
    finally:
        consumer.close()


def _drain(consumer: Consumer, seconds: float) -> int:
    """Count what arrives in `seconds`; closing happens in the background, because leaving a
    group whose coordinator is dead can block far longer than the question takes."""
    count = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            count += sum(1 for message in consumer.consume(500, timeout=0.5)
                         if message.error() is None)
    finally:
        threading.Thread(target=consumer.close, daemon=True).start()
    return count
