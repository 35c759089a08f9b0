"""One consumer process: joins the group, processes records, commits as its mode says.

The modes are the source material's consumer cases (settings.py). Processing one record takes
`process_ms` and fails with probability `fail_rate`; its outcome line in the consumer ledger
is the processing (ledger.py). With `output`, processing is consume-transform-produce: each
poll's records are copied to the output topic inside one transaction, which aborts with
probability `fail_rate`. A planned crash (`crash_after`, `crash_at_s`) is a SIGKILL of this
process by itself: nothing runs after it, as in a real crash; the runner may start a new
incarnation, which joins the group as a new member.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from kinspect.clients.kafka import AuthWatch
from kinspect.load.consumers.ledger import ABORTED, FAILED, PROCESSED, ConsumerLedger
from kinspect.load.consumers.settings import ConsumeSettings
from kinspect.load.consumers.stats import ConsumerStats
from kinspect.load.rundir import id_prefix, parse_message_id
from kinspect.load.worker import die_with_parent

Outcome = tuple[int, int, str | None, int, int, str, int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def message_id(value: bytes | None) -> str | None:
    ident = parse_message_id(value)
    return None if ident is None else id_prefix(ident[0] or "", ident[1]) + str(ident[2])


class ConsumerWorker:
    def __init__(self, settings: ConsumeSettings, consumer_id: int, incarnation: int,
                 run_dir: Path) -> None:
        self.settings = settings
        self.id, self.incarnation = consumer_id, incarnation
        self.ledger = ConsumerLedger(run_dir, consumer_id, incarnation)
        self.stats = ConsumerStats(run_dir, consumer_id, incarnation)
        self.rng = random.Random(f"{settings.run_id}-{consumer_id}-{incarnation}")
        self.stopping = False
        self.parent: int | None = None
        self.received = 0
        self.started = time.monotonic()
        self.last_record = self.started
        self.assigned_at: float | None = None
        self.will_crash = consumer_id == 0 and incarnation == 0 and (
            settings.crash_after is not None or settings.crash_at_s is not None)
        self.auth = AuthWatch(settings.bootstrap)
        config = settings.consumer_config()
        config.update({"on_commit": self._on_commit, "error_cb": self.auth})
        self.consumer = Consumer(config)
        self.watcher = CommitWatcher(self) if settings.commit == "auto" else None
        self.producer: Producer | None = None
        if settings.output is not None:
            self.producer = Producer({
                "bootstrap.servers": settings.bootstrap, "log_level": 2,
                "transactional.id": f"kinspect-{settings.group}-{consumer_id}",
                **settings.extra})

    # ----- callbacks (served inside poll/consume) ------------------------------------------

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's word on its auto-commits (served only inside consume(), so possibly
        long after the fact, or never before a crash: CommitWatcher records when they land)."""
        if self.settings.commit == "auto" and err is not None \
                and err.code() != KafkaError._NO_OFFSET:
            self.ledger.event(now_ms(), "commit-failed", err.name())

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned_at = time.monotonic()
        if self.watcher is not None:
            self.watcher.partitions = [p.partition for p in partitions]
        self.ledger.event(now_ms(), "assigned", " ".join(str(p.partition) for p in partitions))

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.ledger.event(now_ms(), "revoked", " ".join(str(p.partition) for p in partitions))

    # ----- the loop ---------------------------------------------------------------------------

    def run(self) -> int:
        settings = self.settings
        if self.producer is not None:
            self.producer.init_transactions(30)  # fences (and aborts) a dead incarnation's
        self.consumer.subscribe([settings.topic], on_assign=self._assigned,
                                on_revoke=self._revoked)
        deadline = (self.started + settings.duration_s) if settings.duration_s else None
        self.ledger.event(now_ms(), "start", f"commit={settings.commit}")
        if self.watcher is not None:
            self.watcher.start()
        while not self._should_stop(deadline):
            self._maybe_crash()
            messages = [m for m in self.consumer.consume(settings.batch, timeout=0.5)
                        if m.error() is None and m.topic() == settings.topic]
            if not messages:
                continue
            self.last_record = time.monotonic()
            self._record_poll(messages)
            if self.producer is not None:
                self._transform(messages)
            else:
                self._process_batch(messages)
            self.stats.maybe_publish()
        self.ledger.event(now_ms(), "stop", "")
        self.stats.publish(done=True)
        self.consumer.close()  # auto mode: commits what was consumed, as a real one would
        if self.watcher is not None:
            self.watcher.stop()
        self.ledger.close()
        return 0

    def _should_stop(self, deadline: float | None) -> bool:
        if self.stopping:
            return True
        if self.parent is not None and os.getppid() != self.parent:
            return True
        if self.auth.failure() is not None:
            return True
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return True
        idle = self.settings.idle_stop_s
        return (idle is not None and self.assigned_at is not None
                and now - max(self.last_record, self.assigned_at) >= idle)

    def _maybe_crash(self) -> None:
        """Planned death: consumer 0's first incarnation, after N records or S seconds."""
        if not self.will_crash:
            return
        settings = self.settings
        due = ((settings.crash_after is not None and self.received >= settings.crash_after)
               or (settings.crash_at_s is not None
                   and time.monotonic() - self.started >= settings.crash_at_s))
        if due:
            self.ledger.event(now_ms(), "crash", f"after {self.received} records")
            self.stats.publish(crashed=True)
            os.kill(os.getpid(), signal.SIGKILL)

    def _record_poll(self, messages: Sequence[Message]) -> None:
        ranges: dict[int, list[int]] = {}
        for message in messages:
            offset, partition = int(message.offset() or 0), int(message.partition() or 0)
            span = ranges.setdefault(partition, [offset, offset, 0])
            span[0], span[1], span[2] = min(span[0], offset), max(span[1], offset), span[2] + 1
        self.ledger.polled(now_ms(), [(p, a, b, n) for p, (a, b, n) in sorted(ranges.items())])
        self.stats.received += len(messages)

    # ----- plain consumers --------------------------------------------------------------------

    def _process_batch(self, messages: Sequence[Message]) -> None:
        mode = self.settings.commit
        if mode == "before":
            self._commit()
        received = now_ms()
        for message in messages:
            self.received += 1
            self._maybe_crash()
            self._process(message, received, retry=mode == "after")
        if mode == "after":
            self._commit()

    def _process(self, message: Message, received_ts: int, retry: bool) -> None:
        """Sleep `process_ms`, fail with `fail_rate`; `after` tries a failure again."""
        partition, offset = int(message.partition() or 0), int(message.offset() or 0)
        ident = message_id(message.value())
        attempt = 1
        while True:
            if self.settings.process_ms:
                time.sleep(self.settings.process_ms / 1000)
            ok = self.rng.random() >= self.settings.fail_rate
            self.ledger.processed(partition, offset, ident, received_ts, now_ms(),
                                  PROCESSED if ok else FAILED, attempt)
            if ok:
                self.stats.processed += 1
                return
            self.stats.failed += 1
            if not retry:
                return
            attempt += 1

    def _commit(self) -> None:
        """A synchronous commit of the positions consumed so far, written down as made."""
        try:
            done = self.consumer.commit(asynchronous=False) or []
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:
                self.ledger.event(now_ms(), "commit-failed", exc.args[0].name())
            return
        offsets = [(int(p.partition), int(p.offset)) for p in done
                   if p.topic == self.settings.topic and p.offset is not None and p.offset >= 0]
        self.ledger.committed(now_ms(), offsets, "sync")
        self.stats.commits += len(offsets)

    # ----- consume-transform-produce ------------------------------------------------------------

    def _transform(self, messages: Sequence[Message]) -> None:
        """One transaction per poll: copy each record to the output topic; abort with
        `fail_rate` (or when Kafka says the transaction must abort, e.g. its leader died).
        Offsets go inside the transaction (`transaction`), or are committed as the mode says
        outside it; after an abort, `transaction` rewinds to the poll's first offsets so the
        records are processed again, the others move on (the naive loop)."""
        producer, settings, output = self.producer, self.settings, self.settings.output
        assert producer is not None and output is not None
        mode = settings.commit
        if mode == "before":
            self._commit()
        received = now_ms()
        outcomes: list[Outcome] = []
        try:
            producer.begin_transaction()
            for message in messages:
                self.received += 1
                self._maybe_crash()
                if settings.process_ms:
                    time.sleep(settings.process_ms / 1000)
                producer.produce(output, message.value(), message.key())
                outcomes.append((int(message.partition() or 0), int(message.offset() or 0),
                                 message_id(message.value()), received, 0, "", 1))
            # The output reaches the log before the decision, as it does when an application
            # fails after writing (an abort before a flush would only purge the client's queue,
            # and read_uncommitted readers would have nothing to show).
            producer.flush(30)
            if self.rng.random() < settings.fail_rate:
                self._abort(messages, outcomes, "chosen by --fail-rate")
                return
            positions = self.consumer.position(self.consumer.assignment())
            if mode == "transaction":
                producer.send_offsets_to_transaction(
                    positions, self.consumer.consumer_group_metadata(), 30)
            self._commit_transaction()
        except KafkaException as exc:
            error = exc.args[0]
            if not error.txn_requires_abort():
                raise  # fatal (fenced by a newer incarnation, …): this process ends
            self._abort(messages, outcomes, error.name())
            return
        done = now_ms()
        self.ledger.outcomes([(*o[:4], done, PROCESSED, 1) for o in outcomes])
        self.stats.processed += len(outcomes)
        if mode == "transaction":
            offsets = [(int(p.partition), int(p.offset)) for p in positions
                       if p.topic == settings.topic and p.offset is not None and p.offset >= 0]
            self.ledger.committed(done, offsets, "transaction")
            self.stats.commits += len(offsets)
        elif mode == "after":
            self._commit()

    def _commit_transaction(self) -> None:
        """commit_transaction, tried again while Kafka calls its error retriable (a leader
        election on the output topic or the transaction coordinator)."""
        assert self.producer is not None
        while True:
            try:
                self.producer.commit_transaction(30)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise
                self.ledger.event(now_ms(), "commit-retry", exc.args[0].name())

    def _abort(self, messages: Sequence[Message], outcomes: list[Outcome], why: str) -> None:
        assert self.producer is not None
        self.producer.abort_transaction(60)
        self.ledger.event(now_ms(), "abort", why)
        self.ledger.outcomes([(*o[:4], now_ms(), ABORTED, 1) for o in outcomes])
        self.stats.aborted += len(outcomes)
        if self.settings.commit == "transaction":
            self._rewind(messages)

    def _rewind(self, messages: Sequence[Message]) -> None:
        first: dict[int, int] = {}
        for message in messages:
            partition, offset = int(message.partition() or 0), int(message.offset() or 0)
            first[partition] = min(first.get(partition, offset), offset)
        for partition, offset in first.items():
            self.consumer.seek(TopicPartition(self.settings.topic, partition, offset))

    def request_stop(self, *_args: Any) -> None:
        self.stopping = True


class CommitWatcher(threading.Thread):
    """Auto-commits as the group coordinator has them, asked every WATCH_S by a client of
    its own (it joins nothing): a commit line within WATCH_S of the commit landing, which is
    what the words "auto-committed at …" need when the consumer then dies mid-poll."""

    WATCH_S = 0.1

    def __init__(self, worker: ConsumerWorker) -> None:
        super().__init__(name="kinspect-commit-watch", daemon=True)
        settings = worker.settings
        self.worker, self.topic = worker, settings.topic
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
                self.worker.ledger.committed(now_ms(), moved, "auto")
                self.worker.stats.commits += len(moved)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)
        self._client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kinspect-consumer-worker")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--consumer", type=int, required=True)
    parser.add_argument("--incarnation", type=int, default=0)
    parser.add_argument("--parent", type=int, help="the runner's pid: stop when it is gone")
    parser.add_argument("--config-on-stdin", action="store_true",
                        help="read the client properties (secrets too) as JSON from stdin, "
                             "not from settings.json (which holds references and ***)")
    args = parser.parse_args(argv)
    import json
    from dataclasses import replace

    from kinspect.errors import KinspectError
    from kinspect.profiles import resolve_reference

    try:
        settings = ConsumeSettings.load(args.run_dir)
        if args.config_on_stdin:
            handed = json.loads(sys.stdin.buffer.read() or b"{}")
            extra = {str(k): str(v) for k, v in handed.get("extra", {}).items()}
        else:
            extra = {k: resolve_reference(v, k, "settings.json") for k, v in settings.extra.items()}
        settings = replace(settings, extra=extra)
    except (KinspectError, ValueError, AttributeError) as exc:
        print(f"kinspect-consumer-worker: error: {exc}", file=sys.stderr)
        return 2
    worker = ConsumerWorker(settings, args.consumer, args.incarnation, args.run_dir)
    signal.signal(signal.SIGTERM, worker.request_stop)
    signal.signal(signal.SIGINT, worker.request_stop)
    if args.parent is not None:
        worker.parent = args.parent
        die_with_parent()
    return worker.run()


if __name__ == "__main__":
    sys.exit(main())
