"""What the topics and brokers are set to (DescribeConfigs), or why that is not known.

min.insync.replicas decides whether a partition is under min ISR, so a topic whose settings
were refused (no DescribeConfigs permission) has them Unknown with that reason: a default of
ours would turn a partition under min ISR into a healthy one. Brokers' replication throttles
come from the broker resources (kafka-reassign-partitions --throttle sets them there).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ResourceType,
)

from kinspect.model import ConfigValue, Fact, Unknown
from kinspect.model.flush import BROKER_FLUSH_KEYS, TOPIC_FLUSH_KEYS

# The topic settings health judges, and the throttled replicas a reassignment may carry.
TOPIC_KEYS = ("min.insync.replicas", "unclean.leader.election.enable",
              "leader.replication.throttled.replicas", "follower.replication.throttled.replicas",
              "retention.ms", "cleanup.policy",  # these two: a lagging group's deadline
              *TOPIC_FLUSH_KEYS)  # when its log is fsynced (flush check)
# A broker's replication throttles (kafka-reassign-partitions --throttle sets them), and when
# it fsyncs by itself (the flush check).
BROKER_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
               *BROKER_FLUSH_KEYS)
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31
REFUSED = {TOPIC_AUTHORIZATION_FAILED: "no DescribeConfigs permission on the topic",
           CLUSTER_AUTHORIZATION_FAILED: "no DescribeConfigs permission on the cluster"}


def _result(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


def _source_name(source: Any) -> str:
    name = getattr(source, "name", str(source))
    return str(name).lower().replace("_config", "")


def _refusal(exc: KafkaException, what: str) -> Unknown:
    """A failed DescribeConfigs as the reason a person acts on: a refusal names the permission."""
    error: Any = exc.args[0] if exc.args else None
    code = error.code() if isinstance(error, KafkaError) else None
    if code in REFUSED:
        return Unknown(REFUSED[code])
    reason = error.str() if isinstance(error, KafkaError) else str(exc)
    return Unknown(f"{what} failed: {reason}")


def _values(entries: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, ConfigValue]:
    return {key: ConfigValue(value=str(entries[key].value), source=_source_name(entries[key].source))
            for key in keys if key in entries and entries[key].value is not None}


def _refused(exc: KafkaException) -> bool:
    error: Any = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.code() in REFUSED


def describe_topics(admin: AdminClient, topics: list[str], timeout_s: float,
                    known: Mapping[str, dict[str, ConfigValue]],
                    brokers: Collection[int] = (), controller: int | None = None
                    ) -> tuple[dict[str, dict[str, ConfigValue]], dict[str, Unknown]]:
    """Each topic's settings, or why they are unknown: a refusal (no DescribeConfigs
    permission) is said as such. librdkafka sends the request to the broker the metadata names
    controller; in KRaft that is any broker still registered, so one killed a moment ago may
    be named and never answer. A topic whose request failed otherwise is therefore asked again
    of every other broker at once (a broker resource in the request pins it there), then keeps
    its last known settings if it had any (in ZooKeeper mode a broker reads them from
    ZooKeeper: with ZooKeeper down this never answers, and leaders, ISRs and offsets still
    matter most)."""
    out, unknown, failed = _describe_topics_once(admin, topics, timeout_s)
    if failed:
        others: list[int | None] = [b for b in sorted(brokers) if b != controller] or [None]
        again, unknown_again, still = _ask_elsewhere(admin, list(failed), timeout_s, others)
        out.update(again)
        unknown.update(unknown_again)
        for topic in still:
            if topic in known:
                out[topic] = known[topic]
            else:
                unknown[topic] = still[topic]
    return out, unknown


def _ask_elsewhere(admin: AdminClient, topics: list[str], timeout_s: float,
                   brokers: list[int | None]
                   ) -> tuple[dict[str, dict[str, ConfigValue]], dict[str, Unknown],
                              dict[str, Unknown]]:
    """The failed topics asked of each of these brokers at once (None: wherever librdkafka
    sends it); a topic takes the first settings or refusal any of them gave."""
    with ThreadPoolExecutor(max_workers=len(brokers), thread_name_prefix="kinspect-configs") as pool:
        answers = list(pool.map(lambda b: _describe_topics_once(admin, topics, timeout_s, b),
                                brokers))
    out: dict[str, dict[str, ConfigValue]] = {}
    refused: dict[str, Unknown] = {}
    for settings, refusals, _ in answers:
        out.update({t: v for t, v in settings.items() if t not in out})
        refused.update({t: v for t, v in refusals.items() if t not in out and t not in refused})
    failed = {t: why for _, _, fails in reversed(answers) for t, why in fails.items()
              if t not in out and t not in refused}
    return out, refused, failed


def _describe_topics_once(admin: AdminClient, topics: list[str], timeout_s: float,
                          via: int | None = None
                          ) -> tuple[dict[str, dict[str, ConfigValue]], dict[str, Unknown],
                                     dict[str, Unknown]]:
    """(settings, refused, failed otherwise): one DescribeConfigs of these topics, sent to
    broker `via` when given (librdkafka sends a request holding a broker resource there)."""
    if not topics:
        return {}, {}, {}
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    if via is not None:
        resources.append(ConfigResource(ResourceType.BROKER, str(via)))
    futures = admin.describe_configs(resources, request_timeout=timeout_s)
    out: dict[str, dict[str, ConfigValue]] = {}
    refused: dict[str, Unknown] = {}
    failed: dict[str, Unknown] = {}
    deadline = time.monotonic() + timeout_s
    for resource, future in futures.items():
        if resource.restype == ResourceType.BROKER:
            continue  # only the pin
        try:
            entries = _result(future, max(0.01, deadline - time.monotonic()))
        except KafkaException as exc:
            (refused if _refused(exc) else failed)[resource.name] = _refusal(exc, "DescribeConfigs")
            continue
        except TimeoutError:
            failed[resource.name] = Unknown("DescribeConfigs did not answer in time")
            continue
        out[resource.name] = _values(entries, TOPIC_KEYS)
    return out, refused, failed


def describe_brokers(admin: AdminClient, brokers: Mapping[int, str], timeout_s: float
                     ) -> dict[int, Fact[dict[str, ConfigValue]]]:
    """Each broker's replication throttles (DescribeConfigs of the broker resource; one
    broker per call, as librdkafka requires, all sent at once)."""
    futures = {b: admin.describe_configs([ConfigResource(ResourceType.BROKER, str(b))],
                                         request_timeout=timeout_s)
               for b in sorted(brokers)}
    out: dict[int, Fact[dict[str, ConfigValue]]] = {}
    deadline = time.monotonic() + timeout_s
    for broker, answer in futures.items():
        future = next(iter(answer.values()))
        try:
            entries = _result(future, max(0.01, deadline - time.monotonic()))
        except KafkaException as exc:
            out[broker] = _refusal(exc, "DescribeConfigs of the broker")
            continue
        except TimeoutError:
            out[broker] = Unknown("DescribeConfigs did not answer in time")
            continue
        out[broker] = _values(entries, BROKER_KEYS)
    return out
