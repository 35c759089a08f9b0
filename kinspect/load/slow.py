"""`kinspect load slow`: the source material's slow producer, one message a second.

It prints the leader whenever it changes and each value with its offset, and notices the
moment data loss becomes visible to a producer: an offset it saw acknowledged is handed out
again after a failover, because the old leader's acknowledged tail was truncated away.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer

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
            current = _leaders(producer, topic)
            for partition, leader in sorted(current.items()):
                if leaders.get(partition) != leader:
                    shown = leader if leader >= 0 else "none"
                    print(f"leader of {topic}-{partition}: {shown}", flush=True)
            leaders.update(current)
            result: dict[str, Any] = {}

            def report(err: Any, msg: Any, into: dict[str, Any] = result) -> None:
                into.update(err=err, partition=msg.partition(), offset=msg.offset())

            value = f"slow-{sent}"
            producer.produce(topic, value.encode(), on_delivery=report)
            producer.flush(30)
            sent += 1
            if result.get("err") is not None or not result:
                auth.check(producer)  # not delivered because the login was refused: stop
            if result.get("err") is not None:
                print(f"{value}: failed ({result['err'].name()})", flush=True)
            elif result:
                partition, offset = result["partition"], result["offset"]
                print(f"{value}: {topic}-{partition} offset {offset}", flush=True)
                top = highest.get(partition, -1)
                if 0 <= offset <= top:
                    print(f"WARNING offset went backwards: {top - offset + 1} acknowledged "
                          f"messages lost ({topic}-{partition} had reached {top}, now {offset})",
                          flush=True)
                highest[partition] = offset
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass
    return 0
