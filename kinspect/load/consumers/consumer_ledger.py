"""The consumer ledger: what each consumer received, processed and committed, crash-safe.

Processing, in these experiments, *is* writing the record's line: the business effect and its
evidence are one act, so the ledger can never claim a record was processed when it was not, or
miss one that was. Each line is one `write()` to a file opened O_APPEND: a killed consumer
(SIGKILL, the OOM killer) cannot take the page cache with it, so every line written before the
kill is read back (the producer ledger's write-ahead mark rests on the same fact). A line is
written before the commit that covers it in the `after` mode, so a commit is never ahead of
the evidence of processing; in `auto` and `before` it is exactly the commit that runs ahead.

Each consumer incarnation (a restart is a new one) appends to its own CSV files with a header:
records (one line per processing attempt), polls (what each poll returned, per partition),
commits (each committed offset, from librdkafka's commit callback or a synchronous commit) and
events (assigned, revoked, crash, stop). DuckDB, Spark and pyarrow read them as they are.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from kinspect.load.consumers.settings import consumer_dir
from kinspect.load.rundir import id_prefix, parse_message_id

LEDGER_DIR = "ledger"
KINDS: dict[str, pa.Schema] = {
    "records": pa.schema([
        ("run", pa.string()), ("consumer", pa.int32()), ("incarnation", pa.int32()),
        ("partition", pa.int32()), ("offset", pa.int64()), ("id", pa.string()), ("received_ts", pa.int64()),
        ("done_ts", pa.int64()), ("outcome", pa.string()), ("attempt", pa.int32())]),
    "polls": pa.schema([
        ("run", pa.string()), ("consumer", pa.int32()), ("incarnation", pa.int32()), ("ts", pa.int64()),
        ("partition", pa.int32()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
        ("records", pa.int32())]),
    "commits": pa.schema([
        ("run", pa.string()), ("consumer", pa.int32()), ("incarnation", pa.int32()), ("ts", pa.int64()),
        ("partition", pa.int32()), ("offset", pa.int64()), ("how", pa.string()),
        ("error", pa.string())]),
    "events": pa.schema([
        ("run", pa.string()), ("consumer", pa.int32()), ("incarnation", pa.int32()), ("ts", pa.int64()),
        ("event", pa.string()), ("detail", pa.string())]),
}
# What a processing attempt ended as: processed (the business effect happened), failed (it did
# not; the `after` mode tries again), aborted (its transaction was rolled back).
PROCESSED, FAILED, ABORTED = "processed", "failed", "aborted"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def message_id(value: bytes | None) -> str | None:
    """The `<run>-<producer>-<seq>` a kinspect message starts with (None: a foreign record)."""
    ident = parse_message_id(value)
    return None if ident is None else id_prefix(ident[0] or "", ident[1]) + str(ident[2])


def ledger_path(run_dir: Path) -> Path:
    return consumer_dir(run_dir) / LEDGER_DIR


def _file(run_dir: Path, consumer: int, incarnation: int, kind: str) -> Path:
    return ledger_path(run_dir) / f"c{consumer:03d}-i{incarnation:03d}.{kind}.csv"


def _cell(value: object) -> str:
    """CSV cells: no value is ever quoted (ids and error names hold no comma or quote)."""
    if value is None:
        return ""
    text = str(value)
    return text.replace(",", ";").replace("\n", " ").replace('"', "'")


class ConsumerLedger:
    """One incarnation's four append-only files; every method is one `write()`."""

    def __init__(self, run_dir: Path, consumer: int, incarnation: int, run_id: str = "") -> None:
        folder = ledger_path(run_dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.consumer, self.incarnation = consumer, incarnation
        self._head = f"{_cell(run_id)},{consumer},{incarnation},"
        self._fds: dict[str, int] = {}
        for kind, schema in KINDS.items():
            path = _file(run_dir, consumer, incarnation, kind)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if os.fstat(fd).st_size == 0:
                os.write(fd, (",".join(schema.names) + "\n").encode())
            self._fds[kind] = fd

    def _write(self, kind: str, rows: Sequence[Sequence[object]]) -> None:
        if rows:
            text = "".join(self._head + ",".join(_cell(v) for v in row) + "\n" for row in rows)
            os.write(self._fds[kind], text.encode())

    def processed(self, partition: int, offset: int, ident: str | None, received_ts: int,
                  done_ts: int, outcome: str, attempt: int = 1) -> None:
        self._write("records", [(partition, offset, ident, received_ts, done_ts, outcome,
                                 attempt)])

    def outcomes(self, rows: Sequence[tuple[int, int, str | None, int, int, str, int]]) -> None:
        """Many records' outcomes at once (a transaction's, when it commits or aborts)."""
        self._write("records", rows)

    def polled(self, ts: int, ranges: Sequence[tuple[int, int, int, int]]) -> None:
        """(partition, first offset, last offset, records) of one poll."""
        self._write("polls", [(ts, *r) for r in ranges])

    def committed(self, ts: int, offsets: Sequence[tuple[int, int]], how: str,
                  error: str | None = None) -> None:
        """(partition, next offset to read) as committed; `how`: auto, sync, transaction."""
        self._write("commits", [(ts, p, o, how, error) for p, o in offsets])

    def event(self, ts: int, event: str, detail: str = "") -> None:
        self._write("events", [(ts, event, detail)])

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


@dataclass(frozen=True)
class ConsumerLedgerTables:
    records: pa.Table
    polls: pa.Table
    commits: pa.Table
    events: pa.Table


def read_consumer_ledger(run_dir: Path) -> ConsumerLedgerTables:
    """Every incarnation's files, as four tables (empty ones when no consumer ran)."""
    tables = {kind: _read_kind(run_dir, kind, schema) for kind, schema in KINDS.items()}
    return ConsumerLedgerTables(**tables)


def _read_kind(run_dir: Path, kind: str, schema: pa.Schema) -> pa.Table:
    parts = []
    for path in sorted(ledger_path(run_dir).glob(f"c*-i*.{kind}.csv")):
        data = path.read_bytes()
        data = data[: data.rfind(b"\n") + 1]  # a line cut by a crash mid-write is not a line
        if data.count(b"\n") < 2:
            continue
        parts.append(pacsv.read_csv(
            pa.py_buffer(data),
            convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=True,
                                                 quoted_strings_can_be_null=False)))

    if not parts:
        return schema.empty_table()
    for index, part in enumerate(parts):  # files written before lines carried the run id
        if "run" not in part.column_names:
            parts[index] = part.add_column(0, "run", pa.nulls(part.num_rows, pa.string()))
    return pa.concat_tables([p.select(schema.names).cast(schema) for p in parts])
