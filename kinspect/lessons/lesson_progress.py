"""A learner's progress through the lessons, kept in $KINSPECT_HOME/lessons/progress.json.

`Progress` is a value: each change returns a new one, and the file is written whole through a
temporary file and os.replace, so a crash leaves the old file or the new one, never half of
either. A file that is not ours (corrupt, foreign, from a newer kinspect) is refused in one
line and never overwritten: nothing recorded is lost to a bad read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.lessons.lesson_values import Lesson, LessonRecord, Prediction, Status
from kinspect.paths import kinspect_home

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

KIND = "kinspect-lesson-progress"
VERSION = 1
_FINISHED = frozenset({Status.DONE, Status.SKIPPED})


def progress_path() -> Path:
    return kinspect_home() / "lessons" / "progress.json"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Progress:
    """Every lesson's record, and the lesson being worked on (None: none yet)."""

    records: dict[str, LessonRecord] = field(default_factory=dict)
    current: str | None = None

    def record(self, name: str) -> LessonRecord:
        return self.records.get(name) or LessonRecord(name)

    def _with(self, record: LessonRecord, current: str | None) -> Progress:
        stamped = replace(record, updated_at=_now())
        return Progress({**self.records, record.name: stamped}, current)

    def _made_current(self, name: str) -> Progress:
        """`name` becomes the lesson being worked on; the one before it goes back to new
        (what it recorded stays)."""
        records = dict(self.records)
        old = self.current
        if old is not None and old != name and old in records \
                and records[old].status is Status.CURRENT:
            records[old] = replace(records[old], status=Status.NEW)
        record = records.get(name) or LessonRecord(name)
        if record.status is not Status.CURRENT:
            records[name] = replace(record, status=Status.CURRENT)
        return Progress(records, name)

    def with_predictions(self, name: str, predictions: Iterable[Prediction]) -> Progress:
        """The answers given before a run (not judged yet): the lesson is current."""
        moved = self._made_current(name)
        record = replace(moved.record(name), predictions=tuple(
            replace(p, right=None) for p in predictions))
        return moved._with(record, name)

    def with_run(self, name: str, row: Mapping[str, Any], run_dir: Path | None,
                 lesson: Lesson) -> Progress:
        """A finished run: the metrics the lesson asks about, and each prediction judged on
        the row. The run dir is kept for stage mode's replay (a run without one keeps the
        last that had one)."""
        moved = self._made_current(name)
        record = moved.record(name)
        measured = {m: _plain(row.get(m)) for m in lesson.metrics if row.get(m) is not None}
        return moved._with(replace(
            record, measured=measured, predictions=judged(record.predictions, row, lesson),
            run_dir=str(run_dir) if run_dir is not None else record.run_dir), name)

    def with_fix(self, name: str, scenario: str, held: bool, run_dir: Path | None) -> Progress:
        """The fix chosen and rerun, and whether its expectation held."""
        record = replace(self.record(name), fix_scenario=scenario, fix_held=held,
                         fix_run_dir=str(run_dir) if run_dir is not None else None)
        return self._with(record, self.current)

    def with_status(self, name: str, status: Status) -> Progress:
        """A lesson made current, done, skipped or new again."""
        if status is Status.CURRENT:
            moved = self._made_current(name)
            return moved._with(moved.record(name), name)
        current = None if self.current == name else self.current
        return self._with(replace(self.record(name), status=status), current)

    def next_lesson(self, lessons: Sequence[Lesson]) -> Lesson | None:
        """The lesson to open: the current one, else the first not done or skipped after
        the last finished one, else the first not finished (None: all finished)."""
        by_name = {lesson.name: lesson for lesson in lessons}
        if self.current in by_name and self.record(self.current).status not in _FINISHED:
            return by_name[self.current]
        finished = [i for i, lesson in enumerate(lessons)
                    if self.record(lesson.name).status in _FINISHED]
        start = finished[-1] + 1 if finished else 0
        for lesson in (*lessons[start:], *lessons[:start]):
            if self.record(lesson.name).status not in _FINISHED:
                return lesson
        return None

    def to_json(self) -> JsonObject:
        return {"kind": KIND, "version": VERSION, "current": self.current,
                "lessons": {name: _record_json(r) for name, r in sorted(self.records.items())}}


def judged(predictions: Sequence[Prediction], row: Mapping[str, Any],
           lesson: Lesson) -> tuple[Prediction, ...]:
    """Each prediction right or wrong on the measured row, found by its question's and
    choice's English text (None when the lesson file no longer has them)."""
    out = []
    for prediction in predictions:
        question = next((q for q in lesson.questions if q.ask.en == prediction.question), None)
        choice = next((c for c in question.choices if c.text.en == prediction.chosen),
                      None) if question else None
        out.append(replace(prediction, right=choice.right(row) if choice else None))
    return tuple(out)


def _plain(value: Any) -> Any:
    """A measured value JSON keeps as it is (a numpy number from a row becomes a Python one)."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def _record_json(record: LessonRecord) -> JsonObject:
    data = asdict(record)
    data["status"] = record.status.value
    return data


def _prediction(name: str, raw: Any) -> Prediction:
    if not (isinstance(raw, dict) and isinstance(raw.get("question"), str)
            and isinstance(raw.get("chosen"), str) and raw.get("right") in (True, False, None)):
        raise ValueError(f"lesson {name!r}: a prediction is not "
                         "{question, chosen, right: true/false/null}")
    return Prediction(raw["question"], raw["chosen"], raw.get("right"))


def _record(name: str, raw: Any) -> LessonRecord:
    """One record as written; a missing key takes its default (an older file)."""
    if not isinstance(raw, dict):
        raise ValueError(f"lesson {name!r} is not an object")
    predictions = tuple(_prediction(name, p) for p in raw.get("predictions", []))
    measured = raw.get("measured", {})
    if not isinstance(measured, dict):
        raise ValueError(f"lesson {name!r}: measured is not an object")
    return LessonRecord(
        name=name, status=Status(raw.get("status", Status.NEW.value)), predictions=predictions,
        measured=dict(measured), run_dir=raw.get("run_dir"),
        fix_scenario=raw.get("fix_scenario"), fix_held=raw.get("fix_held"),
        fix_run_dir=raw.get("fix_run_dir"), updated_at=raw.get("updated_at"))


def from_json(data: Any) -> Progress:
    """Progress from the file's JSON; ValueError (said by the caller) when it is not ours."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ValueError(f"not kinspect's lesson progress (no \"kind\": \"{KIND}\")")
    if data.get("version") != VERSION:
        raise ValueError(f"version {data.get('version')!r}, this kinspect reads {VERSION}")
    lessons = data.get("lessons", {})
    if not isinstance(lessons, dict):
        raise ValueError("lessons is not an object")
    try:
        records = {str(name): _record(str(name), raw) for name, raw in lessons.items()}
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    current = data.get("current")
    return Progress(records, str(current) if current is not None else None)


def load_progress(path: Path | None = None) -> Progress:
    """The progress on disk (none yet: empty); a file that is not ours is one line."""
    path = path or progress_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Progress()
    except (OSError, UnicodeDecodeError) as exc:
        raise KinspectError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                            ) from None
    try:
        return from_json(json.loads(text))
    except ValueError as exc:  # JSONDecodeError and a bad status are ValueErrors too
        raise KinspectError(f"{path} is not lesson progress kinspect can read ("
                            f"{str(exc).splitlines()[0]}); move it away, or clear it with "
                            "kinspect learn --forget") from None


def save_progress(progress: Progress, path: Path | None = None) -> Path:
    """Written whole and atomically (a temporary file, fsync, os.replace). A file already
    there that is not ours is refused, not overwritten."""
    path = path or progress_path()
    if path.exists():
        load_progress(path)  # raises for a file that is not ours: it stays as it is
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            json.dump(progress.to_json(), out, indent=2, ensure_ascii=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def forget_progress(path: Path | None = None) -> bool:
    """Progress cleared (the file removed, whatever it held); False when there was none."""
    path = path or progress_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def last_good_run(name: str, progress: Progress | None = None) -> Path | None:
    """The run dir of the lesson's last finished run, if it is still on disk and holds a
    recording (stage mode plays it when the live lab fails); None otherwise."""
    from kinspect.sources.playback import open_recording

    try:
        progress = progress if progress is not None else load_progress()
    except KinspectError:
        return None
    recorded = progress.record(name).run_dir
    if not recorded:
        return None
    run_dir = Path(recorded)
    try:
        open_recording(run_dir)
    except (KinspectError, OSError):
        return None
    return run_dir
