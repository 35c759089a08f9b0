"""`kinspect load slow`: the source material's slow producer, one message a second.

It prints the leader whenever it changes and each value with its offset, and notices the
moment data loss becomes visible to a producer: an offset it saw acknowledged is handed out
again after a failover, because the old leader's acknowledged tail was truncated away.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kinspect.clients.kafka import client_config
from kinspect.errors import KinspectError


def _leaders(producer: Producer, topic: str) -> dict[int, int]:
    try:
        metadata = producer.list_topics(topic=topic, timeout=2)
    except KafkaException:
        return {}
    info = metadata.topics.get(topic)
    if info is None or info.error is not None:
        return {}
    return {p: m.leader for p, m in info.partitions.items()}


@dataclass(frozen=True)
class _Delivery:
    """One message's delivery report."""

    error: KafkaError | None
    partition: int
    offset: int


def _show_leaders(producer: Producer, topic: str, leaders: dict[int, int]) -> None:
    """Each partition whose leader changed since last said (`leaders` is updated)."""
    current = _leaders(producer, topic)
    for partition, leader in sorted(current.items()):
        if leaders.get(partition) != leader:
            print(f"leader of {topic}-{partition}: {_leader_word(leader)}", flush=True)
    leaders.update(current)


def _leader_word(leader: int) -> str:
    if leader < 0:
        return "none"
    return str(leader)


def _send(producer: Producer, topic: str, value: str) -> _Delivery | None:
    """One message, waited for (30 s at most): its report, None when none came."""
    reports: list[_Delivery] = []

    def report(err: Any, msg: Any) -> None:
        reports.append(_Delivery(err, msg.partition(), msg.offset()))

    producer.produce(topic, value.encode(), on_delivery=report)
    producer.flush(30)
    if not reports:
        return None
    return reports[-1]


def _show(value: str, topic: str, delivery: _Delivery, highest: dict[int, int]) -> None:
    """Where the message went, and a warning when its offset was handed out before: the
    acknowledged messages from there on were lost (`highest` is updated)."""
    if delivery.error is not None:
        print(f"{value}: failed ({delivery.error.name()})", flush=True)
        return
    partition, offset = delivery.partition, delivery.offset
    print(f"{value}: {topic}-{partition} offset {offset}", flush=True)
    top = highest.get(partition, -1)
    if 0 <= offset <= top:
        print(f"WARNING offset went backwards: {top - offset + 1} acknowledged "
              f"messages lost ({topic}-{partition} had reached {top}, now {offset})",
              flush=True)
    highest[partition] = offset


def run_slow(bootstrap: str, topic: str, acks: str, count: int | None,
             extra: Mapping[str, str]) -> int:
    if acks not in {"0", "1", "all", "-1"}:
        raise KinspectError(f"--acks must be 0, 1 or all, not {acks!r}")
    config, auth = client_config({"bootstrap.servers": bootstrap, "acks": acks,
                                  "topic.metadata.refresh.interval.ms": 1000, **extra})
    producer = Producer(config)
    if not _leaders(producer, topic):
        auth.check(producer)  # a refused login, said as such
        raise KinspectError(f"topic {topic!r} does not exist or no broker answers at {bootstrap}")
    highest: dict[int, int] = {}
    leaders: dict[int, int] = {}
    sent = 0
    try:
        while count is None or sent < count:
            started = time.monotonic()
            _show_leaders(producer, topic, leaders)
            value = f"slow-{sent}"
            delivery = _send(producer, topic, value)
            sent += 1
            if delivery is None or delivery.error is not None:
                auth.check(producer)  # not delivered because the login was refused: stop
            if delivery is not None:
                _show(value, topic, delivery, highest)
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass
    return 0
