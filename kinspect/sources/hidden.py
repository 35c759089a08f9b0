"""Which topics this user may not see, confirmed by the brokers rather than guessed.

A topic the brokers hold on disk (DescribeLogDirs) but the metadata does not list is either
hidden from this user or in passing: being created (ZooKeeper's controller has the replicas
made before it tells every broker's metadata cache), being deleted, or missing from a disk
answer a few polls old. Only a Metadata request naming it tells them apart: a refusal
(TOPIC_AUTHORIZATION_FAILED) is hidden; "unknown topic" is in passing and not a blind spot.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from kinspect.model import Fact, Unknown

REFUSED = (KafkaError.TOPIC_AUTHORIZATION_FAILED,)
IN_PASSING = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE)


def _error(exc: BaseException) -> KafkaError | None:
    error: Any = exc.args[0] if exc.args else None
    return error if isinstance(error, KafkaError) else None


def confirm_hidden(admin: AdminClient, candidates: Collection[str], timeout_s: float
                   ) -> Fact[frozenset[str]]:
    """The candidates the brokers refuse to describe to this user (DescribeTopics: a Metadata
    request naming them, never creating them); Unknown when one could not be asked at all."""
    if not candidates:
        return frozenset()
    try:
        futures = admin.describe_topics(TopicCollection(sorted(candidates)),
                                        request_timeout=timeout_s)
    except KafkaException as exc:
        return Unknown(f"could not ask the metadata about {len(candidates)} topics on disk: {exc}")
    hidden: set[str] = set()
    for topic, future in futures.items():
        try:
            future.result(timeout=timeout_s + 1)
        except KafkaException as exc:
            error = _error(exc)
            code = error.code() if error is not None else None
            if code in REFUSED:
                hidden.add(topic)
            elif code not in IN_PASSING:
                return Unknown(f"could not ask the metadata about topic {topic}: "
                               f"{error.str() if error is not None else exc}")
        except TimeoutError:
            return Unknown(f"the metadata did not answer about topic {topic} in {timeout_s:g} s")
    return frozenset(hidden)
