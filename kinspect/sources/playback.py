"""Reading a recording back: frames in force at any time, one segment decoded at a time.

A frame is one recorded change with the whole state in force after it (snapshot, lab, load,
problems) and what it brought (events, fault journal entries). Seeking finds the segment by its
name and the frame by bisection; a decoded segment is cached, so stepping and seeking within
the last few are free. A segment cut short by a crash reads up to its last complete line.
"""

from __future__ import annotations

import bisect
import json
import re
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.model import ClusterSnapshot, Event, snapshot_from_json
from kinspect.model.partition_codec import row_decoder
from kinspect.sources.recording import (
    POINTER_FILE,
    RECORDING_DIR,
    SEGMENT_GLOB,
    Json,
    apply_delta,
    event_from_json,
    merge_deltas,
)

CACHED_SEGMENTS = 3
SEGMENT_NAME = re.compile(r"^seg-(\d{13})\.jsonl\.gz$")


@dataclass(frozen=True)
class Frame:
    t: int
    snapshot: ClusterSnapshot
    events: tuple[Event, ...]  # new with this frame
    faults: tuple[Json, ...]  # fault journal entries new with this frame
    lab: Json | None
    load: Json | None
    problems: tuple[str, ...]
    keyframe: bool = False


Cursor = tuple[int, int]  # (segment, frame)


def read_lines(path: Path) -> list[Json]:
    """Every complete JSON line of a gzip stream, however it ends (cut short, or garbage)."""
    z = zlib.decompressobj(31)
    out = bytearray()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 16):
            try:
                out += z.decompress(chunk)
            except zlib.error:
                break
    records = []
    for line in bytes(out).split(b"\n")[:-1]:  # the last piece has no newline: incomplete
        try:
            records.append(json.loads(line))
        except ValueError:
            break
    return records


class Segment:
    """One segment's records. Snapshots are built when asked: from the nearest one built
    before, with the deltas between merged into one (a seek builds each changed partition
    once); the lab, load and problems in force are worked out up front (they are small)."""

    SNAPSHOTS_KEPT = 256

    def __init__(self, records: list[Json]) -> None:
        first = records[0] if records else {}
        if first.get("k") != "key":
            raise ValueError("a segment must open with a keyframe")
        self.records = [first] + [r for r in records[1:] if r.get("k") in ("snap", "state")
                                  and ("d" in r or r["k"] == "state")]
        self.times: list[int] = [int(r["t"]) for r in self.records]
        self.snap_at: list[int] = []  # the record whose snapshot is in force at each
        self.labs: list[Json | None] = []
        self.loads: list[Json | None] = []
        self.problems: list[tuple[str, ...]] = []
        lab, load, problems, snap = first.get("lab"), first.get("load"), \
            tuple(first.get("problems", [])), 0
        for i, r in enumerate(self.records):
            if r["k"] == "state":
                lab, load = r.get("lab", lab), r.get("load", load)
                problems = tuple(r.get("problems", problems))
            elif i:
                snap = i
            self.snap_at.append(snap)
            self.labs.append(lab)
            self.loads.append(load)
            self.problems.append(problems)
        self._snapshots: dict[int, ClusterSnapshot] = {0: snapshot_from_json(first["s"])}
        self.fields = _row_fields(first)
        row_decoder(self.fields)  # rows this kinspect cannot read: the segment is unreadable

    def __len__(self) -> int:
        return len(self.records)

    def snapshot(self, i: int) -> ClusterSnapshot:
        i = self.snap_at[i]
        if i in self._snapshots:
            return self._snapshots[i]
        base = max(k for k in self._snapshots if k < i)
        deltas = [self.records[k]["d"] for k in range(base + 1, i + 1)
                  if self.records[k]["k"] == "snap"]
        built = apply_delta(self._snapshots[base], merge_deltas(deltas), self.fields)
        if len(self._snapshots) >= self.SNAPSHOTS_KEPT:
            del self._snapshots[next(k for k in self._snapshots if k)]
        self._snapshots[i] = built
        return built

    def frame(self, i: int) -> Frame:
        r = self.records[i]
        return Frame(self.times[i], self.snapshot(i),
                     tuple(event_from_json(e) for e in r.get("ev", [])),
                     tuple(r.get("faults", [])), self.labs[i], self.loads[i], self.problems[i],
                     keyframe=i == 0)


def _row_fields(keyframe: Json) -> tuple[str, ...] | None:
    """The fields its partition rows hold; None: recorded before keyframes named them."""
    fields = keyframe.get("fields")
    if fields is None:
        return None
    return tuple(fields)


def decode_segment(records: list[Json]) -> Segment | None:
    """None when the segment is unreadable (no keyframe: cut before it was written)."""
    try:
        return Segment(records)
    except (KeyError, IndexError, TypeError, ValueError):
        return None


class Recording:
    """One recording folder, optionally cut to a window (a run's part of a session)."""

    def __init__(self, root: Path, window: tuple[int | None, int | None] = (None, None)) -> None:
        self.root = root
        self._cache: OrderedDict[int, Segment | None] = OrderedDict()
        found = sorted((int(m[1]), p) for p in root.glob(SEGMENT_GLOB)
                       if (m := SEGMENT_NAME.match(p.name)))
        self.starts = [s for s, _ in found]
        self.paths = [p for _, p in found]
        # A segment that decodes to nothing (cut before its keyframe) is left out.
        while self.paths and self._load(len(self.paths) - 1) is None:
            self._drop(len(self.paths) - 1)
        while self.paths and self._load(0) is None:
            self._drop(0)
        if not self.paths:
            raise KinspectError(f"{root} holds no readable recording (every segment is empty "
                                "or damaged)")
        first, last = self.segment(0).times[0], self.segment(len(self.paths) - 1).times[-1]
        self.start_ms = max(first, window[0] or first)
        self.end_ms = max(self.start_ms, min(last, window[1] or last))

    def _drop(self, index: int) -> None:
        del self.starts[index], self.paths[index]
        self._cache.clear()

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms

    def _load(self, index: int) -> Segment | None:
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        segment = decode_segment(read_lines(self.paths[index]))
        self._cache[index] = segment
        while len(self._cache) > CACHED_SEGMENTS:
            self._cache.popitem(last=False)
        return segment

    def segment(self, index: int) -> Segment:
        segment = self._load(index)
        if segment is None:  # readable when opened; replaced on disk since
            raise KinspectError(f"{self.paths[index]} can no longer be read")
        return segment

    def frames(self, index: int) -> list[Frame]:
        """Every frame of a segment (tests, tools); the player asks for one at a time."""
        segment = self.segment(index)
        return [segment.frame(i) for i in range(len(segment))]

    def frame(self, cursor: Cursor) -> Frame:
        return self.segment(cursor[0]).frame(cursor[1])

    def locate(self, t: int) -> Cursor:
        """The frame in force at t (the first one when t is before it)."""
        index = max(0, bisect.bisect_right(self.starts, t) - 1)
        return index, max(0, bisect.bisect_right(self.segment(index).times, t) - 1)

    def next(self, cursor: Cursor) -> Cursor | None:
        index, i = cursor
        if i + 1 < len(self.segment(index)):
            return index, i + 1
        return (index + 1, 0) if index + 1 < len(self.paths) else None

    def prev(self, cursor: Cursor) -> Cursor | None:
        index, i = cursor
        if i > 0:
            return index, i - 1
        return (index - 1, len(self.segment(index - 1)) - 1) if index > 0 else None

    def history(self, cursor: Cursor, limit: int = 60) -> list[Event | Json]:
        """The last events and fault entries up to the cursor (within its segment), oldest
        first: what the event log shows after a jump."""
        segment, out = self.segment(cursor[0]), list[Event | Json]()
        for i in range(cursor[1], -1, -1):
            r = segment.records[i]
            out[:0] = [*(event_from_json(e) for e in r.get("ev", [])), *r.get("faults", [])]
            if len(out) >= limit:
                break
        return out[-limit:]


def open_recording(path: Path) -> Recording:
    """A run dir, a session dir, or a recording folder itself; a run dir's pointer cuts the
    recording to the run's window (and leads to the session's when the copy is missing)."""
    if not path.is_dir():
        raise KinspectError(f"DIR {path} does not exist" if not path.exists()
                            else f"DIR {path} is a file, not a directory")
    window: tuple[int | None, int | None] = (None, None)
    pointer: Json | None = None
    if (path / POINTER_FILE).is_file():
        try:
            pointer = json.loads((path / POINTER_FILE).read_text())
            window = (int(pointer["from_ms"]), pointer.get("to_ms"))
        except (ValueError, KeyError, TypeError):
            raise KinspectError(f"{path / POINTER_FILE} is not a recording pointer") from None
    for root in (path / RECORDING_DIR, path):
        if any(root.glob(SEGMENT_GLOB)):
            return Recording(root, window)
    if pointer is not None:
        session = Path(str(pointer.get("session", "")))
        if any(session.glob(SEGMENT_GLOB)):
            return Recording(session, window)
        raise KinspectError(f"{path} was recorded by a session whose recording is gone "
                            f"({session})")
    raise KinspectError(f"{path} is not a recording (no {RECORDING_DIR}/ with seg-*.jsonl.gz, "
                        f"no {POINTER_FILE})")


CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$")


def parse_at(text: str, recording: Recording) -> int:
    """`--at`: seconds from the start (`90`, `90s`, `1:30` is a clock time), a clock time
    `HH:MM[:SS[.mmm]]` on the recording's day, or epoch milliseconds; refused outside it."""
    text = text.strip()
    bounds = (f"{_clock(recording.start_ms)} to {_clock(recording.end_ms)}, "
              f"0 to {recording.duration_ms / 1000:.1f} s")
    seconds = re.fullmatch(r"(\d+(?:\.\d+)?)s?", text)
    clock = CLOCK.match(text)
    if seconds and float(seconds[1]) < 1e11:
        at = recording.start_ms + round(float(seconds[1]) * 1000)
    elif seconds:
        at = int(float(seconds[1]))
    elif clock:
        at = _on_day(clock, recording.start_ms)
    else:
        raise KinspectError(f"--at {text!r} is not seconds from the start, HH:MM:SS or epoch "
                            f"ms (the recording spans {bounds})")
    if not recording.start_ms - 1000 <= at <= recording.end_ms + 1000:
        raise KinspectError(f"--at {text!r} is outside the recording ({bounds})")
    return min(max(at, recording.start_ms), recording.end_ms)


def _on_day(m: re.Match[str], start_ms: int) -> int:
    """A clock time on the day the recording started (the next day if it crossed midnight)."""
    day = time.localtime(start_ms / 1000)
    secs = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3] or 0)
    midnight = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, 0, 0, 0, 0, 0, -1))
    at = int((midnight + secs) * 1000) + int((m[4] or "0").ljust(3, "0"))
    return at + 86_400_000 if at < start_ms - 1000 else at


def _clock(ms: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000))

