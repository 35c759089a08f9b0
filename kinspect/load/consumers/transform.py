"""Consume-transform-produce: each poll's records copied to the output in one transaction.

The transaction aborts with probability `fail_rate` (after its output reached the log, as when
an application fails after writing) or when Kafka says it must (a leader died mid-commit).
Where the input offsets go is the lesson: inside the transaction (`transaction`: they commit
or abort with the output, and after an abort the loop rewinds and processes the records
again), or outside it (`auto`, `before`, `after`: an aborted transaction's input may be
committed anyway, and is then skipped for good).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException, Message, Producer, TopicPartition

from kinspect.load.consumers.consumer_ledger import ABORTED, PROCESSED, message_id, now_ms

if TYPE_CHECKING:
    from kinspect.load.consumers.consumer_worker import ConsumerWorker

Outcome = tuple[int, int, str | None, int, int, str, int]


class Transformer:
    def __init__(self, worker: ConsumerWorker) -> None:
        settings = worker.settings
        assert settings.output is not None
        self.worker, self.output = worker, settings.output
        # One transactional id per consumer slot: a restarted incarnation fences the dead one
        # and aborts whatever transaction it left open.
        self.producer = Producer({
            "bootstrap.servers": settings.bootstrap, "log_level": 2,
            "transactional.id": f"kinspect-{settings.group}-{worker.id}",
            "transaction.timeout.ms": 10000, **settings.extra})

    def start(self) -> None:
        self.producer.init_transactions(30)  # fences (and aborts) a dead incarnation's

    def transform(self, messages: Sequence[Message]) -> None:
        """One transaction per poll: copy each record to the output topic; abort with
        `fail_rate` (or when Kafka says the transaction must abort, e.g. its leader died).
        Offsets go inside the transaction (`transaction`), or are committed as the mode says
        outside it; after an abort, `transaction` rewinds to the poll's first offsets so the
        records are processed again, the others move on (the naive loop)."""
        mode = self.worker.settings.commit
        if mode == "before":
            self.worker.commit()
        outcomes: list[Outcome] = []
        try:
            positions = self._transaction(messages, outcomes)
        except KafkaException as exc:
            error = exc.args[0]
            if not error.txn_requires_abort():
                raise  # fatal (fenced by a newer incarnation, …): this process ends
            self._abort(messages, outcomes, error.name())
            return
        if positions is None:  # aborted as --fail-rate chose
            return
        done = now_ms()
        self.worker.ledger.outcomes([(*o[:4], done, PROCESSED, 1) for o in outcomes])
        self.worker.stats.processed += len(outcomes)
        if mode == "transaction":
            offsets = self._own_offsets(positions)
            self.worker.ledger.committed(done, offsets, "transaction")
            self.worker.stats.commits += len(offsets)
        elif mode == "after":
            self.worker.commit()

    def _transaction(self, messages: Sequence[Message],
                     outcomes: list[Outcome]) -> list[TopicPartition] | None:
        """The poll's records copied in one transaction, committed (with the input offsets
        in it for `transaction`); the consumer's positions, or None when --fail-rate aborted
        it. `outcomes` gets each record copied."""
        producer = self.producer
        received = now_ms()
        producer.begin_transaction()
        self._copy(messages, outcomes, received)
        # The output reaches the log before the decision, as it does when an application
        # fails after writing (an abort before a flush would only purge the client's queue,
        # and read_uncommitted readers would have nothing to show).
        producer.flush(30)
        if self.worker.rng.random() < self.worker.settings.fail_rate:
            self._abort(messages, outcomes, "chosen by --fail-rate")
            return None
        positions: list[TopicPartition] = self.worker.consumer.position(
            self.worker.consumer.assignment())
        if self.worker.settings.commit == "transaction":
            producer.send_offsets_to_transaction(
                positions, self.worker.consumer.consumer_group_metadata(), 30)
        self._commit_transaction()
        return positions

    def _copy(self, messages: Sequence[Message], outcomes: list[Outcome], received: int) -> None:
        """Each record to the output topic (after --process-ms of work each)."""
        producer, settings, output = self.producer, self.worker.settings, self.output
        for message in messages:
            self.worker.received += 1
            self.worker.maybe_crash()
            if settings.process_ms:
                time.sleep(settings.process_ms / 1000)
            producer.produce(output, message.value(), message.key())
            outcomes.append((int(message.partition() or 0), int(message.offset() or 0),
                             message_id(message.value()), received, 0, "", 1))

    def _own_offsets(self, positions: list[TopicPartition]) -> list[tuple[int, int]]:
        """The input topic's positions that are offsets (a partition not read yet has none)."""
        offsets = []
        for p in positions:
            if p.topic != self.worker.settings.topic:
                continue
            if p.offset is not None and p.offset >= 0:
                offsets.append((int(p.partition), int(p.offset)))
        return offsets

    def _commit_transaction(self) -> None:
        """commit_transaction, tried again while Kafka calls its error retriable (a leader
        election on the output topic or the transaction coordinator)."""
        while True:
            try:
                self.producer.commit_transaction(30)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise
                self.worker.ledger.event(now_ms(), "commit-retry", exc.args[0].name())

    def _abort(self, messages: Sequence[Message], outcomes: list[Outcome], why: str) -> None:
        self.producer.abort_transaction(60)
        self.worker.ledger.event(now_ms(), "abort", why)
        self.worker.ledger.outcomes([(*o[:4], now_ms(), ABORTED, 1) for o in outcomes])
        self.worker.stats.aborted += len(outcomes)
        if self.worker.settings.commit == "transaction":
            self._rewind(messages)

    def _rewind(self, messages: Sequence[Message]) -> None:
        first: dict[int, int] = {}
        for message in messages:
            partition, offset = int(message.partition() or 0), int(message.offset() or 0)
            first[partition] = min(first.get(partition, offset), offset)
        for partition, offset in first.items():
            self.worker.consumer.seek(TopicPartition(self.worker.settings.topic, partition, offset))
