"""Auto-commits as the group coordinator has them (the words "auto-committed at …" need
the time; librdkafka serves its commit callbacks only inside the next consume())."""

from __future__ import annotations

import threading

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kinspect.load.consumers.consumer_ledger import ConsumerLedger, now_ms
from kinspect.load.consumers.settings import ConsumeSettings
from kinspect.load.consumers.stats import ConsumerStats


class CommitWatcher(threading.Thread):
    """Auto-commits as the group coordinator has them, asked every WATCH_S by a client of
    its own (it joins nothing): a commit line within WATCH_S of the commit landing, which is
    what the words "auto-committed at …" need when the consumer then dies mid-poll."""

    WATCH_S = 0.1

    def __init__(self, settings: ConsumeSettings, ledger: ConsumerLedger,
                 stats: ConsumerStats) -> None:
        super().__init__(name="kinspect-commit-watch", daemon=True)
        self.ledger, self.stats, self.topic = ledger, stats, settings.topic
        self.partitions: list[int] = []  # replaced whole by the assignment callback
        self._halt = threading.Event()
        self._client = Consumer({**settings.extra, "bootstrap.servers": settings.bootstrap,
                                 "group.id": settings.group, "enable.auto.commit": False,
                                 "log_level": 0})
        self._last: dict[int, int] = {}

    def run(self) -> None:
        while not self._halt.wait(self.WATCH_S):
            wanted = [TopicPartition(self.topic, p) for p in self.partitions]
            if not wanted:
                continue
            try:
                answer = self._client.committed(wanted, timeout=2)
            except KafkaException:
                continue
            for tp in answer:  # a partition's first answer is where it stood: not ours
                self._last.setdefault(int(tp.partition), int(tp.offset))
            moved = [(int(tp.partition), int(tp.offset)) for tp in answer
                     if tp.offset >= 0 and tp.offset > self._last[int(tp.partition)]]
            if moved:
                self._last.update(moved)
                self.ledger.committed(now_ms(), moved, "auto")
                self.stats.commits += len(moved)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)
        self._client.close()
