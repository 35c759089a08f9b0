"""`topic_claims` and `log_ends_of`, kinspect's reads of Kafka's wire format, against
kafka-python's own decode of the same bytes (the oracle): every shape the answers take; and
`list_offsets_request`, its one write, against kafka-python's encode of the same request."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest
from kafka.protocol.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import MetadataResponse

from kinspect.clients.wire import (
    _PREFIX,
    _ListOffsetsKeptAsBytes,
    claims_from,
    list_offsets_request,
    log_ends_of,
    topic_claims,
)
from kinspect.model import ReplicaEnd


def section_of(topics: list[Any]) -> tuple[bytes, Any]:
    """The topics section of an encoded answer, and kafka-python's decode of the whole."""
    # kept in a name: kafka-python binds encode() to the response weakly
    response = MetadataResponse[7](throttle_time_ms=0, brokers=[(1, "198.18.1.11", 9092, "r1")],
                                   cluster_id=None, controller_id=2, topics=topics)
    raw = bytes(response.encode())
    buffer = io.BytesIO(raw)
    for field in _PREFIX:
        field.decode(buffer)
    return raw[buffer.tell():], MetadataResponse[7].decode(io.BytesIO(raw))


def random_topics(rng: random.Random) -> list[Any]:
    topics = []
    for t in range(rng.randint(0, 6)):
        parts = []
        for p in range(rng.randint(0, 9)):
            replicas = rng.sample(range(1, 8), rng.randint(0, 4))
            isr = replicas[:rng.randint(0, len(replicas))]
            offline = [r for r in replicas if r not in isr][:1] if rng.random() < 0.3 else []
            parts.append((rng.choice([0, 0, 9, 5]), p * 3, rng.choice([-1, *(replicas or [-1])]),
                          rng.randint(-1, 2**31 - 1), replicas, isr, offline))
        name = rng.choice(["t", "orders", "__consumer_offsets", "ünïcode-тема", "x" * 249])
        topics.append((rng.choice([0, 3]), f"{name}{t}", name.startswith("__"), parts))
    return topics


@pytest.mark.parametrize("seed", range(40))
def test_it_reads_what_kafka_python_decodes(seed: int) -> None:
    section, decoded = section_of(random_topics(random.Random(seed)))
    assert topic_claims(section) == claims_from(decoded).partitions


def test_a_leaderless_partition_and_an_empty_answer() -> None:
    section, _ = section_of([(0, "t", False, [(5, 0, -1, 7, [3], [], [3])])])
    claim = topic_claims(section)[("t", 0)]
    assert (claim.leader, claim.replicas, claim.isr, claim.leader_epoch, claim.offline) == (
        None, (3,), (), 7, (3,))
    assert topic_claims(section_of([])[0]) == {}


def test_an_answer_that_does_not_end_with_its_topics_is_refused() -> None:
    section, _ = section_of([(0, "t", False, [(0, 0, 1, 1, [1], [1], [])])])
    with pytest.raises(ValueError, match="topics end at byte"):
        topic_claims(section + bytes(1))
    with pytest.raises(ValueError, match="cut short"):
        topic_claims(section[:-3])


def random_offsets(rng: random.Random) -> list[Any]:
    return [(f"{rng.choice(['t', 'orders', 'ünïcode'])}{t}",
             [(p, rng.choice([0, 0, 0, 6, 75]), rng.choice([-1, 1_700_000_000_000]),
               rng.choice([-1, 0, 7, 2**40]), rng.choice([-1, 0, 12]))
              for p in range(rng.randint(0, 9))]) for t in range(rng.randint(0, 5))]


@pytest.mark.parametrize("seed", range(30))
def test_log_ends_read_as_kafka_python_decodes_them(seed: int) -> None:
    topics = random_offsets(random.Random(seed))
    response = ListOffsetsResponse[4](throttle_time_ms=3, topics=topics)  # kept: see above
    raw = bytes(response.encode())
    expected = {(topic, p): ReplicaEnd(offset, epoch if epoch >= 0 else None)
                for topic, parts in ListOffsetsResponse[4].decode(io.BytesIO(raw)).topics
                for p, error, _ts, offset, epoch in parts if error == 0 and offset >= 0}
    assert log_ends_of(raw) == expected
    with pytest.raises(ValueError, match="ListOffsets v4 answer"):
        log_ends_of(raw + bytes(2) if topics else raw[:-1])


@pytest.mark.parametrize("seed", range(8))
def test_list_offsets_requests_are_written_as_kafka_python_encodes_them(seed: int) -> None:
    rng = random.Random(seed)
    topics = [(rng.choice(["t", "orders", "ünïcode-тема", "x" * 249]) + str(t),
               [(p, rng.choice([-1, 0, 7, 2**31 - 1]), rng.choice([-1, -2, 2**62]))
                for p in rng.sample(range(100_000), rng.randint(0, 50))])
              for t in range(rng.randint(0, 6))]
    replica_id, isolation = rng.choice([-1, -2]), rng.choice([0, 1])
    request = ListOffsetsRequest[4](replica_id=replica_id, isolation_level=isolation,
                                    topics=topics)
    expected = bytes(request.encode())
    assert list_offsets_request(replica_id, isolation, topics) == expected
    ours = _ListOffsetsKeptAsBytes(replica_id=replica_id, isolation_level=isolation,
                                   topics=topics)
    assert bytes(ours.encode()) == expected  # what the connection sends
