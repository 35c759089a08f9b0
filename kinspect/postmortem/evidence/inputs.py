"""Find and check a run dir's files before Spark starts, so a bad run dir costs one line, not a JVM.

Only Parquet footers are read here (cheap): the schema of every file, the ledger's
`kinspect.sent_upto` metadata and row counts, and each producer's write-ahead mark (its
`ledger/_pNNN.mark`: seqs up to it may have been sent, see kinspect/load/ack_ledger.py). Spark
reads the data itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kinspect.errors import KinspectError
from kinspect.lab.faults import hurts
from kinspect.lab.journal import JournalEntry
from kinspect.lab.topology import broker_id_of
from kinspect.load.ack_ledger import LEDGER_SCHEMA, LedgerMark, read_marks
from kinspect.load.rundir import (
    BROKER_LOGS_DIR,
    FAULTS_FILE,
    FINAL_LOG_DIR,
    LEDGER_DIR,
    REPLICAS_DIR,
    SETTINGS_FILE,
    TIMELINE_FILE,
    VERIFY_FILE,
    RunInfo,
    read_run,
)
from kinspect.load.runsettings import check_saved
from kinspect.load.verify import FINAL_LOG_SCHEMA
from kinspect.model.events import JournalKind, JsonObject, Severity, Source, TimelineEvent


@dataclass
class ProducerMeta:
    """What the footers say about one producer's chunks (sent_upto: raised to its mark)."""

    sent_upto: int = -1
    rows: int = 0
    max_seq: int = -1
    first_send_ts: int | None = None
    last_ack_ts: int | None = None


@dataclass
class RunInputs:
    run_dir: Path
    ledger_files: list[Path]
    final_log_files: list[Path]
    producers: dict[int, ProducerMeta]
    topic: str
    acks: str
    timeline: list[TimelineEvent] | None  # the observer's (timeline.jsonl)
    faults: list[TimelineEvent] | None  # the lab's journal (faults.jsonl)
    broker_logs: dict[str, list[Path]] = field(default_factory=dict)
    final_log_partitions: list[int] = field(default_factory=list)
    final_log_rows: int = 0
    final_log_ordered: bool = False  # every file has prev_seq (verify since issue 20)
    run: RunInfo | None = None
    run_id: str | None = None  # None: a run dir made before run ids
    replica_snapshots: list[Path] = field(default_factory=list)
    # sends the client refused (a full buffer), from the chunks' footers; None: a chunk written
    # before they were counted does not say
    refused: int | None = 0
    verify_warnings: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # lines of the .jsonl files skipped, and why

    @property
    def ledger_rows(self) -> int:
        return sum(m.rows for m in self.producers.values())


@dataclass(frozen=True)
class JsonLines:
    """A .jsonl file's objects with their line numbers, and one sentence per kind of line that
    was skipped: evidence left out is said, never dropped in silence."""

    entries: tuple[tuple[int, JsonObject], ...]
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """Events read from one .jsonl file, and what of it was skipped (JsonLines.skipped)."""

    events: list[TimelineEvent]
    skipped: tuple[str, ...] = ()


def read_timeline(path: Path) -> Evidence | None:
    """The observer's events (None when absent); lines of kinds this version does not know,
    or with values that are not theirs, are skipped and counted."""
    lines = read_jsonl(path)
    if lines is None:
        return None
    events, skipped = observer_events(lines.entries)
    return Evidence(events, lines.skipped + _said(path.name, skipped))


def observer_events(entries: Iterable[tuple[int, JsonObject]]
                    ) -> tuple[list[TimelineEvent], dict[str, list[int]]]:
    """The events, and the line numbers skipped by why (`kind foo unknown to this version`)."""
    events: list[TimelineEvent] = []
    skipped: dict[str, list[int]] = {}
    for number, entry in entries:
        try:
            event = TimelineEvent.from_json(entry)
        except ValueError as exc:  # one reason for them all, the first one's words as example
            why = next((k for k in skipped if k.startswith(BAD_VALUE)), f"{BAD_VALUE} ({exc})")
            skipped.setdefault(why, []).append(number)
            continue
        if event is None:
            why = f"of kind {str(entry.get('kind'))!r}, unknown to this version"
            skipped.setdefault(why, []).append(number)
        else:
            events.append(event)
    return events, skipped


def read_faults(path: Path) -> Evidence | None:
    """The lab's journal as fault events (None when absent)."""
    lines = read_jsonl(path)
    if lines is None:
        return None
    entries = [JournalEntry.from_json(entry) for _, entry in lines.entries]
    return Evidence([fault_event(entry) for entry in entries], lines.skipped)


def fault_event(entry: JournalEntry) -> TimelineEvent:
    """One journal entry (`kill kafka2`, `partition a | b,c`) as the timeline tells it; its
    action as written (an older journal's isolation stays the partition it made)."""
    what, note = entry.words, entry.detail
    detail = f"fault: {what}"
    if note and note != what:
        detail += f" ({note})"
    severity = Severity.INFO
    if hurts(entry.action):
        severity = Severity.ERROR
    return TimelineEvent(
        entry.ts, JournalKind.FAULT, detail, broker=broker_id_of(entry.node),
        severity=severity, source=Source.FAULTS, node=entry.node, action=entry.action,
        note=note, groups=entry.groups, lab_id=entry.lab_id)


def read_jsonl(path: Path) -> JsonLines | None:
    """None when absent. A torn or garbled line (a crash mid-write) is skipped, never fatal,
    and said with its line number, as is a line that is not an object with a time."""
    if not path.is_file():
        return None
    out = []
    skipped: dict[str, list[int]] = {}
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            skipped.setdefault("not JSON (a torn or garbled line)", []).append(number)
            continue
        if isinstance(entry, dict) and isinstance(entry.get("ts"), int | float):
            out.append((number, entry))
        else:
            skipped.setdefault("not a JSON object with a numeric ts", []).append(number)
    return JsonLines(tuple(out), _said(path.name, skipped))


def _said(name: str, skipped: dict[str, list[int]]) -> tuple[str, ...]:
    """`timeline.jsonl: 2 lines skipped, not JSON (a torn or garbled line): lines 7, 9`."""
    out = []
    for why, numbers in skipped.items():
        shown = ", ".join(map(str, numbers[:SHOWN_LINES]))
        more = ""
        if len(numbers) > SHOWN_LINES:
            more = f" and {len(numbers) - SHOWN_LINES:,} more"
        noun = "lines"
        if len(numbers) == 1:
            noun = "line"
        out.append(f"{name}: {len(numbers):,} {noun} skipped, {why}: {noun} {shown}{more}")
    return tuple(out)


SHOWN_LINES = 5  # line numbers named per reason; the count says the rest
BAD_VALUE = "with a value this version cannot read"


def _footer(path: Path, expected: pa.Schema, run_dir: Path) -> pq.FileMetaData:
    name = path.relative_to(run_dir)
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except Exception as exc:  # pyarrow raises several types for a bad footer
        raise KinspectError(f"{name} is not a readable Parquet file ({exc})") from None
    missing = [f.name for f in expected if f.name not in schema.names]
    if missing:
        raise KinspectError(f"{name} lacks column(s) {', '.join(missing)}: not a kinspect file")
    return meta


def _verify_warnings(run_dir: Path) -> list[str]:
    """What verify warned about when it read the final log back (verify.json)."""
    warnings = _json_file(run_dir / VERIFY_FILE).get("warnings")
    if not isinstance(warnings, list):
        return []
    return [str(w) for w in warnings]


def _json_file(path: Path) -> dict[str, object]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError:
        raise KinspectError(f"{path.name} in the run dir is not valid JSON") from None
    if not isinstance(value, dict):
        return {}
    return value


def load_inputs(run_dir: Path) -> RunInputs:
    """Everything the job needs to know up front; KinspectError names what is missing."""
    if not run_dir.is_dir():
        raise KinspectError(f"run dir {run_dir} does not exist")
    ledger_files = _files(run_dir / LEDGER_DIR, "p*.parquet")
    marks = read_marks(run_dir)
    if not ledger_files and not marks:
        raise KinspectError(f"{run_dir}: ledger/ has no p*.parquet files: not a kinspect run dir "
                            "(run `kinspect load run --run-dir DIR` first)")
    settings = _json_file(run_dir / SETTINGS_FILE)
    check_saved(settings, f"{run_dir / SETTINGS_FILE}")
    ledger = _Ledger(str(settings.get("topic", "")), str(settings.get("acks", "")))
    for path in ledger_files:
        ledger.add_chunk(path, _footer(path, LEDGER_SCHEMA, run_dir), run_dir)
    for producer, mark in marks.items():  # sends no chunk saw yet: unknown, not "not in ledger"
        ledger.add_mark(producer, mark)
    final_files, partitions, final_rows, ordered = _final_log(run_dir, ledger.topic)
    run = read_run(run_dir)
    run_id = _run_id(run_dir, run, ledger.run_ids - {""})
    timeline, faults = read_timeline(run_dir / TIMELINE_FILE), read_faults(run_dir / FAULTS_FILE)
    return RunInputs(
        verify_warnings=_verify_warnings(run_dir), run=run, run_id=run_id,
        replica_snapshots=_folders(run_dir / REPLICAS_DIR),
        run_dir=run_dir, ledger_files=ledger_files, final_log_files=final_files,
        producers=ledger.producers, topic=ledger.topic, acks=ledger.acks,
        timeline=_events(timeline), faults=_events(faults),
        unread=[line for e in (timeline, faults) if e is not None for line in e.skipped],
        broker_logs=_broker_logs(run_dir / BROKER_LOGS_DIR), final_log_partitions=sorted(partitions),
        final_log_rows=final_rows, final_log_ordered=ordered, refused=ledger.refused)


@dataclass
class _Ledger:
    """What the ledger chunks' footers and the producers' marks say, gathered as they are read
    (a chunk's topic and acks win over settings.json's, which win over a mark's)."""

    topic: str
    acks: str
    producers: dict[int, ProducerMeta] = field(default_factory=dict)
    run_ids: set[str] = field(default_factory=set)
    refused: int | None = 0

    def add_chunk(self, path: Path, meta: pq.FileMetaData, run_dir: Path) -> None:
        kv = meta.metadata or {}
        try:
            producer = int(path.name[1:4])
            upto = int(kv.get(b"kinspect.sent_upto", b"-1"))
        except ValueError:
            raise KinspectError(f"{path.relative_to(run_dir)}: bad name or sent_upto metadata") from None
        self.topic = kv.get(b"kinspect.topic", b"").decode() or self.topic
        self.acks = kv.get(b"kinspect.acks", b"").decode() or self.acks
        self.run_ids.add(kv.get(b"kinspect.run", b"").decode())
        self.refused = _add_refused(self.refused, kv.get(b"kinspect.refused"))
        pm = self.producers.setdefault(producer, ProducerMeta())
        pm.sent_upto = max(pm.sent_upto, upto)
        pm.rows += meta.num_rows
        seq = _stat_max(meta, "seq")
        if seq is not None:
            pm.max_seq = max(pm.max_seq, seq)
        pm.first_send_ts = _earliest((pm.first_send_ts, _stat_min(meta, "send_ts")))
        pm.last_ack_ts = _latest((pm.last_ack_ts, _stat_max(meta, "ack_ts")))

    def add_mark(self, producer: int, mark: LedgerMark) -> None:
        pm = self.producers.setdefault(producer, ProducerMeta())
        pm.sent_upto = max(pm.sent_upto, mark.upto)
        self.topic, self.acks = self.topic or mark.topic, self.acks or mark.acks
        self.run_ids.add(mark.run_id)


def _run_id(run_dir: Path, run: RunInfo | None, ledger_runs: set[str]) -> str | None:
    """run.json's run id, else the ledger's; KinspectError when they name more than one run
    (None: a run dir made before run ids)."""
    named = set(ledger_runs)
    if run is not None:
        named.add(run.run_id)
    if len(named) > 1:
        raise KinspectError(f"{run_dir}: the ledger holds more than one run "
                            f"({', '.join(sorted(named))})")
    if run is not None:
        return run.run_id
    if ledger_runs:
        return next(iter(ledger_runs))
    return None


def _events(evidence: Evidence | None) -> list[TimelineEvent] | None:
    if evidence is None:
        return None
    return evidence.events


def _files(folder: Path, pattern: str) -> list[Path]:
    """The folder's files named by `pattern`, sorted; none when the folder is missing."""
    if not folder.is_dir():
        return []
    return sorted(folder.glob(pattern))


def _folders(root: Path) -> list[Path]:
    """The folders in `root`, sorted; none when it is missing."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def _add_refused(total: int | None, told: bytes | None) -> int | None:
    """A chunk's refused sends added; a chunk that does not say makes the total unknown."""
    if total is None or told is None:
        return None
    try:
        return total + int(told)
    except ValueError:
        raise KinspectError(f"a ledger chunk's kinspect.refused is not a number ({told!r})") from None


def _final_log(run_dir: Path, topic: str) -> tuple[list[Path], list[int], int, bool]:
    """The final log's files, their partitions and rows (footers only), and whether each says
    every record's previous seq; missing: one line."""
    final_files = _files(run_dir / FINAL_LOG_DIR, "part-*.parquet")
    if not final_files:
        raise KinspectError(f"{run_dir}: final_log/ missing: run `kinspect verify --topic "
                            f"{topic or 'TOPIC'} --run-dir {run_dir}` first")
    partitions, final_rows, ordered = [], 0, True
    for path in final_files:
        meta = _footer(path, FINAL_LOG_SCHEMA, run_dir)
        final_rows += meta.num_rows
        ordered &= "prev_seq" in meta.schema.to_arrow_schema().names
        try:
            partitions.append(int(path.stem.split("-", 1)[1]))
        except ValueError:
            raise KinspectError(f"{path.relative_to(run_dir)}: expected part-NNNN.parquet") from None
    return final_files, partitions, final_rows, ordered


def _stat_min(meta: pq.FileMetaData, name: str) -> int | None:
    """A column's least value from the footer statistics (free); None when they have none."""
    return _earliest(int(stats.min) for stats in _statistics(meta, name))


def _stat_max(meta: pq.FileMetaData, name: str) -> int | None:
    """A column's greatest value from the footer statistics (free); None when they have none."""
    return _latest(int(stats.max) for stats in _statistics(meta, name))


def _statistics(meta: pq.FileMetaData, name: str) -> list[pq.Statistics]:
    """A column's statistics in each row group that has them."""
    column = meta.schema.to_arrow_schema().names.index(name)
    out = []
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(column).statistics
        if stats is not None and stats.has_min_max:
            out.append(stats)
    return out


def _earliest(times: Iterable[int | None]) -> int | None:
    """The least of the known times (None: none is known)."""
    known = [t for t in times if t is not None]
    if not known:
        return None
    return min(known)


def _latest(times: Iterable[int | None]) -> int | None:
    """The greatest of the known times (None: none is known)."""
    known = [t for t in times if t is not None]
    if not known:
        return None
    return max(known)


def evidence_window(inputs: RunInputs, before_ms: int, after_ms: int) -> tuple[int | None, int | None]:
    """The run's window (its start to the end of verify, from run.json); for a run dir made
    before run ids, the first send - before_ms to the last ack + after_ms."""
    if inputs.run is not None:
        return inputs.run.started_at_ms, inputs.run.verified_at_ms
    first, last = run_window(inputs)
    if first is not None:
        first -= before_ms
    if last is not None:
        last += after_ms
    return first, last


def run_window(inputs: RunInputs) -> tuple[int | None, int | None]:
    """First send and last ack over all producers, from footers only (None when unknown)."""
    producers = inputs.producers.values()
    return (_earliest(m.first_send_ts for m in producers),
            _latest(m.last_ack_ts for m in producers))


def _broker_logs(root: Path) -> dict[str, list[Path]]:
    """node -> its server/controller/state-change logs, or ZooKeeper's (rotated ones too,
    oldest first)."""
    out: dict[str, list[Path]] = {}
    for node in _folders(root):
        files = [f for f in node.iterdir() if _is_broker_log(f)]
        if files:
            out[node.name] = sorted(files)
    return out


_LOGS = {"server", "controller", "state-change", "zookeeper"}  # what a log's name begins with


def _is_broker_log(path: Path) -> bool:
    return path.is_file() and ".log" in path.name and path.name.split(".log")[0] in _LOGS
