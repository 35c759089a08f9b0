"""One consumer process: joins the group, processes records, commits as its mode says.

The modes are the source material's consumer cases (settings.py). Processing one record takes
`process_ms` and fails with probability `fail_rate`; its outcome line in the consumer ledger
is the processing (consumer_ledger.py). With `output`, processing is consume-transform-produce: each
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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kinspect.clients.kafka import AuthWatch
from kinspect.load.consumers.consumer_ledger import FAILED, PROCESSED, ConsumerLedger, message_id, now_ms
from kinspect.load.consumers.settings import ConsumeSettings
from kinspect.load.consumers.stats import ConsumerStats
from kinspect.load.consumers.transform import Transformer
from kinspect.load.consumers.watch import CommitWatcher
from kinspect.load.producer_worker import die_with_parent
from kinspect.load.rundir import SUMMARY_FILE


class ConsumerWorker:
    def __init__(self, settings: ConsumeSettings, consumer_id: int, incarnation: int,
                 run_dir: Path) -> None:
        self.settings = settings
        self.id, self.incarnation = consumer_id, incarnation
        self.ledger = ConsumerLedger(run_dir, consumer_id, incarnation, settings.run_id)
        self.stats = ConsumerStats(run_dir, consumer_id, incarnation)
        self.rng = random.Random(f"{settings.run_id}-{consumer_id}-{incarnation}")
        self.stopping = False
        self.parent: int | None = None
        self.received = 0
        self.started = time.monotonic()
        self.last_record = self.started
        self.assigned_at: float | None = None
        self.load_summary = run_dir / SUMMARY_FILE  # written when the run dir's load ends
        self.load_ended_at: float | None = None
        self.will_crash = consumer_id == 0 and incarnation == 0 and (
            settings.crash_after is not None or settings.crash_at_s is not None)
        self.auth = AuthWatch(settings.bootstrap)
        config = settings.consumer_config()
        config.update({"on_commit": self._on_commit, "error_cb": self.auth})
        self.consumer = Consumer(config)
        self.watcher = (CommitWatcher(settings, self.ledger, self.stats)
                        if settings.commit == "auto" else None)
        self.transformer = Transformer(self) if settings.output is not None else None

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
        if self.transformer is not None:
            self.transformer.start()
        self.consumer.subscribe([settings.topic], on_assign=self._assigned,
                                on_revoke=self._revoked)
        deadline = (self.started + settings.duration_s) if settings.duration_s else None
        self.ledger.event(now_ms(), "start", f"commit={settings.commit}")
        if self.watcher is not None:
            self.watcher.start()
        while not self._should_stop(deadline):
            self.maybe_crash()
            messages = [m for m in self.consumer.consume(settings.batch, timeout=0.5)
                        if m.error() is None and m.topic() == settings.topic]
            if not messages:
                continue
            self.last_record = time.monotonic()
            self._record_poll(messages)
            if self.transformer is not None:
                self.transformer.transform(messages)
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
        return self._idle(now)

    def _idle(self, now: float) -> bool:
        """Nothing received for idle_stop_s since the assignment (and, with idle_after_load,
        since the run dir's load ended)."""
        idle = self.settings.idle_stop_s
        if idle is None or self.assigned_at is None:
            return False
        quiet_since = max(self.last_record, self.assigned_at)
        if self.settings.idle_after_load:
            if self.load_ended_at is None and self.load_summary.exists():
                self.load_ended_at = now
            if self.load_ended_at is None:
                return False
            quiet_since = max(quiet_since, self.load_ended_at)
        return now - quiet_since >= idle

    def maybe_crash(self) -> None:
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
            self.commit()
        received = now_ms()
        for message in messages:
            self.received += 1
            self.maybe_crash()
            self._process(message, received, retry=mode == "after")
        if mode == "after":
            self.commit()

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

    def commit(self) -> None:
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

    def request_stop(self, *_args: Any) -> None:
        self.stopping = True


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
