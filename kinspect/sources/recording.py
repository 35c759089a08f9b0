"""Recording a session: snapshots' changes, events and the lab's journal, compact and crash-safe.

A recording is a folder of segments, `seg-<ms>.jsonl.gz`. Each segment is one gzip stream of
JSON lines and starts with a keyframe (the full `snapshot_to_json`, the lab, load and problems
in force), so a seek decodes one segment, never the whole session. Between keyframes a record
holds only what changed: partitions whose state changed, brokers, controller, findings, groups.
The stream is sync-flushed to the OS every second, so a killed session replays up to its last
second (a reader stops at the last complete line). The lab and load are opaque JSON here: this
layer may not know their types.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import orjson

from kinspect.errors import error_line
from kinspect.model import (
    BrokerInfo,
    ClusterFinding,
    ClusterSnapshot,
    ConfigValue,
    ControllerInfo,
    Event,
    EventKind,
    GroupInfo,
    GroupPartition,
    PartitionInfo,
    TopicInfo,
    quorum_from_json,
    quorum_to_json,
    snapshot_to_json,
)
from kinspect.model.events import Severity
from kinspect.model.facts import Fact
from kinspect.model.partition_codec import RowDecoder, partition_row, row_decoder
from kinspect.model.partition_schema import ROW_FIELDS
from kinspect.model.serialize import (
    fact_from_json,
    fact_to_json,
    log_dir_from_json,
    log_dir_to_json,
    throttle_from_json,
    throttle_to_json,
)
from kinspect.model.snapshot import LogDirInfo

RECORDING_DIR = "recording"  # in a run dir or a session dir
POINTER_FILE = "recording.json"  # in a run dir: which session recorded it, and when
META_FILE = "meta.json"
SEGMENT_GLOB = "seg-*.jsonl.gz"
KEYFRAME_S = 30.0
DELTAS_PER_KEYFRAME = 4  # a keyframe sooner once the deltas outweigh this many keyframes
FLUSH_S = 1.0
Json = dict[str, Any]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# ----- the delta codec: compact rows, exact round trip ------------------------------------
# A partition's row is compiled from the partition schema (model/partition_codec.py); each
# keyframe names the fields of its segment's rows, so a later kinspect reads them by name.


def partition_from_row(topic: str, row: list[Any],
                       fields: tuple[str, ...] | None = ROW_FIELDS) -> PartitionInfo:
    """A row of these fields (a keyframe names them); None: a recording made before rows were
    named, read by its length."""
    return row_decoder(fields)(topic, row)


def _topic_row(t: TopicInfo) -> list[Any]:
    return [t.name, t.replication_factor,
            fact_to_json(t.config, lambda c: [[k, v.value, v.source] for k, v in c]),
            [partition_row(p) for p in t.partitions]]


def _topic_from_row(r: list[Any], decode: RowDecoder) -> TopicInfo:
    config: Fact[tuple[tuple[str, ConfigValue], ...]] = fact_from_json(
        r[2], lambda rows: tuple((k, ConfigValue(v, s)) for k, v, s in rows))
    return TopicInfo(r[0], r[1], config, tuple([decode(r[0], p) for p in r[3]]))


def _groups(groups: Sequence[GroupInfo]) -> list[Any]:
    return [[g.group_id, g.state, g.members,
             [[p.topic, p.partition, p.committed, p.high_watermark, p.next_ts, p.log_start]
              for p in g.partitions]]
            for g in groups]


def _shape(t: TopicInfo) -> tuple[Any, ...]:
    return t.replication_factor, t.config, tuple(p.partition for p in t.partitions)


def snapshot_delta(old: ClusterSnapshot, new: ClusterSnapshot) -> Json:
    """What `apply_delta(old, ·)` needs to give exactly `new`; unchanged parts are left out."""
    return {"at": new.taken_at, **_cluster_delta(old, new), **_lists_delta(old, new),
            **_topics_delta(old, new)}


def _cluster_delta(old: ClusterSnapshot, new: ClusterSnapshot) -> Json:
    """The controller, the sessions, what is hidden, the mode and quorum: when they changed."""
    d: Json = {}
    if new.controller != old.controller:
        c = new.controller
        d["c"] = [c.id, c.epoch, c.broker_reported_id]
    if new.zookeeper_state != old.zookeeper_state:
        d["zk"] = new.zookeeper_state
    if (new.admin_state, new.admin_error) != (old.admin_state, old.admin_error):
        d["ad"] = [new.admin_state, new.admin_error]
    if (new.hidden_topics, new.controller_unknown) != (old.hidden_topics, old.controller_unknown):
        d["u"] = [fact_to_json(new.hidden_topics, list),
                  None if new.controller_unknown is None else fact_to_json(new.controller_unknown)]
    if (new.mode, new.quorum) != (old.mode, old.quorum):  # KRaft: the quorum moves every poll
        d["q"] = [new.mode, quorum_to_json(new.quorum) if new.quorum is not None else None]
    return d


def _lists_delta(old: ClusterSnapshot, new: ClusterSnapshot) -> Json:
    """The brokers, findings, limitations and groups, each whole when it changed."""
    d: Json = {}
    if new.brokers != old.brokers:
        d["b"] = [[b.id, b.address, b.registered, b.expected, b.fenced,
                   None if b.throttle is None else fact_to_json(b.throttle, throttle_to_json),
                   None if b.log_dirs is None else fact_to_json(
                       b.log_dirs, lambda dirs: [log_dir_to_json(x) for x in dirs])]
                  for b in new.brokers]
    if new.findings != old.findings:
        d["w"] = [[w.kind, w.message, w.topic, w.broker, w.severity] for w in new.findings]
    if new.limitations != old.limitations:
        d["l"] = list(new.limitations)
    if new.groups != old.groups:
        d["g"] = _groups(new.groups)
    return d


def _topics_delta(old: ClusterSnapshot, new: ClusterSnapshot) -> Json:
    """The topic order when it changed; a topic whose shape changed whole (`T`), else the rows
    of its partitions that changed (`p`)."""
    d: Json = {}
    before = {t.name: t for t in old.topics}
    if [t.name for t in new.topics] != [t.name for t in old.topics]:
        d["o"] = [t.name for t in new.topics]
    for t in new.topics:
        was = before.get(t.name)
        if was is None or _shape(was) != _shape(t):
            d.setdefault("T", []).append(_topic_row(t))
        elif was.partitions != t.partitions:
            rows = [partition_row(p) for p, q in zip(t.partitions, was.partitions, strict=True)
                    if p != q]
            d.setdefault("p", {})[t.name] = rows
    return d


def apply_delta(old: ClusterSnapshot, d: Json,
                fields: tuple[str, ...] | None = ROW_FIELDS) -> ClusterSnapshot:
    """`old` with the delta applied; its partition rows hold `fields` (its keyframe's; None: a
    recording made before keyframes named them)."""
    topics = _apply_topics(old, d, row_decoder(fields))
    return replace(old, taken_at=d["at"], topics=topics, **_apply_cluster(d), **_apply_lists(d))


def _apply_topics(old: ClusterSnapshot, d: Json, decode: RowDecoder) -> tuple[TopicInfo, ...]:
    topics = {t.name: t for t in old.topics}
    for row in d.get("T", []):
        topics[row[0]] = _topic_from_row(row, decode)
    for name, rows in d.get("p", {}).items():
        t = topics[name]
        index = {p.partition: i for i, p in enumerate(t.partitions)}
        parts = list(t.partitions)
        for r in rows:
            parts[index[r[0]]] = decode(name, r)
        topics[name] = replace(t, partitions=tuple(parts))
    return tuple(topics[n] for n in d.get("o", [t.name for t in old.topics]))


def _apply_cluster(d: Json) -> Json:
    changes: Json = {}
    if "c" in d:
        changes["controller"] = ControllerInfo(*d["c"])
    if "zk" in d:
        changes["zookeeper_state"] = d["zk"]
    if "ad" in d:
        changes["admin_state"], changes["admin_error"] = d["ad"]
    if "u" in d:
        changes["hidden_topics"] = fact_from_json(d["u"][0], tuple)
        changes["controller_unknown"] = None if d["u"][1] is None else fact_from_json(d["u"][1])
    if "q" in d:
        changes["mode"] = d["q"][0]
        changes["quorum"] = quorum_from_json(d["q"][1]) if d["q"][1] is not None else None
    return changes


def _log_dirs_from_json(dirs: list[Any]) -> tuple[LogDirInfo, ...]:
    return tuple(log_dir_from_json(x) for x in dirs)


def _apply_lists(d: Json) -> Json:
    changes: Json = {}
    if "b" in d:
        changes["brokers"] = tuple(BrokerInfo(b[0], b[1], b[2], b[3], b[4],
                                              None if len(b) < 6 or b[5] is None
                                              else fact_from_json(b[5], throttle_from_json),
                                              None if len(b) < 7 or b[6] is None
                                              else fact_from_json(b[6], _log_dirs_from_json))
                                   for b in d["b"])
    if "w" in d:
        changes["findings"] = tuple(ClusterFinding(kind, message, topic, broker, Severity(level))
                                    for kind, message, topic, broker, level in d["w"])
    if "l" in d:
        changes["limitations"] = tuple(d["l"])
    if "g" in d:
        changes["groups"] = tuple(GroupInfo(g, s, m, tuple(GroupPartition(*p) for p in ps))
                                  for g, s, m, ps in d["g"])
    return changes


def merge_deltas(deltas: Sequence[Json]) -> Json:
    """Several deltas as one, so a seek builds each changed partition once, not once per change:
    the last value of each part wins, a topic sent whole drops the partition rows before it."""
    out: Json = {}
    whole: dict[str, list[Any]] = {}
    parts: dict[str, dict[int, list[Any]]] = {}
    for d in deltas:
        for key, value in d.items():
            if key not in ("T", "p"):
                out[key] = value
        for row in d.get("T", []):
            whole[row[0]] = row
            parts.pop(row[0], None)
        for name, rows in d.get("p", {}).items():
            parts.setdefault(name, {}).update((r[0], r) for r in rows)
    if whole:
        out["T"] = list(whole.values())
    if parts:
        out["p"] = {name: list(rows.values()) for name, rows in parts.items()}
    return out


EVENT_KEYS = ("ts", "kind", "partition", "broker", "severity", "detail")


def event_from_json(e: Mapping[str, Any]) -> Event:
    return Event(e["ts"], EventKind(e["kind"]), e["detail"], e["partition"], e["broker"],
                 Severity(e["severity"]), {k: v for k, v in e.items() if k not in EVENT_KEYS})


# ----- the writer -----------------------------------------------------------------------

SPLIT_DEPTH = 3  # a record, its snapshot, its topics: each topic (each row of a delta) a piece
CHUNK = 1 << 18  # pieces are handed to the compressor in chunks of about this many bytes


def json_chunks(record: Json) -> Iterator[bytes]:
    """One record as a line of compact JSON, in chunks, encoded a piece at a time. The
    recorder runs in the TUI's process, and a JSON encoder in C keeps the GIL until it is
    done: the standard library's took 1.2-2.5 s over a 100,000-partition keyframe, and the
    screen stood still for as long. Between pieces (a topic, a row of changed partitions)
    other threads run, and no buffer holds the whole line (allocating 65 MB at once stalls
    too)."""
    buffer = bytearray()
    for piece in _pieces(record, 0):
        buffer += piece
        if len(buffer) >= CHUNK:
            yield bytes(buffer)
            buffer.clear()
    buffer += b"\n"
    yield bytes(buffer)


def _pieces(value: Any, depth: int) -> Iterator[bytes]:
    if depth < SPLIT_DEPTH and isinstance(value, dict):
        separator = b"{"
        for key, item in value.items():
            yield separator + orjson.dumps(str(key)) + b":"
            yield from _pieces(item, depth + 1)
            separator = b","
        yield b"}" if value else b"{}"
    elif depth < SPLIT_DEPTH and isinstance(value, list):
        separator = b"["
        for item in value:
            yield separator
            yield from _pieces(item, depth + 1)
            separator = b","
        yield b"]" if value else b"[]"
    else:
        yield orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


class Segment:
    """One gzip stream being appended to; `sync` makes everything written so far readable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] = open(path, "xb")  # noqa: SIM115
        self._z = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip header and trailer

    def write(self, record: Json) -> int:
        """Append one record; its size in bytes before compression."""
        size = 0
        for chunk in json_chunks(record):
            size += len(chunk)
            self._file.write(self._z.compress(chunk))
        return size

    def sync(self) -> None:
        self._file.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        self._file.write(self._z.flush(zlib.Z_FINISH))
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


_STOP = object()


class Recorder:
    """Records into `root` from any thread: callers only enqueue; one thread of its own diffs,
    compresses and writes, so neither the observer nor the feed waits on the disk.

    `attach_run(run_dir)` marks a run's window: the run dir gets `recording.json` (this
    session's recording and `from_ms`) at once, and when the run is detached or the recorder
    closes, a copy of the segments its window touches (`run_dir/recording/`) and its `to_ms`.
    """

    def __init__(self, root: Path, keyframe_s: float = KEYFRAME_S, flush_s: float = FLUSH_S,
                 title: str = "") -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.keyframe_ms, self.flush_s = root, int(keyframe_s * 1000), flush_s
        self.error: str | None = None  # the disk failed: recording stopped, said once
        self._meta: Json = {"version": 1, "title": title, "started_at_ms": now_ms(),
                            "keyframe_s": keyframe_s}
        _write_json(root / META_FILE, self._meta)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._segment: Segment | None = None
        self._segment_start = 0
        self._key_bytes = self._delta_bytes = 0  # a seek parses both: keep it bounded
        self._segments: list[tuple[int, Path]] = []
        self._last_t = 0
        self._snapshot: ClusterSnapshot | None = None
        self._state: Json = {"lab": None, "load": None, "problems": []}
        self._pending_faults: list[Json] = []
        self._run: tuple[Path, int] | None = None
        self._thread = threading.Thread(target=self._run_loop, name="kinspect-recorder",
                                        daemon=True)
        self._thread.start()

    # Called from other threads: enqueue only.

    def snapshot(self, snapshot: ClusterSnapshot, events: list[Event]) -> None:
        """An observer subscriber."""
        self._queue.put(("snap", snapshot, list(events)))

    def lab(self, lab: Json | None, faults: Sequence[Json], load: Json | None,
            t: int | None = None) -> None:
        self._queue.put(("state", t or now_ms(), {"lab": lab, "load": load}, list(faults)))

    def problems(self, problems: Sequence[str], t: int | None = None) -> None:
        self._queue.put(("state", t or now_ms(), {"problems": list(problems)}, []))

    def attach_run(self, run_dir: Path | None, t: int | None = None) -> None:
        self._queue.put(("run", t or now_ms(), run_dir))

    def close(self, timeout: float = 10.0) -> None:
        """Write out everything queued, finish the stream and the attached run's copy."""
        self._queue.put(_STOP)
        self._thread.join(timeout)

    # The recorder's own thread.

    def _run_loop(self) -> None:
        next_sync = time.monotonic() + self.flush_s
        while True:
            try:
                item = self._queue.get(timeout=max(0.01, next_sync - time.monotonic()))
            except queue.Empty:
                item = None
            if item is _STOP:
                break
            try:
                if item is not None and self.error is None:
                    self._handle(item)
                if time.monotonic() >= next_sync:
                    next_sync = time.monotonic() + self.flush_s
                    if self._segment and self.error is None:
                        self._segment.sync()
            except (OSError, ValueError, TypeError) as exc:  # said by the feed, never a crash
                self.error = f"recording stopped: {error_line(exc)}"
        self._finish()

    def _stamp(self, t: int) -> int:
        """Records' times never go back (a snapshot built before a later-stamped lab poll)."""
        self._last_t = max(self._last_t, t)
        return self._last_t

    def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "snap":
            _, snapshot, events = item
            t = self._stamp(snapshot.taken_at)
            evs = [e.to_json() for e in events]
            if self._segment is None or t - self._segment_start >= self.keyframe_ms \
                    or self._delta_bytes > DELTAS_PER_KEYFRAME * self._key_bytes:
                self._open_segment(t, snapshot, evs)
            else:
                assert self._snapshot is not None
                self._delta_bytes += self._segment.write(
                    {"t": t, "k": "snap", **({"ev": evs} if evs else {}),
                     "d": snapshot_delta(self._snapshot, snapshot)})
            self._snapshot = snapshot
        elif kind == "state":
            _, t, changes, faults = item
            changed = {k: v for k, v in changes.items() if v != self._state[k]}
            self._state.update(changed)
            if self._segment is None:
                self._pending_faults += faults
            elif changed or faults:
                self._segment.write({"t": self._stamp(t), "k": "state", **changed,
                                     **({"faults": faults} if faults else {})})
        elif kind == "run":
            _, t, run_dir = item
            self._detach(t)
            if run_dir is not None:
                self._run = (run_dir, t)
                _write_json(run_dir / POINTER_FILE, {"session": str(self.root), "from_ms": t,
                                                     "to_ms": None})

    def _open_segment(self, t: int, snapshot: ClusterSnapshot, events: list[Json]) -> None:
        if self._segment is not None:
            self._segment.close()
        path = self.root / f"seg-{t:013d}.jsonl.gz"
        self._segment, self._segment_start = Segment(path), t
        self._segments.append((t, path))
        self._key_bytes = self._segment.write({"t": t, "k": "key", "ev": events,
                                               "s": snapshot_to_json(snapshot), **self._state,
                                               "faults": self._pending_faults,
                                               "fields": list(ROW_FIELDS)})
        self._delta_bytes = 0
        self._pending_faults = []
        self._segment.sync()  # a keyframe is readable at once: the segment can be copied

    def _detach(self, t: int) -> None:
        """The attached run ends at t: copy the segments its window touches into it."""
        if self._run is None:
            return
        run_dir, start = self._run
        self._run = None
        if self._segment is not None:
            self._segment.sync()
        copy = run_dir / RECORDING_DIR
        copy.mkdir(exist_ok=True)
        ends = [s for s, _ in self._segments[1:]] + [t + 1]
        for (begin, path), end in zip(self._segments, ends, strict=True):
            if begin <= t and end > start:
                shutil.copyfile(path, copy / path.name)
        _write_json(copy / META_FILE, {**self._meta, "copied_from": str(self.root)})
        _write_json(run_dir / POINTER_FILE, {"session": str(self.root), "from_ms": start,
                                             "to_ms": t})

    def _finish(self) -> None:
        try:
            self._detach(max(self._last_t, now_ms()))  # syncs the open segment: before closing
            if self._segment is not None:
                self._segment.close()
                self._segment = None
            _write_json(self.root / META_FILE, {**self._meta, "ended_at_ms": now_ms()})
        except OSError as exc:
            self.error = f"recording stopped: {error_line(exc)}"


def _write_json(path: Path, data: Json) -> None:
    """Atomic replace: a reader never sees half a pointer."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)
