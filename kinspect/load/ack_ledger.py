"""The ack ledger: one Parquet row per message, written crash-safe in small chunks.

Each flush writes a new chunk to a temp name, fsyncs it, renames it into place and fsyncs the
directory, so a SIGKILL at any instant leaves only complete files and loses at most the
reports since the last flush. Messages handed to the client but never reported are recovered
from each chunk's `kinspect.sent_upto` metadata and counted as unknown; a chunk is written
whenever `sent_upto` moved, even with no report to record (a paused leader answers nothing).

Chunks alone lag the sends by up to a flush interval (500 ms, thousands of messages at full
speed), so the ledger also keeps a write-ahead mark per producer, `ledger/_pNNN.mark`: before
the worker hands a batch to the client it records "seqs up to N may have been sent" there
(`LedgerWriter.grant`, one 20-byte `pwrite` at offset 0 per batch). The write only has to
reach the page cache: a process killed at any instant (SIGKILL, the OOM killer, a crash in
librdkafka) cannot take the page cache with it, so no fsync per batch is needed, and the
kernel copies a 20-byte write within one page whole, so a reader never sees a torn number.
(A crash of the machine itself could lose the mark's last value; the fsynced chunks then
still hold what they held before: the mark guards against the process dying, not the host.)
`read_ledger` and the post-mortem take max(chunks' sent_upto, mark) per producer, so after any
process crash every message in the log is either in the ledger or counted unknown. The mark
runs ahead of the sends by at most one batch (worker.SEND_BATCH); those seqs, granted but
perhaps never sent, count as unknown too: kinspect cannot know they were not sent. A clean
close lowers the mark to the last seq sent. The mark file also names the run, topic and acks,
so a producer killed before its first chunk is still read. Its name starts with `_`, as
Parquet's own side files do, so Arrow, Spark or pandas reading ledger/ as a dataset skip it.
Ids are `<run>-<producer>-<seq>`: the run id keeps a topic used twice from mixing two runs.

Memory stays flat however long the run: the writer holds only the rows since its last chunk
(at most FLUSH_EVERY_ROWS plus one batch), as Arrow column batches. Each seq gets exactly one
row — its delivery report, its refusal by a full buffer, or 'unknown' at close — and
`read_ledger` synthesizes only seqs with no row, so a reader can count rows instead of
deduplicating ids (runstats.ledger_totals streams the summary that way).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinspect.errors import KinspectError
from kinspect.load.rundir import LEDGER_DIR, id_prefix
from kinspect.model.sends import ACKED_STATUS, FAILED_STATUS, UNANSWERED_STATUS

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

FLUSH_EVERY_MS = 500
FLUSH_EVERY_ROWS = 50_000
QUEUE_FULL = "_QUEUE_FULL"  # librdkafka's name for a send refused by a full buffer
MARK_WIDTH = 20  # the mark: a fixed-width decimal at offset 0, then "\n" and a JSON line

LEDGER_SCHEMA = pa.schema([
    ("id", pa.string()), ("producer", pa.int32()), ("seq", pa.int64()), ("topic", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("leader_epoch", pa.int32()),
    ("status", pa.string()), ("error", pa.string()), ("send_ts", pa.int64()),
    ("ack_ts", pa.int64()),
])
# What the writer buffers: the rest (id, producer, topic) is the same for a whole chunk.
_BODY = pa.schema([f for f in LEDGER_SCHEMA if f.name not in ("id", "producer", "topic")])
ACKED, FAILED, UNKNOWN = 0, 1, 2  # status codes of `LedgerWriter.append`
# Dictionaries where values repeat, min/max statistics where someone reads them (the
# post-mortem reads seq and the times from the footers): half the cost of Parquet's defaults,
# which try a dictionary of unique ids and keep min/max of every string.
WRITE_OPTIONS: dict[str, list[str]] = {
    "use_dictionary": ["producer", "topic", "partition", "leader_epoch", "status", "error"],
    "write_statistics": ["producer", "seq", "partition", "offset", "leader_epoch", "send_ts",
                         "ack_ts"],
}
STATUS_NAMES = pa.array([ACKED_STATUS, FAILED_STATUS, UNANSWERED_STATUS])  # by status code


def ledger_dir(run_dir: Path) -> Path:
    return run_dir / LEDGER_DIR


def mark_path(run_dir: Path, producer: int) -> Path:
    return ledger_dir(run_dir) / f"_p{producer:03d}.mark"


def _mark_bytes(upto: int) -> bytes:
    return f"{upto:0{MARK_WIDTH}d}".encode()


@dataclass(frozen=True)
class LedgerMark:
    """A producer's write-ahead mark: seqs up to `upto` may have been sent."""

    producer: int
    upto: int
    run_id: str
    topic: str
    acks: str


def read_marks(run_dir: Path) -> dict[int, LedgerMark]:
    """Every producer's mark file (none for a run dir made before marks)."""
    marks = {}
    for path in sorted(ledger_dir(run_dir).glob("_p*.mark")):
        try:
            data = path.read_bytes()
            upto = int(data[:MARK_WIDTH])
            meta = json.loads(data[MARK_WIDTH + 1 :])
            producer = int(path.name[2:5])
        except ValueError:
            raise KinspectError(f"{path}: not a kinspect ledger mark") from None
        marks[producer] = LedgerMark(producer, upto, str(meta.get("run", "")),
                                     str(meta.get("topic", "")), str(meta.get("acks", "")))
    return marks


class LedgerWriter:
    """Rows arrive as column batches (`append`, the worker's path: one call per few thousand
    reports) or one by one (`record`); Arrow and Parquet only at flush time. A chunk holds at
    most FLUSH_EVERY_ROWS rows (plus one batch), so memory does not grow with the run."""

    def __init__(self, run_dir: Path, producer: int, topic: str, acks: str, run_id: str = "") -> None:
        self.dir = ledger_dir(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.producer, self.topic, self.acks, self.run_id = producer, topic, acks, run_id
        self.chunk = 0
        self.sent_upto = -1
        self.written_upto = -1  # sent_upto as the last chunk on disk says it
        self.last_flush_ms = 0
        self.granted = -1  # the write-ahead mark: seqs up to here may have been sent
        self._batches: list[pa.RecordBatch] = []
        self._batched = 0  # rows in _batches
        self._reset()
        self._mark_fd = self._create_mark(run_dir)

    def _create_mark(self, run_dir: Path) -> int:
        """The mark file, complete before any send (a temp name renamed into place)."""
        path = mark_path(run_dir, self.producer)
        tmp = path.with_name(f".{path.name}.tmp")
        meta = {"producer": self.producer, "run": self.run_id, "topic": self.topic,
                "acks": self.acks}
        tmp.write_bytes(_mark_bytes(self.granted) + b"\n" + json.dumps(meta).encode() + b"\n")
        os.replace(tmp, path)
        return os.open(path, os.O_WRONLY)

    def grant(self, upto: int) -> None:
        """Persist, before the client gets them, that seqs up to `upto` may be sent.

        One pwrite, no fsync: the page cache outlives a killed process (see the module doc)."""
        os.pwrite(self._mark_fd, _mark_bytes(upto), 0)
        self.granted = upto

    def _reset(self) -> None:
        self.seq: list[int] = []
        self.partition: list[int] = []
        self.offset: list[int] = []
        self.epoch: list[int | None] = []
        self.status: list[str] = []
        self.error: list[str | None] = []
        self.send_ts: list[int | None] = []
        self.ack_ts: list[int | None] = []

    @property
    def pending(self) -> int:
        """Rows not yet in a chunk."""
        return self._batched + len(self.seq)

    def note_sent(self, seq: int, _send_ts: int = 0) -> None:
        self.sent_upto = seq

    def record(self, seq: int, partition: int, offset: int, leader_epoch: int | None,
               status: str, error: str | None, send_ts: int | None, ack_ts: int | None) -> None:
        self.seq.append(seq)
        self.partition.append(partition)
        self.offset.append(offset)
        self.epoch.append(leader_epoch)
        self.status.append(status)
        self.error.append(error)
        self.send_ts.append(send_ts)
        self.ack_ts.append(ack_ts)

    def append(self, seqs: Any, partitions: Any, offsets: Any, epochs: Any, status: Any,
               errors: Sequence[str | None] | None, send_ts: Any, ack_ts: Any) -> None:
        """A batch of rows in report order. `status`: codes (ACKED, FAILED, UNKNOWN); offsets
        and epochs may hold None or negatives (none known: -1 and null) or be None for all;
        `errors` None when no row failed; `ack_ts` None when no row was answered."""
        self._seal()
        n = len(seqs)
        offset, epoch = _column(offsets, pa.int64(), n), _column(epochs, pa.int32(), n)
        self._add(pa.record_batch([
            pa.array(seqs, pa.int64()), pa.array(partitions, pa.int32()),
            pc.fill_null(pc.if_else(pc.less(offset, 0), -1, offset), -1),
            pc.if_else(pc.less(epoch, 0), pa.scalar(None, pa.int32()), epoch),
            pc.take(STATUS_NAMES, pa.array(status, pa.int8())),
            _column(errors, pa.string(), n), _column(send_ts, pa.int64(), n),
            _column(ack_ts, pa.int64(), n),
        ], schema=_BODY))

    def _add(self, batch: pa.RecordBatch) -> None:
        self._batches.append(batch)
        self._batched += batch.num_rows

    def _seal(self) -> None:
        """Rows given one by one become a batch, keeping the order rows arrived in."""
        if not self.seq:
            return
        self._add(pa.record_batch([
            pa.array(self.seq, pa.int64()), pa.array(self.partition, pa.int32()),
            pa.array(self.offset, pa.int64()), pa.array(self.epoch, pa.int32()),
            pa.array(self.status, pa.string()), pa.array(self.error, pa.string()),
            pa.array(self.send_ts, pa.int64()), pa.array(self.ack_ts, pa.int64()),
        ], schema=_BODY))
        self._reset()

    def maybe_flush(self, now_ms: int) -> None:
        if now_ms - self.last_flush_ms >= FLUSH_EVERY_MS or self.pending >= FLUSH_EVERY_ROWS:
            self.flush(now_ms)

    def flush(self, now_ms: int = 0) -> None:
        self.last_flush_ms = now_ms
        if not self.pending and self.chunk > 0 and self.sent_upto == self.written_upto:
            return
        self._seal()
        body = pa.Table.from_batches(self._batches, schema=_BODY)
        prefix = pa.scalar(id_prefix(self.run_id, self.producer))
        ids = pc.binary_join_element_wise(prefix, pc.cast(body["seq"], pa.string()), "")
        n = body.num_rows
        table = body.add_column(0, "id", ids).add_column(
            1, "producer", pa.repeat(pa.scalar(self.producer, pa.int32()), n)).add_column(
            3, "topic", pa.repeat(pa.scalar(self.topic, pa.string()), n))
        refused = pc.sum(pc.equal(table["error"], QUEUE_FULL)).as_py() or 0
        table = table.cast(LEDGER_SCHEMA).replace_schema_metadata({
            "kinspect.sent_upto": str(self.sent_upto), "kinspect.acks": self.acks,
            "kinspect.topic": self.topic, "kinspect.run": self.run_id,
            # sends a full client buffer refused: counted from the footers, like sent_upto
            "kinspect.refused": str(refused)})
        final = self.dir / f"p{self.producer:03d}-{self.chunk:06d}.parquet"
        tmp = self.dir / f".p{self.producer:03d}-{self.chunk:06d}.tmp"
        with open(tmp, "wb") as handle:
            pq.write_table(table, handle, **WRITE_OPTIONS)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, final)
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.chunk += 1
        self.written_upto = self.sent_upto
        self._batches, self._batched = [], 0

    def close(self, in_flight: Iterable[tuple[int, int]] = ()) -> None:
        """Record what never got a report as unknown, flush, and lower the mark to what was
        really sent (after the last chunk is on disk, so a crash in between only over-counts).
        The worker hands its unreported seqs as one batch first (`unknown`)."""
        for seq, send_ts in in_flight:
            self.record(seq, -1, -1, None, "unknown", None, send_ts, None)
        self.flush()
        if self.granted != self.sent_upto:
            self.grant(self.sent_upto)
        os.close(self._mark_fd)

    def unknown(self, seqs: Any, send_ts: Any) -> None:
        """Seqs sent and never reported, as one batch of 'unknown' rows."""
        n = len(seqs)
        if n:
            self.append(seqs, np.full(n, -1, np.int32), None, None, np.full(n, UNKNOWN, np.int8),
                        None, send_ts, None)


def _column(values: Any, kind: pa.DataType, n: int) -> pa.Array:
    """A batch's column; all null when the batch has no values for it (None)."""
    if values is None:
        return pa.nulls(n, kind)
    return pa.array(values, kind)


def chunk_producer(path: Path) -> int:
    """The producer a chunk belongs to, from its name (pNNN-CCCCCC.parquet)."""
    return int(path.name[1:4])


def chunk_sent_upto(meta: dict[bytes, bytes] | None) -> int:
    """`kinspect.sent_upto` of a chunk's footer metadata (-1: none)."""
    if meta is None:
        return -1
    return int(meta.get(b"kinspect.sent_upto", b"-1"))


def read_ledger(run_dir: Path) -> pa.Table:
    """All chunks, plus synthesized 'unknown' rows for seqs sent but never recorded: the whole
    ledger in memory, for tests and small runs (the runner streams: runstats.ledger_totals).

    A producer's seqs up to max(its chunks' sent_upto, its mark) count as sent; those with no
    row are unknown. Of them, at most one batch per producer (worker.SEND_BATCH) may have been
    granted by the mark and never handed to the client (a crash between the mark and the
    sends): kinspect cannot know they were not sent, so they are unknown too. A producer with
    a mark and no chunk (killed before its first flush) is read from its mark alone."""
    files = sorted(ledger_dir(run_dir).glob("p*.parquet"))
    marks = read_marks(run_dir)
    if not files and not marks:
        return LEDGER_SCHEMA.empty_table()
    sent_upto = {producer: mark.upto for producer, mark in marks.items()}
    names = {producer: (mark.run_id, mark.topic) for producer, mark in marks.items()}
    ledger = _read_chunks(files, sent_upto, names)
    missing = _missing_rows(ledger, sent_upto, names)
    if not missing:
        return ledger
    return pa.concat_tables([ledger, *missing])


def _read_chunks(files: list[Path], sent_upto: dict[int, int],
                 names: dict[int, tuple[str, str]]) -> pa.Table:
    """The chunks as one table; each chunk's footer raises its producer's sent_upto and names
    its run and topic (`sent_upto` and `names` are updated)."""
    if not files:
        return LEDGER_SCHEMA.empty_table()
    tables = []
    for path in files:
        tables.append(pq.read_table(path, schema=LEDGER_SCHEMA))
        meta = pq.read_schema(path).metadata
        if meta is None:
            meta = {}
        producer = chunk_producer(path)
        sent_upto[producer] = max(sent_upto.get(producer, -1), chunk_sent_upto(meta))
        names[producer] = _names(meta, names.get(producer, ("", "")))
    return pa.concat_tables(tables)


def _names(meta: dict[bytes, bytes], known: tuple[str, str]) -> tuple[str, str]:
    """A producer's run id and topic: the chunk's where its footer says them, else as known."""
    run_id, topic = known
    chunk_run = meta.get(b"kinspect.run", b"").decode()
    if chunk_run:
        run_id = chunk_run
    chunk_topic = meta.get(b"kinspect.topic", b"").decode()
    if chunk_topic:
        topic = chunk_topic
    return run_id, topic


def _missing_rows(ledger: pa.Table, sent_upto: dict[int, int],
                  names: dict[int, tuple[str, str]]) -> list[pa.Table]:
    """'unknown' rows for each producer's seqs sent (up to its sent_upto) with no row; a
    producer with no name of its own takes the first named one's."""
    any_run = next((run for run, _ in names.values() if run), "")
    any_topic = next((topic for _, topic in names.values() if topic), "")
    missing = []
    for producer, upto in sorted(sent_upto.items()):
        seqs = pc.filter(ledger["seq"], pc.equal(ledger["producer"], producer)).to_numpy()
        absent = np.setdiff1d(np.arange(upto + 1, dtype=np.int64), seqs)
        if not len(absent):
            continue
        run_id, topic = names.get(producer, ("", ""))
        if not run_id:
            run_id = any_run
        if not topic:
            topic = any_topic
        missing.append(_unknown_rows(run_id, producer, absent, topic))
    return missing


def _unknown_rows(run_id: str, producer: int, seqs: Any, topic: str) -> pa.Table:
    n = len(seqs)
    ids = pc.binary_join_element_wise(pa.array([id_prefix(run_id, producer)] * n),
                                      pc.cast(pa.array(seqs), pa.string()), "")
    return pa.table({
        "id": ids, "producer": pa.array([producer] * n, pa.int32()),
        "seq": pa.array(seqs, pa.int64()), "topic": pa.array([topic] * n, pa.string()),
        "partition": pa.array([-1] * n, pa.int32()), "offset": pa.array([-1] * n, pa.int64()),
        "leader_epoch": pa.nulls(n, pa.int32()), "status": pa.array(["unknown"] * n),
        "error": pa.nulls(n, pa.string()), "send_ts": pa.nulls(n, pa.int64()),
        "ack_ts": pa.nulls(n, pa.int64()),
    }, schema=LEDGER_SCHEMA)


@dataclass(frozen=True)
class LedgerTotals:
    """What a ledger counts: messages sent, acknowledged, failed and never answered, and the
    failures by their error."""

    sent: int
    acked: int
    failed: int
    unknown: int
    failed_by_error: Mapping[str, int]

    def to_json(self) -> JsonObject:
        """As summary.json and `load --json` begin."""
        return {"sent": self.sent, "acked": self.acked, "failed": self.failed,
                "unknown": self.unknown, "failed_by_error": dict(self.failed_by_error)}


def ledger_summary(table: pa.Table) -> LedgerTotals:
    status = table["status"]
    counts = {row["values"]: row["counts"] for row in pc.value_counts(status).to_pylist()}
    failed = pc.filter(table["error"], pc.equal(status, "failed"))
    by_error = {row["values"]: row["counts"] for row in pc.value_counts(failed).to_pylist()}
    sent = 0
    if len(table):
        sent = pc.count_distinct(table["id"]).as_py()
    return LedgerTotals(sent, counts.get("acked", 0), counts.get("failed", 0),
                        counts.get("unknown", 0), by_error)
