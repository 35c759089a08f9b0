"""One producer process: sends ids, records every delivery report in the ledger, publishes stats.

The hot path is one produce() and one callback per message, so it does as little per message
in Python as it can: values come from a bytes template (`prefix%d|xxx…`, one per digit count)
and are handed to produce() in a loop run by C (map), the delivery callback only appends the
message (and an error, when there is one) to a list, and every few thousand reports `_absorb`
turns them into ledger columns at once (seqs read from the values as one byte matrix, send
times looked up in a numpy window, latencies bucketed with numpy).
Ack times are stamped per poll() that served reports, not per message: reports wait in
librdkafka's queue until a poll, so that is when the producer learns of them.

Memory does not grow with the run: the send times and "reported" flags live in a fixed
window of seqs (SendWindow), the ledger holds only the rows since its last chunk. Everything
slower (Parquet, stats files) happens at most once a second. The one write per batch is the
ledger's write-ahead mark: before a batch goes to the client, a 20-byte pwrite records how far
this producer may send, so a SIGKILL never leaves a sent message the ledger cannot count
(see kinspect/load/ack_ledger.py).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import time
from collections import deque
from itertools import repeat
from operator import length_hint
from pathlib import Path
from typing import Any

import numpy as np
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kinspect.clients.kafka import AuthWatch
from kinspect.load.ack_ledger import ACKED, FAILED, QUEUE_FULL, LedgerWriter
from kinspect.load.rundir import CRASH_SUFFIX, FAILURE_SUFFIX, STATS_DIR, id_prefix
from kinspect.load.runsettings import LoadSettings
from kinspect.load.runstats import StatsPublisher

SEND_BATCH = 200  # messages between rate checks / polls
WINDOW = 1 << 20  # seqs tracked from the oldest unreported one (9 MB of arrays)
ABSORB_AT = 4096  # reports gathered before they become ledger rows …
ABSORB_EVERY_MS = 100  # … or this often, whichever comes first
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class SendWindow:
    """Each seq's send time and whether it was reported, from the oldest unreported seq to the
    newest sent: two fixed arrays slid forward, where a list entry per message grew with the
    run (about 4 GB at 100 M). A producer WINDOW seqs ahead of its oldest unreported message
    waits for reports; librdkafka's own buffer (200,000 messages here) is full long before."""

    def __init__(self, size: int = WINDOW) -> None:
        self.base = 0  # every seq below is reported
        self.end = 0  # the next seq to send
        self.ts = np.zeros(size, np.int64)
        self.done = np.zeros(size, np.bool_)

    def room(self) -> int:
        """How many seqs may be sent now (slides past the reported ones when short of room)."""
        free = self.base + len(self.ts) - self.end
        if free < SEND_BATCH:
            self._slide()
            free = self.base + len(self.ts) - self.end
        return free

    def _slide(self) -> None:
        used = self.end - self.base
        if not used:
            return
        first = int(np.argmin(self.done[:used]))  # the oldest unreported seq
        step = used  # none is: every seq in the window is reported
        if not self.done[first]:
            step = first
        if step:
            keep = used - step
            self.ts[:keep] = self.ts[step:used]
            self.done[:keep] = self.done[step:used]
            self.done[keep:used] = False
            self.base += step

    def sent(self, first: int, end: int, ts: int) -> None:
        self.ts[first - self.base : end - self.base] = ts
        self.end = end

    def report(self, seqs: Any) -> Any:
        """Mark these seqs reported; returns their send times."""
        index = np.asarray(seqs, np.int64) - self.base
        if index.size and (index.min() < 0 or index.max() >= self.end - self.base):
            raise RuntimeError(f"a delivery report for a seq not in flight ({seqs})")
        self.done[index] = True
        return self.ts[index]

    def unreported(self) -> tuple[Any, Any]:
        """The seqs sent and not reported, and their send times."""
        index = np.flatnonzero(~self.done[: self.end - self.base])
        return index + self.base, self.ts[index]


class Worker:
    def __init__(self, settings: LoadSettings, producer_id: int, run_dir: Path) -> None:
        self.settings = settings
        self.id = producer_id
        self.stopping = False
        self.parent: int | None = None  # the runner's pid: a worker never outlives it
        self.prefix = id_prefix(settings.run_id, producer_id).encode()
        self.window = SendWindow()
        self.seq = 0
        self.in_flight = 0  # handed to the client, report not absorbed yet
        self._width_end = 0  # the first seq the current value template is too narrow for
        self._template = b""
        self.unanswered = settings.acks == "0"  # acks=0: delivery reports carry no offsets
        config: dict[str, object] = {"bootstrap.servers": settings.bootstrap,
                                  **settings.to_producer_config()}
        # The delivery callback, once per message: keep the report, nothing else (`_absorb`).
        reports: list[Any] = []
        failures: list[tuple[int, KafkaError]] = []

        def on_delivery(err: KafkaError | None, msg: Any, keep: Any = reports.append) -> None:
            keep(msg)
            if err is not None:
                failures.append((len(reports) - 1, err))

        self._reports, self._failures = reports, failures
        self._stamps: list[tuple[int, int]] = []  # (reports so far, ms): when polls served them
        self._absorbed_ms = 0
        config["on_delivery"] = on_delivery
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
        self.crash_at: float | None = None
        if settings.crash_at_s is not None:
            self.crash_at = time.monotonic() + settings.crash_at_s
        self.crash_file = run_dir / STATS_DIR / f"p{producer_id:03d}{CRASH_SUFFIX}"

    def _value_template(self, seq: int) -> tuple[bytes, int]:
        """`prefix%d|` padded to the message size, for seqs with as many digits as `seq`, and
        the first seq with one digit more."""
        digits = len(str(seq))
        pad = max(0, self.settings.size - len(self.prefix) - digits - 1)
        return self.prefix.replace(b"%", b"%%") + b"%d|" + b"x" * pad, 10**digits

    def _poll(self, timeout: float) -> None:
        """poll(), then stamp the reports it served with the time it returned (their ack_ts)."""
        self.producer.poll(timeout)
        count = len(self._reports)
        stamped = 0  # reports already stamped
        if self._stamps:
            stamped = self._stamps[-1][0]
        if count > stamped:
            self._stamps.append((count, now_ms()))
            if count >= ABSORB_AT:
                self._absorb()

    def _absorb(self) -> None:
        """The reports gathered since the last call, as one batch of ledger rows."""
        reports, failures, stamps = self._reports, self._failures, self._stamps
        count = len(reports)
        if not count:
            return
        now = now_ms()
        self._absorbed_ms = now
        stamped = 0
        if stamps:
            stamped = stamps[-1][0]
        if count > stamped:  # served outside _poll (none expected)
            stamps.append((count, now))
        seqs = self._seqs(list(map(Message.value, reports)))
        partitions = list(map(Message.partition, reports))
        offsets: list[int | None] | None = None
        epochs: list[int | None] | None = None
        if not self.unanswered:  # acks=0: librdkafka numbers a batch from -1: not offsets
            offsets = list(map(Message.offset, reports))
            epochs = list(map(Message.leader_epoch, reports))
        ends = np.array([end for end, _ in stamps])
        ack_ts = np.repeat(np.array([ts for _, ts in stamps], np.int64),
                           np.diff(ends, prepend=0))
        send_ts = self.window.report(seqs)
        status = np.full(count, ACKED, np.int8)
        errors: list[str | None] | None = None
        if failures:
            errors = [None] * count
            for index, err in failures:
                name = err.name()
                status[index], errors[index] = FAILED, name
                if offsets is not None and epochs is not None:
                    offsets[index] = epochs[index] = None
                self.stats.failed(name)
        self.ledger.append(seqs, partitions, offsets, epochs, status, errors, send_ts, ack_ts)
        self.stats.acked_many((ack_ts - send_ts)[status == ACKED])
        self.in_flight -= count
        reports.clear()
        failures.clear()
        stamps.clear()

    def _seqs(self, values: list[Any]) -> Any:
        """The seq in each value (`prefix<seq>|…`). Values all of the message size, as with
        any size that fits 18 digits, are read as one byte matrix, a digit count at a time."""
        start, size = len(self.prefix), self.settings.size
        joined = b""  # a size too small for 18 digits and the `|`: read one by one
        if size >= start + 20:
            joined = b"".join(values)
        if len(joined) != size * len(values):  # a value longer than the size: one by one
            return np.array([int(v[start : v.index(124, start)]) for v in values], np.int64)
        raw = np.frombuffer(joined, np.uint8).reshape(len(values), size)
        head = raw[:, start : start + 19]
        widths = np.argmax(head == ord("|"), axis=1)
        narrow, wide = int(widths.min()), int(widths.max())
        seqs = np.empty(len(values), np.int64)
        rows: Any = slice(None)  # nearly always: one digit count, every row
        for width in range(narrow, wide + 1):
            if narrow != wide:
                rows = widths == width
            digits = head[rows, :width].astype(np.int64) - ord("0")
            seqs[rows] = digits @ (10 ** np.arange(width - 1, -1, -1, dtype=np.int64))
        return seqs

    def _outstanding(self) -> int:
        """Messages the client holds whose report has not come back."""
        return self.in_flight - len(self._reports)

    def _quota(self) -> int:
        """Sends already allowed by the count, the rate and the window (at most one batch)."""
        quota = SEND_BATCH
        if self.total is not None:
            quota = min(quota, self.total - self.seq)
        if self.rate is not None:
            elapsed = time.monotonic() - self.started
            quota = min(quota, int(elapsed * self.rate) + 1 - self.seq)
        if quota > 0 and self.window.room() < quota:
            self._absorb()  # reports not absorbed yet hold the window's far end
            quota = min(quota, self.window.room())
        return quota

    def _grant_end(self) -> int:
        """The last seq of the next write-ahead mark: one batch ahead (never past the count), so
        a slow rate still writes the mark once per batch, and a crash over-counts at most one
        batch as unknown."""
        end = self.seq + SEND_BATCH - 1
        if self.total is None:
            return end
        return min(end, self.total - 1)

    def run(self) -> int:
        settings = self.settings
        self.rate: float | None = None  # as fast as it can
        if settings.rate:
            self.rate = settings.rate / settings.producers
        self.total: int | None = None
        if settings.count is not None:
            share, extra = divmod(settings.count, settings.producers)
            self.total = share
            if self.id < extra:  # the first producers send one more each
                self.total += 1
        deadline = None
        if settings.duration_s:
            deadline = time.monotonic() + settings.duration_s
        self.started = time.monotonic()
        while not self.stopping:
            if self.total is not None and self.seq >= self.total:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            quota = self._quota()
            if quota <= 0:
                self._poll(0.002)
                self._tick()
                continue
            if self.seq + quota - 1 > self.ledger.granted:
                self.ledger.grant(self._grant_end())  # write-ahead: before produce() sees them
            self._send(quota)
            self._poll(0)
            self._tick()
        return self._finish()

    def _send(self, quota: int) -> None:
        """Hand the next seqs (at most `quota`) to the client; a full buffer ends the batch
        (after a wait), or refuses each send it hits (--buffer-full refuse). A send produce()
        itself refuses (librdkafka's _UNKNOWN_TOPIC while its metadata, just after every
        broker restarted, lacks the topic) is a failed send, and the load goes on: it had
        ended an hour's nemesis after 8 minutes."""
        first = self.seq
        if first >= self._width_end:
            self._template, self._width_end = self._value_template(first)
        count = min(quota, self._width_end - first)
        template, produce, topic = self._template, self.producer.produce, self.settings.topic
        values = [template % seq for seq in range(first, first + count)]
        ts = now_ms()
        done = 0
        refused: list[tuple[int, str]] = []
        full = False
        while done < count and not full:
            rest = values
            if done:
                rest = values[done:]
            left = iter(rest)
            try:  # produce(topic, value) for each value, looped in C
                deque(map(produce, repeat(topic), left), maxlen=0)
                done = count
            except BufferError:  # the value it refused was taken from `left`
                done = count - length_hint(left) - 1
                if self.refuse_when_full:  # the application drops it: a failed send
                    refused.append((first + done, QUEUE_FULL))
                    done += 1
                else:
                    full = True
            except KafkaException as exc:  # refused by the client: that send failed
                done = count - length_hint(left) - 1
                refused.append((first + done, _error_name(exc)))
                done += 1
        if done:
            self.window.sent(first, first + done, ts)
            self.ledger.note_sent(first + done - 1, ts)
            self.seq = first + done
            self.in_flight += done - len(refused)
            for seq, error in refused:
                self._refused(seq, error, ts)
        if full:
            self._poll(0.05)

    def _refused(self, seq: int, error: str, ts: int) -> None:
        """A send the client refused: recorded as failed with librdkafka's own name for why,
        so it is counted as the client's refusal, never as a broker's loss."""
        self.window.report(np.array([seq]))
        self.ledger.record(seq, -1, -1, None, "failed", error, ts, ts)
        self.stats.failed(error)

    def _maybe_crash(self) -> None:
        """The planned crash: the mark lowered to exactly what produce() took, the counts
        written down (stats/pNNN.crash), then SIGKILL with the buffer full of messages."""
        if self.crash_at is None or time.monotonic() < self.crash_at:
            return
        self.ledger.grant(self.seq - 1)
        queued = len(self.producer)
        crash = {"ts": now_ms(), "sent": self.seq, "in_client": queued,
                 "unreported": self._outstanding()}
        self.crash_file.write_text(json.dumps(crash) + "\n")
        os.kill(os.getpid(), signal.SIGKILL)

    def _tick(self) -> None:
        self._maybe_crash()
        if self.parent is not None and os.getppid() != self.parent:
            self.stopping = True  # the runner is gone: finish the ledger and stop sending
        if self.failure is None and (line := self.auth.failure()) is not None:
            self.failure, self.stopping = line, True
        now = now_ms()
        if self._reports and now - self._absorbed_ms >= ABSORB_EVERY_MS:
            self._absorb()
        self.ledger.maybe_flush(now)
        self.stats.maybe_publish(now, sent=self.seq, in_flight=self.in_flight)

    def _finish(self) -> int:
        """Wait for outstanding reports (bounded by the delivery timeout), then record the rest."""
        timeout_ms = self.settings.delivery_timeout_ms
        if timeout_ms is None:  # librdkafka's own default
            timeout_ms = 120000
        limit = time.monotonic() + timeout_ms / 1000 + 5
        while self._outstanding() > 0 and time.monotonic() < limit and not self.stopping:
            self._poll(0.1)
            self._tick()
        if self.stopping:  # what the next 2 s bring back is still recorded
            limit = time.monotonic() + 2.0
            while self._outstanding() > 0 and time.monotonic() < limit:
                self._poll(0.1)
        self._absorb()
        unknown, send_ts = self.window.unreported()
        self.ledger.unknown(unknown, send_ts)
        self.ledger.close()
        self.stats.maybe_publish(now_ms(), sent=self.seq, in_flight=len(unknown),
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


def _error_name(exc: KafkaException) -> str:
    """librdkafka's name for what produce() raised (_UNKNOWN_TOPIC, ...)."""
    if exc.args and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].name())
    return type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
