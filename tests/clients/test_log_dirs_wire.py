"""DescribeLogDirs v1 and v4 as kinspect declares them with kafka-python's types, with no
broker: answers are encoded with the declared classes and read back by kinspect's own reader,
which reads what kafka-python's decode of the same bytes reads."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest

from kinspect.clients.log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ask_log_dirs,
    log_dirs_of,
    log_dirs_told,
)
from kinspect.model.facts import Unknown
from kinspect.model.views import BrokerLogDirs, LogDir, LogDirReplica
from kinspect.sources.probes.disks_probe import hosted_topics

REFUSED = Unknown("no Describe permission on the cluster: log dirs unknown")


Dirs = list[tuple[int, str, list[tuple[str, list[tuple[Any, ...]]]]]]


def encoded(version: int, dirs: Dirs, code: int = 0, volume: tuple[int, int] = (-1, -1),
            tags: dict[int, bytes] | None = None) -> bytes:
    """An answer's bytes, as a broker sends them (`tags`: each partition's tagged fields)."""
    if version >= 4:
        results = [(c, d, [(t, [(*p, tags or {}) for p in ps], {}) for t, ps in topics],
                    *volume, {}) for c, d, topics in dirs]
        built = DescribeLogDirsResponse[4](throttle_time_ms=0, error_code=code, results=results,
                                           tags={})
    else:
        built = DescribeLogDirsResponse[1](throttle_time_ms=0, results=dirs)
    return bytes(built.encode())


def answer(version: int, dirs: Dirs, code: int = 0, volume: tuple[int, int] = (-1, -1)
           ) -> Any:
    """kinspect's reading of the answer's bytes."""
    return log_dirs_of(encoded(version, dirs, code, volume), version, 2, "broker 2")


DIRS = [(0, "/data/a", [("orders", [(0, 1024, 0, False), (1, 10, 5, False)])]),
        (0, "/data/b", [("orders", [(1, 3, 7, True)]), ("__consumer_offsets", [(4, 0, 0, False)])])]


@pytest.mark.parametrize("version", [1, 4])
def test_every_replica_of_the_broker_with_its_dir_size_and_lag(version: int) -> None:
    told = answer(version, DIRS)
    assert isinstance(told, BrokerLogDirs)
    assert told.dirs == (LogDir("/data/a", None), LogDir("/data/b", None))
    assert told.replicas == {
        ("orders", 0): LogDirReplica(2, "/data/a", 1024, 0, False),
        ("orders", 1): LogDirReplica(2, "/data/a", 10, 5, False),  # the current log
        ("__consumer_offsets", 4): LogDirReplica(2, "/data/b", 0, 0, False)}
    # orders-1 is being copied into /data/b: 3 bytes so far, and they are on that disk
    assert told.future == {("orders", 1): LogDirReplica(2, "/data/b", 3, 7, True)}
    assert (told.size("/data/a"), told.size("/data/b")) == (1034, 3)
    assert (told.count("/data/a"), told.count("/data/b")) == (2, 1)
    assert hosted_topics({2: told, 3: REFUSED}) == frozenset({"orders", "__consumer_offsets"})


def test_v4_tells_the_volume_size_and_what_is_left() -> None:
    told = answer(4, DIRS[:1], volume=(10_000, 2_500))
    assert isinstance(told, BrokerLogDirs)
    assert told.dirs == (LogDir("/data/a", None, 10_000, 2_500),)


def test_a_refusal_is_said_at_v4_by_its_code_and_at_v1_by_no_log_dir() -> None:
    assert answer(4, [], code=31) == REFUSED
    assert answer(1, []) == REFUSED
    assert hosted_topics({1: REFUSED, 2: REFUSED}) == REFUSED


@pytest.mark.parametrize("version", [1, 4])
def test_an_offline_log_dir_is_said_and_the_other_dirs_still_count(version: int) -> None:
    told = answer(version, [DIRS[0], (56, "/data/b", [])])
    assert isinstance(told, BrokerLogDirs)
    assert told.offline == (LogDir("/data/b", "KafkaStorageError (56)"),)
    assert set(told.replicas) == {("orders", 0), ("orders", 1)}


@pytest.mark.parametrize(("versions", "asked"), [((1, 4), 4), ((0, 3), 1), ((0, 4), 4)])
def test_the_broker_is_asked_for_all_its_partitions(versions: tuple[int, int], asked: int) -> None:
    class Link:
        broker_id, address = 3, "10.0.0.3:9092"
        requests: list[Any] = []

        def api_versions(self, timeout_s: float) -> dict[int, tuple[int, int]]:
            return {35: versions}

        def ask(self, request: Any, timeout_s: float) -> Any:
            self.requests.append(request)
            return encoded(request.API_VERSION, DIRS[:1])

    link = Link()
    told = ask_log_dirs(link, 1.0)  # type: ignore[arg-type]
    assert isinstance(told, BrokerLogDirs) and told.broker == 3
    assert {r.broker for r in told.replicas.values()} == {3}
    request = link.requests[0]
    assert (request.API_VERSION, request.topics) == (asked, None)
    wire = DescribeLogDirsRequest[asked](topics=[("orders", [0, 1], {})], tags={}) if asked >= 4 \
        else DescribeLogDirsRequest[asked](topics=[("orders", [0, 1])])
    back = DescribeLogDirsRequest[asked].decode(io.BytesIO(wire.encode()))
    assert [tuple(t[:2]) for t in back.topics] == [("orders", [0, 1])]


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize("seed", range(5))
def test_kinspects_reader_reads_what_kafka_pythons_decode_reads(version: int, seed: int) -> None:
    """Oracle: kafka-python's field-by-field decode of the same bytes, on answers of many
    dirs, topics, sizes past 32 bits, future replicas, tagged fields and errors."""
    rng = random.Random(seed)
    dirs: Dirs = [(rng.choice([0, 0, 56]), f"/data/{d}-é", [
        (f"t{t}" * rng.randint(1, 40), [(p, rng.randint(0, 2**40), rng.randint(0, 99),
                                         rng.random() < 0.1) for p in range(rng.randint(0, 300))])
        for t in range(rng.randint(0, 20))]) for d in range(rng.randint(1, 4))]
    tags = {0: b"x" * rng.randint(1, 200), 7: b""} if seed % 2 else None
    raw = encoded(version, dirs, volume=(rng.randint(-1, 2**50), rng.randint(-1, 2**40)),
                  tags=tags)
    decoded = DescribeLogDirsResponse[version].decode(io.BytesIO(raw))
    expected = log_dirs_told(getattr(decoded, "error_code", 0), decoded.results, 2, "broker 2")
    assert log_dirs_of(raw, version, 2, "broker 2") == expected


@pytest.mark.parametrize("version", [1, 4])
def test_an_answer_cut_short_or_too_long_is_refused(version: int) -> None:
    raw = encoded(version, DIRS)
    for bad in (raw[:-3], raw[:20], raw + b"\0"):
        with pytest.raises(ValueError, match="DescribeLogDirs"):
            log_dirs_of(bad, version, 2, "broker 2")
