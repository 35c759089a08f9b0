"""The offsets probe (sources/probes/offsets_probe.py) without a cluster: the AdminClient's way,
where brokers are not asked directly (both specs asked at once, merged per partition), and each
leader asked for its own partitions where they are."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kinspect.model import Offsets, PartitionMeta
from kinspect.sources.probes import offsets_probe
from kinspect.sources.probes.base import Asking, Poll
from kinspect.sources.probes.offsets_probe import OffsetsProbe


def _probe(settings: dict[str, Any] | None, timeout_s: float = 1.0) -> OffsetsProbe:
    """An offsets probe without a client (the client calls are stood in for)."""
    return OffsetsProbe(Asking(None, settings, None, timeout_s,  # type: ignore[arg-type]
                               lambda base_s: min(base_s, timeout_s)))


def _poll(partitions: dict[tuple[str, int], PartitionMeta], brokers: dict[int, str]) -> Poll:
    return Poll(0, brokers, None, partitions, ("t",), refresh=False, probing=True, mode="kraft",
                zookeeper_watched=False)


class _Info:
    def __init__(self, offset: int, leader_epoch: int | None) -> None:
        self.offset, self.leader_epoch = offset, leader_epoch


def test_offsets_merge_latest_and_earliest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Latest: offset 100 + partition, epoch partition - 1 (-1: unknown); earliest: the
    partition number, except partition 2, which failed."""
    calls: list[tuple[int, int]] = []

    def fake(_admin: Any, keys: list[tuple[str, int]], spec: int, _timeout: float
             ) -> Future[dict[TopicPartition, Any]]:
        calls.append((spec, len(keys)))
        answers: dict[TopicPartition, Any] = {}
        for topic, p in keys:
            tp = TopicPartition(topic, p)
            if spec == -1:
                answers[tp] = _Info(100 + p, p - 1)
            else:
                answers[tp] = KafkaError(KafkaError.LEADER_NOT_AVAILABLE) if p == 2 else _Info(p, None)
        future: Future[dict[TopicPartition, Any]] = Future()
        future.set_result(answers)
        return future

    monkeypatch.setattr(offsets_probe, "_list_offsets", fake)
    source = _probe(None)
    keys = [("t", 0), ("t", 1), ("t", 2)]
    assert source.admin_offsets(keys) == {
        ("t", 0): Offsets(high_watermark=100, log_start=0, leader_epoch=None),
        ("t", 1): Offsets(high_watermark=101, log_start=1, leader_epoch=0),
        ("t", 2): Offsets(high_watermark=102, log_start=None, leader_epoch=1),
    }
    assert calls == [(-1, 3), (-2, 3)]  # one call per spec, every partition in each
    assert source.admin_offsets([]) == {}
    calls.clear()
    monkeypatch.setattr(offsets_probe, "OFFSETS_CHUNK", 2)  # librdkafka's call grows faster than its input
    assert source.admin_offsets(keys)[("t", 2)] == Offsets(102, None, 1)
    assert calls == [(-1, 2), (-1, 1), (-2, 2), (-2, 1)]
    calls.clear()  # brokers not asked directly: a poll asks the AdminClient's way
    led = {k: PartitionMeta(1, (1,), (1,)) for k in keys}
    assert source.ask(_poll(led, {1: "198.18.1.11:9092"}))[("t", 2)] == Offsets(102, None, 1)
    assert calls == [(-1, 2), (-1, 1), (-2, 2), (-2, 1)]


def test_a_failed_request_leaves_its_offsets_unknown_and_no_others() -> None:
    failed: Future[dict[TopicPartition, Any]] = Future()
    failed.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    answered: Future[dict[TopicPartition, Any]] = Future()
    answered.set_result({TopicPartition("t", 5): _Info(7, 1)})
    assert offsets_probe._answers([failed], deadline=0.0) == {}
    found = offsets_probe._answers([failed, answered], deadline=0.0)
    assert set(found) == {("t", 5)} and found[("t", 5)].offset == 7


def test_an_invalid_offset_is_unknown_not_a_number() -> None:
    """A leader that cannot answer ListOffsets gives librdkafka's OFFSET_INVALID (-1001): the
    high watermark is then unknown, never "stuck at -1001" (a KRaft quorum-loss run said so)."""
    from confluent_kafka.admin import ListOffsetsResultInfo

    from kinspect.sources.probes.offsets_probe import _offset

    assert _offset(ListOffsetsResultInfo(-1001, -1, -1)) is None
    assert _offset(ListOffsetsResultInfo(-1, -1, -1)) is None
    assert _offset(ListOffsetsResultInfo(0, -1, -1)) == 0
    assert _offset(ListOffsetsResultInfo(20_635, -1, 3)) == 20_635
    assert _offset(None) is None


def test_each_leader_is_asked_for_its_own_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where brokers may be asked directly: one ListOffsets per leader and spec, each with the
    partitions it leads; a leader that does not answer leaves its partitions unknown, and a
    partition without a leader is asked of nobody."""
    from kinspect.model import ReplicaEnd

    asked: list[tuple[int, tuple[tuple[str, int], ...], int]] = []
    timeouts: set[float] = set()

    def fake(link: Any, keys: list[tuple[str, int]], spec: int, timeout: float
             ) -> dict[tuple[str, int], ReplicaEnd]:
        asked.append((link.broker_id, tuple(keys), spec))
        timeouts.add(timeout)
        if link.broker_id == 3:
            raise TimeoutError("198.18.1.13:9092: no answer in 3.0 s")
        return {k: ReplicaEnd(100 + k[1] if spec == -1 else k[1], 7) for k in keys}

    monkeypatch.setattr(offsets_probe, "ask_leader_offsets", fake)
    source = _probe({}, timeout_s=3.0)
    partitions = {("t", 0): PartitionMeta(1, (1, 2), (1, 2)),
                  ("t", 1): PartitionMeta(2, (2, 1), (2, 1)),
                  ("t", 2): PartitionMeta(1, (1, 2), (1,)),
                  ("t", 3): PartitionMeta(3, (3,), (3,)),
                  ("t", 4): PartitionMeta(None, (2,), ())}
    brokers = {1: "198.18.1.11:9092", 2: "198.18.1.12:9092", 3: "198.18.1.13:9092"}
    got = source.leader_offsets(partitions, brokers)
    assert sorted(asked) == [(1, (("t", 0), ("t", 2)), -2), (1, (("t", 0), ("t", 2)), -1),
                             (2, (("t", 1),), -2), (2, (("t", 1),), -1), (3, (("t", 3),), -1)]
    assert got[("t", 0)] == Offsets(100, 0, 7) and got[("t", 1)] == Offsets(101, 1, 7)
    assert got[("t", 3)] == Offsets(None, None, None)  # its leader did not answer
    assert got[("t", 4)] == Offsets(None, None, None)  # no leader: nobody to ask
    assert timeouts == {3.0}  # the poll's timeout (grown with the cluster), as before
    asked.clear()  # brokers asked directly: a poll asks each leader
    assert source.ask(_poll(partitions, brokers)) == got and len(asked) == 5
    source.close()
