"""Creating topics on the lab (the demo's test1 and a 6-partition topic) with the AdminClient."""

from __future__ import annotations

import contextlib
import struct
import time
from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kinspect.clients.kafka import AuthWatch, list_topics, quiet_admin
from kinspect.clients.wire import ask_metadata
from kinspect.errors import KinspectError

DEMO_TOPICS = {"test1": 1, "orders": 6}


def wait_for_brokers(bootstrap: str, count: int, timeout_s: float = 60.0) -> None:
    """Until the brokers' metadata lists `count` brokers: ZooKeeper registers a broker before
    the controller has told the others, and a replication factor 3 topic needs all three."""
    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 5000})
    deadline = time.monotonic() + timeout_s
    seen = 0
    while time.monotonic() < deadline:
        with contextlib.suppress(KafkaException):
            seen = len(admin.list_topics(timeout=5).brokers)
            if seen >= count:
                return
        time.sleep(0.3)
    raise KinspectError(f"only {seen} of {count} brokers are in the cluster's metadata after "
                        f"{timeout_s:.0f} s (kinspect lab status shows which are down)")


def create_topics(bootstrap: str, topics: Mapping[str, int], replication_factor: int = 3,
                  config: Mapping[str, str] | None = None, timeout_s: float = 30.0) -> list[str]:
    """Create missing topics; return the names created (existing ones are left alone)."""
    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 10000})
    try:  # asked again until the deadline: a cluster just up may answer "Partial response"
        existing = set(list_topics(admin, AuthWatch(bootstrap), timeout_s).topics)
    except KafkaException as exc:
        reason = exc.args[0].str()
        raise KinspectError(f"cannot reach the brokers at {bootstrap}: {reason}") from None
    wanted = [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                       config=dict(config or {}))
              for name, partitions in topics.items() if name not in existing]
    if not wanted:
        return []
    wait_for_brokers(bootstrap, replication_factor, timeout_s)
    deadline = time.monotonic() + timeout_s
    created: list[str] = []
    while wanted:
        wanted = _create(admin, wanted, created, timeout_s, time.monotonic() < deadline)
        if wanted:
            time.sleep(0.5)
    _wait_for_leaders(admin, created, timeout_s)
    return created


def _create(admin: AdminClient, wanted: list[NewTopic], created: list[str], timeout_s: float,
            again: bool) -> list[NewTopic]:
    """One CreateTopics; the topics to ask again. A controller just elected may not yet count
    every broker that registered ("Replication factor: 3 larger than available brokers: 1",
    while every broker's metadata lists three): asked again while `again`."""
    futures = admin.create_topics(wanted, operation_timeout=timeout_s, request_timeout=timeout_s)
    retry = []
    for topic in wanted:
        try:
            futures[topic.topic].result()
            created.append(topic.topic)
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() == "INVALID_REPLICATION_FACTOR" and again:
                retry.append(topic)
            elif error.name() != "TOPIC_ALREADY_EXISTS":
                raise KinspectError(f"cannot create topic {topic.topic}: {error.str()}") from None
    return retry


def _wait_for_leaders(admin: AdminClient, topics: list[str], timeout_s: float) -> None:
    """Created means usable: ZooKeeper knows a new topic before every broker's metadata cache
    does, and a producer asking a broker that lags is told the topic does not exist. So each
    broker is asked directly (one metadata round trip each) until all of them know it."""
    deadline = time.monotonic() + timeout_s
    while topics:
        with contextlib.suppress(KafkaException, OSError, ConnectionError, ValueError,
                                 struct.error):
            brokers = admin.list_topics(timeout=5).brokers.values()
            if all(_knows(f"{b.host}:{b.port}", topics) for b in brokers):
                return
        if time.monotonic() >= deadline:
            raise KinspectError(f"not every broker knows {', '.join(topics)} after "
                                f"{timeout_s:.0f} s")
        time.sleep(0.2)


def _knows(address: str, topics: list[str]) -> bool:
    """This broker's metadata has every partition of these topics, each with a leader."""
    claims = ask_metadata(address, timeout=2.0).partitions
    for topic in topics:
        leaders = [claim.leader for (name, _), claim in claims.items() if name == topic]
        if not leaders or None in leaders:
            return False
    return True


def _kafka_error(error: object) -> object:
    """A KafkaError itself (confluent-kafka 2.16), or what a KafkaException wraps."""
    from confluent_kafka import KafkaError

    if isinstance(error, KafkaError):
        return error
    args = getattr(error, "args", None)
    if error is None or not args:
        return None
    return args[0]


def balance_leaders(bootstrap: str, timeout_s: float = 30.0) -> str | None:
    """Preferred leader election everywhere: after a restart the first broker up leads it all,
    and a demo where one kill takes every partition down teaches the wrong lesson. Returns why
    it could not (one line), else None; a partition already led by its preferred replica is
    no failure."""
    from confluent_kafka import ElectionType, KafkaError

    admin = quiet_admin(bootstrap, **{"socket.timeout.ms": 10000})
    try:
        results = admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=timeout_s)
    except KafkaException as exc:
        return str(exc.args[0].str())
    except TimeoutError:
        return f"no answer from the controller in {timeout_s:.0f} s"
    failed = []
    for partition, error in (results or {}).items():
        code = _kafka_error(error)
        if isinstance(code, KafkaError) and code.code() != KafkaError.ELECTION_NOT_NEEDED:
            failed.append(f"{partition.topic}-{partition.partition}: {code.str()}")
    if failed:
        return f"{len(failed)} partition(s) kept their leader ({failed[0]})"
    return None
