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
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kinspect.errors import KinspectError
from kinspect.lab.faults import hurts
from kinspect.lab.topology import broker_id_of
from kinspect.load.ack_ledger import LEDGER_SCHEMA, read_marks
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
    return Evidence([fault_event(entry) for _, entry in lines.entries], lines.skipped)


def fault_event(entry: JsonObject) -> TimelineEvent:
    """One journal entry (`kill kafka2`, `partition a | b,c`) as the timeline tells it."""
    action, node, lab_id = str(entry.get("action", "?")), entry.get("node"), entry.get("lab_id")
    node = None if node is None else str(node)
    raw = entry.get("groups")
    groups = tuple(tuple(map(str, g)) for g in raw if isinstance(g, list)) \
        if isinstance(raw, list) else None
    what = f"{action} {node}" if node else action
    if groups:
        what += " " + " | ".join(",".join(g) for g in groups)
    note = str(entry.get("detail") or "")
    ts = entry["ts"]
    return TimelineEvent(
        int(ts) if isinstance(ts, int | float) else 0, JournalKind.FAULT,
        f"fault: {what}" + (f" ({note})" if note and note != what else ""),
        broker=broker_id_of(node), severity=Severity.ERROR if hurts(action) else Severity.INFO,
        source=Source.FAULTS, node=node, action=action, note=note, groups=groups,
        lab_id=None if lab_id is None else str(lab_id))


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
        more = f" and {len(numbers) - SHOWN_LINES:,} more" if len(numbers) > SHOWN_LINES else ""
        noun = "line" if len(numbers) == 1 else "lines"
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
    return [str(w) for w in warnings] if isinstance(warnings, list) else []


def _json_file(path: Path) -> dict[str, object]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError:
        raise KinspectError(f"{path.name} in the run dir is not valid JSON") from None
    return value if isinstance(value, dict) else {}


def load_inputs(run_dir: Path) -> RunInputs:
    """Everything the job needs to know up front; KinspectError names what is missing."""
    if not run_dir.is_dir():
        raise KinspectError(f"run dir {run_dir} does not exist")
    ledger_dir = run_dir / LEDGER_DIR
    ledger_files = sorted(ledger_dir.glob("p*.parquet")) if ledger_dir.is_dir() else []
    marks = read_marks(run_dir)
    if not ledger_files and not marks:
        raise KinspectError(f"{run_dir}: ledger/ has no p*.parquet files: not a kinspect run dir "
                            "(run `kinspect load run --run-dir DIR` first)")
    settings = _json_file(run_dir / SETTINGS_FILE)
    check_saved(settings, f"{run_dir / SETTINGS_FILE}")
    producers: dict[int, ProducerMeta] = {}
    topic, acks = str(settings.get("topic", "")), str(settings.get("acks", ""))
    run_ids: set[str] = set()
    refused: int | None = 0
    for path in ledger_files:
        meta = _footer(path, LEDGER_SCHEMA, run_dir)
        kv = meta.metadata or {}
        try:
            producer = int(path.name[1:4])
            upto = int(kv.get(b"kinspect.sent_upto", b"-1"))
        except ValueError:
            raise KinspectError(f"{path.relative_to(run_dir)}: bad name or sent_upto metadata") from None
        topic = kv.get(b"kinspect.topic", b"").decode() or topic
        acks = kv.get(b"kinspect.acks", b"").decode() or acks
        run_ids.add(kv.get(b"kinspect.run", b"").decode())
        refused = _add_refused(refused, kv.get(b"kinspect.refused"))
        pm = producers.setdefault(producer, ProducerMeta())
        pm.sent_upto = max(pm.sent_upto, upto)
        pm.rows += meta.num_rows
        pm.max_seq = max(pm.max_seq, _stat(meta, "seq", max, -1))
        first, last = _stat(meta, "send_ts", min, None), _stat(meta, "ack_ts", max, None)
        pm.first_send_ts = min(x for x in (first, pm.first_send_ts) if x is not None) \
            if first is not None or pm.first_send_ts is not None else None
        pm.last_ack_ts = max(x for x in (last, pm.last_ack_ts) if x is not None) \
            if last is not None or pm.last_ack_ts is not None else None
    for producer, mark in marks.items():  # sends no chunk saw yet: unknown, not "not in ledger"
        pm = producers.setdefault(producer, ProducerMeta())
        pm.sent_upto = max(pm.sent_upto, mark.upto)
        topic, acks = topic or mark.topic, acks or mark.acks
        run_ids.add(mark.run_id)
    final_files, partitions, final_rows, ordered = _final_log(run_dir, topic)
    run = read_run(run_dir)
    ledger_runs = run_ids - {""}
    if len(ledger_runs) > 1 or (run and ledger_runs and ledger_runs != {run.run_id}):
        raise KinspectError(f"{run_dir}: the ledger holds more than one run "
                            f"({', '.join(sorted(ledger_runs | ({run.run_id} if run else set())))})")
    replicas = run_dir / REPLICAS_DIR
    timeline, faults = read_timeline(run_dir / TIMELINE_FILE), read_faults(run_dir / FAULTS_FILE)
    return RunInputs(
        verify_warnings=_verify_warnings(run_dir),
        run=run, run_id=run.run_id if run else (next(iter(ledger_runs)) if ledger_runs else None),
        replica_snapshots=sorted(p for p in replicas.iterdir() if p.is_dir()) if replicas.is_dir() else [],
        run_dir=run_dir, ledger_files=ledger_files, final_log_files=final_files,
        producers=producers, topic=topic, acks=acks,
        timeline=None if timeline is None else timeline.events,
        faults=None if faults is None else faults.events,
        unread=[line for e in (timeline, faults) if e is not None for line in e.skipped],
        broker_logs=_broker_logs(run_dir / BROKER_LOGS_DIR), final_log_partitions=sorted(partitions),
        final_log_rows=final_rows, final_log_ordered=ordered, refused=refused)


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
    final_dir = run_dir / FINAL_LOG_DIR
    final_files = sorted(final_dir.glob("part-*.parquet")) if final_dir.is_dir() else []
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


def _stat(meta: pq.FileMetaData, name: str, pick: Any, default: Any) -> Any:
    """A column's min or max from the footer statistics (free); `default` when there are none."""
    column = meta.schema.to_arrow_schema().names.index(name)
    values = []
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max:
            continue
        values.append(int(stats.min if pick is min else stats.max))
    return pick(values) if values else default


def evidence_window(inputs: RunInputs, before_ms: int, after_ms: int) -> tuple[int | None, int | None]:
    """The run's window (its start to the end of verify, from run.json); for a run dir made
    before run ids, the first send - before_ms to the last ack + after_ms."""
    if inputs.run is not None:
        return inputs.run.started_at_ms, inputs.run.verified_at_ms
    first, last = run_window(inputs)
    return (first - before_ms if first else None), (last + after_ms if last else None)


def run_window(inputs: RunInputs) -> tuple[int | None, int | None]:
    """First send and last ack over all producers, from footers only (None when unknown)."""
    firsts = [m.first_send_ts for m in inputs.producers.values() if m.first_send_ts is not None]
    lasts = [m.last_ack_ts for m in inputs.producers.values() if m.last_ack_ts is not None]
    return (min(firsts) if firsts else None, max(lasts) if lasts else None)


def _broker_logs(root: Path) -> dict[str, list[Path]]:
    """node -> its server/controller/state-change logs, or ZooKeeper's (rotated ones too,
    oldest first)."""
    if not root.is_dir():
        return {}
    out: dict[str, list[Path]] = {}
    for node in sorted(p for p in root.iterdir() if p.is_dir()):
        files = [f for f in node.iterdir() if f.is_file() and ".log" in f.name
                 and f.name.split(".log")[0] in {"server", "controller", "state-change",
                                                 "zookeeper"}]
        if files:
            out[node.name] = sorted(files)
    return out
