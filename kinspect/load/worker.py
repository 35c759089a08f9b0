"""One producer process: sends ids, records every delivery report in the ledger, publishes stats.

The hot path is one produce() and one callback per message, so it is kept plain: sequential
seqs index flat lists, the callback parses the seq from the value's prefix, and everything
slower (Parquet, stats files) happens at most once a second. The one write per batch is the
ledger's write-ahead mark: before a batch goes to the client, a 20-byte pwrite records how far
this producer may send, so a SIGKILL never leaves a sent message the ledger cannot count
(see kinspect/load/ledger.py).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer

from kinspect.clients.kafka import AuthWatch
from kinspect.load.ledger import QUEUE_FULL, LedgerWriter
from kinspect.load.rundir import CRASH_SUFFIX, FAILURE_SUFFIX, STATS_DIR, id_prefix
from kinspect.load.runsettings import LoadSettings
from kinspect.load.runstats import StatsPublisher

SEND_BATCH = 200  # messages between rate checks / polls
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Worker:
    def __init__(self, settings: LoadSettings, producer_id: int, run_dir: Path) -> None:
        self.settings = settings
        self.id = producer_id
        self.stopping = False
        self.parent: int | None = None  # the runner's pid: a worker never outlives it
        self.prefix = id_prefix(settings.run_id, producer_id).encode()
        self.pad = b"x" * settings.size
        self.send_ts: list[int] = []
        self.reported = bytearray()
        self.in_flight = 0
        self.unanswered = settings.acks == "0"  # acks=0: delivery reports carry no offsets
        config: dict[str, Any] = {"bootstrap.servers": settings.bootstrap,
                                  **settings.to_producer_config()}
        config["on_delivery"] = self._on_delivery
        # A login refused mid-run (a rotated password) would otherwise time out every send,
        # minutes later, as _MSG_TIMED_OUT: stop at once and say why (FAILURE_FILE).
        self.auth = AuthWatch(settings.bootstrap)
        config["error_cb"] = self.auth
        self.failure: str | None = None
        self.failure_file = run_dir / STATS_DIR / f"p{producer_id:03d}{FAILURE_SUFFIX}"
        self.producer = Producer(config)
        self.ledger = LedgerWriter(run_dir, producer_id, settings.topic, settings.acks,
                                   settings.run_id)
        self.stats = StatsPublisher(run_dir, producer_id)
        self.refuse_when_full = settings.buffer_full == "refuse"
        self.crash_at = (time.monotonic() + settings.crash_at_s
                         if settings.crash_at_s is not None else None)
        self.crash_file = run_dir / STATS_DIR / f"p{producer_id:03d}{CRASH_SUFFIX}"

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        value = msg.value()
        seq = int(value[len(self.prefix) : value.index(b"|")])
        now = now_ms()
        sent = self.send_ts[seq]
        self.reported[seq] = 1
        self.in_flight -= 1
        if err is None:
            # acks=0: no broker answers, so no offset is known; librdkafka still numbers the
            # messages of a batch from an unknown base (-1, 0, 1, …), which are not offsets.
            offset = -1 if self.unanswered else msg.offset()
            epoch = None if self.unanswered else msg.leader_epoch()
            self.ledger.record(seq, msg.partition(), offset if offset is not None and offset >= 0
                               else -1,
                               epoch if epoch is not None and epoch >= 0 else None,
                               "acked", None, sent, now)
            self.stats.acked(now - sent)
        else:
            name = err.name()
            self.ledger.record(seq, msg.partition(), -1, None, "failed", name, sent, now)
            self.stats.failed(name)

    def _value(self, seq: int) -> bytes:
        head = self.prefix + str(seq).encode() + b"|"
        return head + self.pad[: max(0, self.settings.size - len(head))]

    def _quota(self) -> int:
        """Sends already allowed by the count and the rate (at most one batch)."""
        quota = SEND_BATCH
        if self.total is not None:
            quota = min(quota, self.total - self.seq)
        if self.rate is not None:
            elapsed = time.monotonic() - self.started
            quota = min(quota, int(elapsed * self.rate) + 1 - self.seq)
        return quota

    def _grant_end(self) -> int:
        """The last seq of the next write-ahead mark: one batch ahead (never past the count), so
        a slow rate still writes the mark once per batch, and a crash over-counts at most one
        batch as unknown."""
        end = self.seq + SEND_BATCH - 1
        return end if self.total is None else min(end, self.total - 1)

    def run(self) -> int:
        settings = self.settings
        self.rate = settings.rate / settings.producers if settings.rate else None
        self.total: int | None = None
        if settings.count is not None:
            share, extra = divmod(settings.count, settings.producers)
            self.total = share + (1 if self.id < extra else 0)
        deadline = time.monotonic() + settings.duration_s if settings.duration_s else None
        self.started = time.monotonic()
        self.seq = 0
        produce, poll, topic = self.producer.produce, self.producer.poll, settings.topic
        while not self.stopping:
            if self.total is not None and self.seq >= self.total:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            quota = self._quota()
            if quota <= 0:
                poll(0.002)
                self._tick()
                continue
            if self.seq + quota - 1 > self.ledger.granted:
                self.ledger.grant(self._grant_end())  # write-ahead: before produce() sees them
            for _ in range(quota):
                seq = self.seq
                ts = now_ms()
                self.send_ts.append(ts)
                self.reported.append(0)
                try:
                    produce(topic, self._value(seq))
                except BufferError:
                    if self.refuse_when_full:  # the application drops it: a failed send
                        self._refused(seq, ts)
                        continue
                    self.send_ts.pop()
                    self.reported.pop()
                    poll(0.05)
                    break
                self.in_flight += 1
                self.ledger.note_sent(seq, ts)
                self.seq = seq + 1
            poll(0)
            self._tick()
        return self._finish()

    def _refused(self, seq: int, ts: int) -> None:
        """A send the full buffer refused: recorded as failed with librdkafka's own name for
        it, so it is counted as the client's refusal, never as a broker's loss."""
        self.reported[seq] = 1
        self.ledger.note_sent(seq, ts)
        self.ledger.record(seq, -1, -1, None, "failed", QUEUE_FULL, ts, ts)
        self.stats.failed(QUEUE_FULL)
        self.seq = seq + 1

    def _maybe_crash(self) -> None:
        """The planned crash: the mark lowered to exactly what produce() took, the counts
        written down (stats/pNNN.crash), then SIGKILL with the buffer full of messages."""
        if self.crash_at is None or time.monotonic() < self.crash_at:
            return
        self.ledger.grant(self.seq - 1)
        queued = len(self.producer)
        crash = {"ts": now_ms(), "sent": self.seq, "in_client": queued,
                 "unreported": self.in_flight}
        self.crash_file.write_text(json.dumps(crash) + "\n")
        os.kill(os.getpid(), signal.SIGKILL)

    def _tick(self) -> None:
        self._maybe_crash()
        if self.parent is not None and os.getppid() != self.parent:
            self.stopping = True  # the runner is gone: finish the ledger and stop sending
        if self.failure is None and (line := self.auth.failure()) is not None:
            self.failure, self.stopping = line, True
        now = now_ms()
        self.ledger.maybe_flush(now)
        self.stats.maybe_publish(now, sent=len(self.send_ts), in_flight=self.in_flight)

    def _finish(self) -> int:
        """Wait for outstanding reports (bounded by the delivery timeout), then record the rest."""
        limit = time.monotonic() + (self.settings.delivery_timeout_ms or 120000) / 1000 + 5
        while self.in_flight > 0 and time.monotonic() < limit and not self.stopping:
            self.producer.poll(0.1)
            self._tick()
        if self.stopping:
            self.producer.flush(2.0)
        unknown = [(s, self.send_ts[s]) for s, done in enumerate(self.reported) if not done]
        self.ledger.close(unknown)
        self.stats.maybe_publish(now_ms(), sent=len(self.send_ts), in_flight=len(unknown),
                                 done=True, force=True)
        if self.failure is not None:  # after the ledger: what was recorded is kept
            self.failure_file.write_text(self.failure + "\n")
            return 2
        return 0

    def request_stop(self, *_args: Any) -> None:
        self.stopping = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kinspect-load-worker")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--producer", type=int, required=True)
    parser.add_argument("--parent", type=int, help="the runner's pid: stop when it is gone")
    parser.add_argument("--config-on-stdin", action="store_true",
                        help="read the producer properties (secrets too) as JSON from stdin, "
                             "not from settings.json (which holds references and ***)")
    args = parser.parse_args(argv)
    from dataclasses import replace

    from kinspect.errors import KinspectError

    settings = LoadSettings.load(args.run_dir)
    try:
        if args.config_on_stdin:  # the runner's pipe: the secrets never touch the disk
            handed = json.loads(sys.stdin.buffer.read() or b"{}")
            settings = replace(settings, extra={str(k): str(v)
                                                for k, v in handed.get("extra", {}).items()})
        else:  # started by hand: read the references of settings.json now
            settings = settings.with_secrets(str(args.run_dir / "settings.json"))
    except (KinspectError, ValueError, AttributeError) as exc:
        print(f"kinspect-load-worker: error: {exc}", file=sys.stderr)
        return 2
    worker = Worker(settings, args.producer, args.run_dir)
    signal.signal(signal.SIGTERM, worker.request_stop)
    signal.signal(signal.SIGINT, worker.request_stop)
    if args.parent is not None:
        worker.parent = args.parent
        die_with_parent()
    return worker.run()


def die_with_parent() -> None:
    """Ask Linux for SIGTERM when the runner dies (a closed terminal, a SIGKILL): the worker
    then records what is in flight and stops, instead of producing on. `_tick` also checks
    the parent, for a runner that died before this call or a kernel without prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
