"""`kinspect verify`: read the final log back by identity (the rule Kafka's system tests use).

Every partition is read from its log start to its high watermark with a fresh consumer that
joins no group and commits nothing; each record's run, id, offset, batch leader epoch and
timestamp go to RUN_DIR/final_log/part-NNNN.parquet for the post-mortem, which keeps the run's
own records and counts the others (a topic used by several runs holds them all).

Memory stays bounded whatever the log holds: each batch consume() gives is parsed in Arrow and
held per partition only until ROWS records are there, which go to the partition's Parquet file
as one row group. Files are written under a hidden temporary name and renamed only when every partition is
complete, so a crash never leaves a part file that looks whole.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kinspect.clients.kafka import client_config, list_topics
from kinspect.errors import KinspectError
from kinspect.load.rundir import FINAL_LOG_DIR

FINAL_LOG_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("id", pa.string()), ("producer", pa.int32()), ("seq", pa.int64()),
    ("leader_epoch", pa.int32()), ("timestamp", pa.int64()), ("run", pa.string()),
])

# The files add, for each record, the seq of the record before it in the partition from the
# same run and producer (null: none): the post-mortem counts reordering from it without
# sorting the log again. Older files lack it; the post-mortem then sorts.
FINAL_LOG_FILE_SCHEMA = FINAL_LOG_SCHEMA.append(pa.field("prev_seq", pa.int64()))
NO_PRODUCER = -1

ROWS = 32_768  # records per Arrow batch, i.e. per Parquet row group
BUFFERED = 4 * ROWS  # records held over all partitions before the fullest is written early
STALL_S = 60.0  # no record and no partition finished for this long: give up
BASE_S, PER_MILLION_S = 120.0, 60.0  # the overall limit: generous; the stall check is the guard
# rundir.MESSAGE_ID with names, for Arrow (a unit test keeps the two alike)
ID_PATTERN = r"^(?:(?P<run>[0-9a-f]{8})-)?(?P<producer>\d{1,9})-(?P<seq>\d{1,18})\|"

Count = Callable[[int, int], None]


def time_limit(records: int) -> float:
    """The overall limit for reading `records`: a base plus an allowance per million (reading
    runs at ~100k records/s here, so the allowance is ten times what it needs)."""
    return BASE_S + PER_MILLION_S * records / 1_000_000


@dataclass(frozen=True)
class PartitionRead:
    partition: int
    log_start: int
    high_watermark: int
    records: int


class PreviousSeqs:
    """Each record's previous seq from the same (run, producer) in one partition's offset order,
    carried across batches: the last seq seen per (run, producer) is all it keeps."""

    def __init__(self) -> None:
        self.last: dict[int, int] = {}  # run number << 32 | producer -> last seq
        self.runs: dict[str | None, int] = {}

    def of(self, batch: pa.RecordBatch) -> pa.Array:
        n = batch.num_rows
        if n == 0:
            return pa.array([], pa.int64())
        runs = pc.dictionary_encode(batch.column("run"))
        lut = np.array([self.runs.setdefault(name, len(self.runs))
                        for name in runs.dictionary.to_pylist()] + [self.runs.setdefault(
                            None, len(self.runs))], np.int64)
        index = pc.fill_null(runs.indices, len(lut) - 1).to_numpy()
        producer = pc.fill_null(batch.column("producer"), NO_PRODUCER).to_numpy().astype(np.int64)
        seq = pc.fill_null(batch.column("seq"), 0).to_numpy()
        key = (lut[index] << 32) | (producer & 0xFFFFFFFF)
        order = np.argsort(key, kind="stable")
        keys, seqs = key[order], seq[order]
        first = np.ones(n, bool)
        first[1:] = keys[1:] != keys[:-1]
        prev = np.empty(n, np.int64)
        prev[1:] = seqs[:-1]
        known = np.ones(n, bool)
        for at in np.flatnonzero(first):
            before = self.last.get(int(keys[at]))
            if before is None:  # the first record of its run and producer here
                prev[at], known[at] = 0, False
            else:
                prev[at] = before
        last = np.append(np.flatnonzero(first)[1:] - 1, n - 1)
        self.last.update(zip(keys[last].tolist(), seqs[last].tolist(), strict=True))
        out, valid = np.empty(n, np.int64), np.empty(n, bool)
        out[order], valid[order] = prev, known
        valid &= producer != NO_PRODUCER
        return pa.array(out, pa.int64(), mask=~valid)


@dataclass
class _Partition:
    """One partition being read: its records not yet written (Arrow) and its Parquet writer."""

    number: int
    low: int
    high: int
    tmp: Path
    records: int = 0  # read so far (written or held)
    next: int = 0  # the next offset to read
    held: list[pa.RecordBatch] = field(default_factory=list)
    rows: int = 0  # held
    writer: pq.ParquetWriter | None = None
    order: PreviousSeqs = field(default_factory=PreviousSeqs)

    def __post_init__(self) -> None:
        self.next = self.low

    def add(self, batch: pa.RecordBatch) -> None:
        """Hold the batch; every ROWS records held become one row group."""
        self.held.append(batch.append_column("prev_seq", self.order.of(batch)))
        self.rows += batch.num_rows
        self.records += batch.num_rows
        self.next = batch.column(2)[-1].as_py() + 1
        while self.rows >= ROWS:
            self.write(ROWS)

    def write(self, limit: int) -> None:
        """Append the first `limit` held records (at most) as one row group."""
        if not self.rows:
            return
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, FINAL_LOG_FILE_SCHEMA)
        table = pa.Table.from_batches(self.held, FINAL_LOG_FILE_SCHEMA)
        group = table.slice(0, limit)
        self.writer.write_table(group, row_group_size=group.num_rows)
        self.held = table.slice(group.num_rows).to_batches()
        self.rows -= group.num_rows

    def finish(self) -> None:
        """Write what is left, close, and sync the temporary file (an empty partition: an
        empty file, so every partition has one)."""
        self.write(self.rows)
        if self.writer is None:
            pq.write_table(FINAL_LOG_FILE_SCHEMA.empty_table(), self.tmp)
        else:
            self.writer.close()
            self.writer = None
        with open(self.tmp, "rb") as handle:
            os.fsync(handle.fileno())

    def discard(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.held, self.rows = [], 0
        self.tmp.unlink(missing_ok=True)


def to_batch(topic: str, partitions: list[int], offsets: list[int], values: list[bytes | None],
             epochs: list[int | None], stamps: list[int]) -> pa.RecordBatch:
    """Records as one FINAL_LOG_SCHEMA batch; ids parsed in Arrow, not per record in Python.
    A value kinspect did not write (a foreign record) has null id, producer, seq and run."""
    found = pc.extract_regex(pa.array(values, pa.binary()), pattern=ID_PATTERN)
    run = pc.cast(pc.struct_field(found, "run"), pa.string())
    run = pc.if_else(pc.equal(run, ""), pa.scalar(None, pa.string()), run)
    producer = pc.cast(pc.cast(pc.struct_field(found, "producer"), pa.string()), pa.int32())
    seq = pc.cast(pc.cast(pc.struct_field(found, "seq"), pa.string()), pa.int64())
    tail = [pc.cast(producer, pa.string()), pc.cast(seq, pa.string())]
    ident = pc.if_else(pc.is_null(run), pc.binary_join_element_wise(*tail, "-"),
                       pc.binary_join_element_wise(run, *tail, "-"))
    epoch = pa.array(epochs, pa.int32())
    epoch = pc.if_else(pc.less(epoch, 0), pa.scalar(None, pa.int32()), epoch)
    return pa.record_batch([
        pa.repeat(pa.scalar(topic, pa.string()), len(offsets)), pa.array(partitions, pa.int32()),
        pa.array(offsets, pa.int64()), ident, producer, seq, epoch, pa.array(stamps, pa.int64()),
        run,
    ], schema=FINAL_LOG_SCHEMA)


def verify(bootstrap: str, topic: str, run_dir: Path, timeout_s: float | None = None,
           progress: Callable[[str], None] | None = None,
           config: dict[str, str] | None = None, isolation: str = "read_uncommitted",
           into: str = FINAL_LOG_DIR, count: Count | None = None,
           stall_s: float = STALL_S) -> list[PartitionRead]:
    """Read every partition to its high watermark; write the final log (RUN_DIR/`into`);
    return counts. read_committed (a transactional output) leaves aborted records out.

    timeout_s is the overall limit (None: time_limit() of the records to read); reading also
    stops after stall_s without progress. `count(done, total)` follows the offsets read (for
    a bar); without it, `progress` gets a line each second instead."""
    if config is None:
        config = {}
    settings, auth = client_config({
        **config,
        "bootstrap.servers": bootstrap,
        "group.id": f"kinspect-verify-{uuid.uuid4().hex[:8]}",  # never joined: we assign()
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": isolation,
        "auto.offset.reset": "earliest",  # a log start that moved under us: read from the start
        "enable.partition.eof": True,
        "socket.timeout.ms": 10000,
        "queued.max.messages.kbytes": 32768,  # librdkafka's prefetch: bounded, half its default
    })
    consumer = Consumer(settings)
    try:
        try:
            metadata = list_topics(consumer, auth, 15, topic)  # a refused login: said at once
        except KafkaException as exc:
            raise KinspectError(f"cannot reach the brokers at {bootstrap}: "
                                f"{exc.args[0].str()}") from None
        info = metadata.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            raise KinspectError(f"topic {topic!r} does not exist")
        leaderless = sorted(p for p, m in info.partitions.items() if m.leader < 0)
        if leaderless:
            raise KinspectError(f"partition {topic}-{leaderless[0]} has no leader; heal the "
                                "cluster (kinspect lab heal / start) before verifying")
        ranges = {partition: _watermarks(consumer, topic, partition)
                  for partition in sorted(info.partitions)}
        reader = _Reader(consumer, topic, ranges, run_dir / into)
        return reader.run(timeout_s, stall_s, progress, count)
    finally:
        consumer.close()


def _watermarks(consumer: Consumer, topic: str, partition: int,
                timeout_s: float = 30.0) -> tuple[int, int]:
    """(log start, high watermark), asked again while a cluster just healed settles (a broker
    handle being replaced answers "Broker handle destroyed" once)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)
            return int(low), int(high)
        except KafkaException as exc:
            if time.monotonic() >= deadline:
                raise KinspectError(f"cannot read offsets of {topic}-{partition}: "
                                    f"{exc.args[0].str()}") from None
            time.sleep(1.0)


class _Reader:
    """Reads the assigned partitions to their high watermarks, streaming each to Parquet."""

    def __init__(self, consumer: Consumer, topic: str, ranges: dict[int, tuple[int, int]],
                 out: Path) -> None:
        self.consumer, self.topic, self.out = consumer, topic, out
        out.mkdir(parents=True, exist_ok=True)
        for stale in out.glob(".part-*.tmp"):  # left by a verify that was killed
            stale.unlink(missing_ok=True)
        self.parts = {p: _Partition(p, low, high, out / f".part-{p:04d}.parquet.tmp")
                      for p, (low, high) in ranges.items()}
        self.pending = {p for p, (low, high) in ranges.items() if high > low}
        self.total = sum(max(0, high - low) for low, high in ranges.values())
        self.told = -1  # the last done count() was given

    def done(self) -> int:
        return sum(min(p.next, p.high) - p.low for p in self.parts.values() if p.high > p.low)

    def read(self) -> int:
        return sum(p.records for p in self.parts.values())

    def run(self, timeout_s: float | None, stall_s: float,
            progress: Callable[[str], None] | None, count: Count | None) -> list[PartitionRead]:
        limit = timeout_s
        if limit is None:
            limit = time_limit(self.total)
        try:
            self._consume(limit, stall_s, progress, count)
            for part in self.parts.values():
                part.finish()
            for part in self.parts.values():
                os.replace(part.tmp, self.out / f"part-{part.number:04d}.parquet")
        except BaseException:
            for part in self.parts.values():
                part.discard()
            raise
        if count and self.told != self.total:  # the last word: all of it (said once)
            count(self.total, self.total)
        return [PartitionRead(p.number, p.low, p.high, p.records)
                for _, p in sorted(self.parts.items())]

    def _consume(self, limit: float, stall_s: float, progress: Callable[[str], None] | None,
                 count: Count | None) -> None:
        self.consumer.assign([TopicPartition(self.topic, p, self.parts[p].low)
                              for p in self.pending])
        started = moved = told = time.monotonic()
        while self.pending:
            now = time.monotonic()
            self._give_up_if_late(now - started, now - moved, limit, stall_s)
            went_on = self._read_once()
            now = time.monotonic()
            if went_on:
                moved = now
            told = self._tell(now, told, progress, count)

    def _give_up_if_late(self, elapsed: float, still: float, limit: float,
                         stall_s: float) -> None:
        """Reading stops after `stall_s` without progress, or past its overall limit."""
        if still > stall_s:
            raise KinspectError(self._how_far(elapsed, f"no progress for {stall_s:.0f} s"))
        if elapsed > limit:
            raise KinspectError(self._how_far(elapsed, f"its limit of {limit:.0f} s"))

    def _read_once(self) -> bool:
        """One consume(), its records routed; whether reading went on (records came, or a
        partition ended)."""
        before = len(self.pending)
        messages = self._records(self.consumer.consume(num_messages=10000, timeout=0.5))
        if not messages:
            return len(self.pending) < before
        # column by column: a comprehension per field is the cheapest way through
        # Python, and the batch is parsed and split by partition in Arrow
        self._route(to_batch(
            self.topic, [m.partition() for m in messages], [m.offset() for m in messages],
            [m.value() for m in messages], [m.leader_epoch() for m in messages],
            [m.timestamp()[1] for m in messages]))
        return True

    def _tell(self, now: float, told: float, progress: Callable[[str], None] | None,
              count: Count | None) -> float:
        """How far reading is: count() ten times a second, or without it a line each second
        to `progress`; returns when it last told."""
        if count:
            if now - told <= 0.1:
                return told
            self.told = self.done()
            count(self.told, self.total)
            return now
        if progress is None or now - told <= 1.0:
            return told
        progress(f"read {self.done():,} of {self.total:,} records")
        return now

    def _records(self, messages: list[Any]) -> list[Any]:
        """The records among what consume() gave; an end of partition marks it done, any
        other error stops the read."""
        if not [m for m in messages if m.error() is not None]:  # the usual case, kept cheap
            return messages
        kept = []
        for msg in messages:
            error = msg.error()
            if error is None:
                kept.append(msg)
            elif error.code() == KafkaError._PARTITION_EOF:
                self.pending.discard(msg.partition())
            else:
                raise KinspectError(f"reading {self.topic}-{msg.partition()}: {error.str()}")
        return kept

    def _route(self, batch: pa.RecordBatch) -> None:
        """Each partition's share of the batch (up to its high watermark) to that partition."""
        numbers = batch.column(1)
        unique = pc.unique(numbers).to_pylist()
        for number in unique:
            part = self.parts[number]
            mine = batch  # nearly always: a batch of one partition
            if len(unique) > 1:
                mine = batch.filter(pc.equal(numbers, number))
            offsets = mine.column(2)
            if pc.max(offsets).as_py() >= part.high - 1:
                self.pending.discard(number)
                mine = mine.filter(pc.less(offsets, part.high))
            if len(mine):
                part.add(mine)
        if sum(p.rows for p in self.parts.values()) > BUFFERED:  # many partitions, each part-full
            fullest = max(self.parts.values(), key=lambda p: p.rows)
            fullest.write(fullest.rows)

    def _how_far(self, elapsed: float, why: str) -> str:
        """Where reading stood when it gave up: the partitions not done and how far each got."""
        behind = [self.parts[p] for p in sorted(self.pending)]
        where = ", ".join(f"{self.topic}-{p.number} at offset {p.next:,} of {p.high:,}"
                          for p in behind[:3])
        more = ""
        if len(behind) > 3:
            more = f" and {len(behind) - 3} more"
        return (f"gave up reading {self.topic} to its high watermark after {elapsed:.0f} s "
                f"({why}): {self.read():,} of {self.total:,} records read; "
                f"{where}{more} (nothing was written; try again, or a larger --timeout)")
