"""Creating topics on the lab (the demo's test1 and a 6-partition topic) with the AdminClient."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.cimpl import NewTopic

from kinspect.errors import KinspectError
from kinspect.sources.admin import quiet_admin

DEMO_TOPICS = {"test1": 1, "orders": 6}


def create_topics(bootstrap: str, topics: Mapping[str, int], replication_factor: int = 3,
                  config: Mapping[str, str] | None = None, timeout_s: float = 30.0) -> list[str]:
    """Create missing topics; return the names created (existing ones are left alone)."""
    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 10000})
    try:
        existing = set(admin.list_topics(timeout=timeout_s).topics)
    except KafkaException as exc:
        reason = exc.args[0].str()
        raise KinspectError(f"cannot reach the brokers at {bootstrap}: {reason}") from None
    wanted = [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                       config=dict(config or {}))
              for name, partitions in topics.items() if name not in existing]
    if not wanted:
        return []
    futures = admin.create_topics(wanted, operation_timeout=timeout_s, request_timeout=timeout_s)
    created = []
    for name, future in futures.items():
        try:
            future.result()
            created.append(name)
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() != "TOPIC_ALREADY_EXISTS":
                raise KinspectError(f"cannot create topic {name}: {error.str()}") from None
    return created


def balance_leaders(bootstrap: str, timeout_s: float = 30.0) -> None:
    """Preferred leader election everywhere: after a restart the first broker up leads it all,
    and a demo where one kill takes every partition down teaches the wrong lesson."""
    from confluent_kafka import ElectionType

    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 10000})
    with contextlib.suppress(Exception):
        admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=timeout_s)
