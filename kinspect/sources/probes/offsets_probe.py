"""Each partition's latest and earliest offsets (ListOffsets), asked of each leader directly
where brokers may be asked, else through the AdminClient."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import _AdminClientImpl

from kinspect.clients.wire import ask_leader_offsets
from kinspect.model import Offsets, PartitionMeta, ReplicaEnd
from kinspect.sources.probes.base import BROKER_ERRORS, Asking, EveryPoll, Key, Links, Poll

SPECS = (-1, -2)  # ListOffsets' special timestamps: latest (the high watermark), earliest
LATEST, EARLIEST = SPECS
# librdkafka's admin ListOffsets grows faster than the partitions it is given (1,000: 27 ms,
# 3,000: 136 ms, 10,000: 618 ms here): it is asked in chunks, all at once.
OFFSETS_CHUNK = 1_000

BySpec = dict[int, dict[Key, ReplicaEnd]]  # spec -> partition -> the leader's answer


def _result(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


def _list_offsets(admin: AdminClient, keys: list[Key], spec: int, timeout: float
                  ) -> Future[dict[TopicPartition, Any]]:
    """One ListOffsets per leader for all `keys`, answered as one dict in one future.

    The public AdminClient.list_offsets wraps that same call in a future per partition, each
    made and then set from Python: about 0.2 s at 10,000 partitions on a busy machine, per
    spec. The call underneath takes the same list and one future.
    """
    future: Future[dict[TopicPartition, Any]] = Future()
    request = [TopicPartition(topic, partition, spec) for topic, partition in keys]
    _AdminClientImpl.list_offsets(admin, request, future, request_timeout=timeout)
    return future


def _answers(futures: Iterable[Future[dict[TopicPartition, Any]]], deadline: float
             ) -> dict[Key, Any]:
    """The ListOffsets results by partition, of every chunk; a failed partition, a failed
    request or no answer by `deadline` is left out: its offsets are unknown, not zero, and the
    rest of the poll (who leads, the ISR) still counts, as when ZooKeeper is down and a broker
    is slow to answer."""
    out = {}
    for future in futures:
        try:
            answers = _result(future, max(0.01, deadline - time.monotonic()))
        except (KafkaException, TimeoutError):
            continue
        out.update({(tp.topic, tp.partition): info for tp, info in answers.items()
                    if not isinstance(info, KafkaError)})
    return out


def _offset(answer: Any) -> int | None:
    """An answer's offset; None when it has none, or gives librdkafka's OFFSET_INVALID (-1001)
    or another negative sentinel (a leader that could not answer: unknown, not a number)."""
    offset = getattr(answer, "offset", None)
    if isinstance(offset, int) and offset >= 0:
        return offset
    return None


def led_by(partitions: Mapping[Key, PartitionMeta], brokers: Mapping[int, str]
           ) -> dict[int, list[Key]]:
    """The partitions each listed leader leads (a partition without one is asked of nobody)."""
    led: dict[int, list[Key]] = {}
    for key, meta in partitions.items():
        leader = meta.leader
        if leader is not None and leader in brokers:
            led.setdefault(leader, []).append(key)
    return led


def _from_leaders(keys: Iterable[Key], answers: list[BySpec]) -> dict[Key, Offsets]:
    """Each partition's offsets from its leader's answers; unknown where none answered."""
    high = {k: v for a in answers for k, v in a.get(LATEST, {}).items()}
    low = {k: v for a in answers for k, v in a.get(EARLIEST, {}).items()}
    out = {}
    for key in keys:
        top, bottom = high.get(key), low.get(key)
        high_watermark = log_start = epoch = None
        if top is not None:
            high_watermark, epoch = top.log_end, top.epoch
        if bottom is not None:
            log_start = bottom.log_end
        out[key] = Offsets(high_watermark, log_start, epoch)
    return out


class OffsetsProbe(EveryPoll):
    """Latest and earliest offsets of every partition: asked of each leader directly (one
    ListOffsets per leader and spec, as librdkafka sends them) when brokers may be asked, else
    through the AdminClient. Asked every poll, on connections of its own."""

    def __init__(self, asking: Asking) -> None:
        self._asking = asking
        self._links = Links(asking.settings)

    def ask(self, poll: Poll) -> dict[Key, Offsets]:
        if self._asking.settings is None:
            return self.admin_offsets(list(poll.partitions))
        return self.leader_offsets(poll.partitions, poll.brokers)

    def leader_offsets(self, partitions: Mapping[Key, PartitionMeta], brokers: Mapping[int, str]
                       ) -> dict[Key, Offsets]:
        """Each leader asked for the partitions it leads, all leaders at once."""
        led = led_by(partitions, brokers)
        timeout = self._asking.budget(self._asking.timeout_s)

        def ask(item: tuple[int, list[Key]]) -> BySpec:
            leader, keys = item
            link = self._links.to(leader, brokers[leader])
            try:
                return {spec: ask_leader_offsets(link, keys, spec, timeout) for spec in SPECS}
            except BROKER_ERRORS:
                return {}  # this leader's partitions: offsets unknown, not zero
        with ThreadPoolExecutor(max_workers=max(1, len(led)),
                                thread_name_prefix="kinspect-offsets") as pool:
            answers = list(pool.map(ask, sorted(led.items())))
        return _from_leaders(partitions, answers)

    def admin_offsets(self, keys: list[Key]) -> dict[Key, Offsets]:
        """The AdminClient's way (no per-broker connections, e.g. GSSAPI): both specs asked at
        once, in chunks (librdkafka sends one ListOffsets per leader for each), collected."""
        if not keys:
            return {}
        timeout = self._asking.budget(self._asking.timeout_s)  # every chunk in flight at once
        asked = [[_list_offsets(self._asking.admin, keys[i:i + OFFSETS_CHUNK], spec, timeout)
                  for i in range(0, len(keys), OFFSETS_CHUNK)] for spec in SPECS]
        deadline = time.monotonic() + timeout + 1.0  # librdkafka's own timeout first
        high, low = (_answers(futures, deadline) for futures in asked)
        out = {}
        for key in keys:
            top = high.get(key)
            epoch = None
            if top is not None:
                epoch = top.leader_epoch
                if epoch is not None and epoch < 0:  # librdkafka's -1: unknown
                    epoch = None
            out[key] = Offsets(high_watermark=_offset(top), log_start=_offset(low.get(key)),
                               leader_epoch=epoch)
        return out

    def close(self) -> None:
        self._links.close()
