"""Progress in $KINSPECT_HOME/lessons/progress.json: a value changed by pure methods, written
whole and atomically, and a file that is not ours refused in one line, never overwritten."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.lessons.lesson_catalog import builtin, find
from kinspect.lessons.lesson_progress import (
    Progress,
    forget_progress,
    last_good_run,
    load_progress,
    progress_path,
    save_progress,
)
from kinspect.lessons.lesson_values import Prediction, Status
from kinspect.sources.recording import RECORDING_DIR
from tests.helpers.recording_story import record_story

LESSON = find("isolated-leader")
LOST, WHOSE = LESSON.questions
# The answers a learner gives: "A handful" lost, "the old leader's" acknowledgements.
ANSWERS = (Prediction(LOST.ask.en, LOST.choices[1].text.en),
           Prediction(WHOSE.ask.en, WHOSE.choices[0].text.en))
ROW = {"acked_lost": 58_902, "lost_blamed_on_target": 1.0, "acked": 100_000,
       "expectation_met": True}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KINSPECT_HOME", str(tmp_path))
    return tmp_path


def test_it_lives_in_kinspect_home(home: Path) -> None:
    assert progress_path() == home / "lessons" / "progress.json"
    assert load_progress() == Progress()


def test_predictions_are_judged_from_the_row() -> None:
    progress = Progress().with_predictions(LESSON.name, ANSWERS)
    record = progress.record(LESSON.name)
    assert progress.current == LESSON.name and record.status is Status.CURRENT
    assert [p.right for p in record.predictions] == [None, None]
    ran = progress.with_run(LESSON.name, ROW, Path("/runs/one"), LESSON)
    record = ran.record(LESSON.name)
    assert [p.right for p in record.predictions] == [False, True]
    assert record.measured == {"acked_lost": 58_902, "lost_blamed_on_target": 1.0}
    assert record.run_dir == "/runs/one"
    assert progress.record(LESSON.name).run_dir is None  # the old value is untouched


def test_a_run_without_a_run_dir_keeps_the_last_good_one() -> None:
    progress = Progress().with_run(LESSON.name, ROW, Path("/runs/one"), LESSON)
    assert progress.with_run(LESSON.name, ROW, None, LESSON).record(LESSON.name).run_dir \
        == "/runs/one"


def test_round_trip(home: Path) -> None:
    progress = (Progress().with_predictions(LESSON.name, ANSWERS)
                .with_run(LESSON.name, ROW, home / "run", LESSON)
                .with_fix(LESSON.name, "acksall-isolate-leader", True, home / "fix")
                .with_status(LESSON.name, Status.DONE)
                .with_status("fire-and-forget", Status.SKIPPED))
    path = save_progress(progress)
    assert path == progress_path()
    again = load_progress()
    assert again == progress
    record = again.record(LESSON.name)
    assert record.status is Status.DONE and again.current is None
    assert (record.fix_scenario, record.fix_held) == ("acksall-isolate-leader", True)
    assert record.updated_at and record.updated_at.endswith("+00:00")
    data = json.loads(path.read_text())
    assert data["kind"] == "kinspect-lesson-progress" and data["version"] == 1


def test_one_lesson_is_current_at_a_time() -> None:
    progress = Progress().with_status("fire-and-forget", Status.CURRENT)
    progress = progress.with_predictions(LESSON.name, ANSWERS)
    assert progress.current == LESSON.name
    assert progress.record("fire-and-forget").status is Status.NEW


def test_next_lesson() -> None:
    lessons = builtin()
    assert Progress().next_lesson(lessons) == lessons[0]
    done = Progress().with_status(lessons[0].name, Status.DONE) \
        .with_status(lessons[1].name, Status.DONE)
    assert done.next_lesson(lessons) == lessons[2]
    current = done.with_status(lessons[5].name, Status.CURRENT)
    assert current.next_lesson(lessons) == lessons[5]
    every = Progress()
    for lesson in lessons:
        every = every.with_status(lesson.name, Status.DONE)
    assert every.next_lesson(lessons) is None


def test_the_write_is_atomic(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = Progress().with_predictions(LESSON.name, ANSWERS)
    path = save_progress(first)
    before = path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        save_progress(first.with_status(LESSON.name, Status.DONE))
    assert path.read_bytes() == before  # the old file, whole
    assert sorted(p.name for p in path.parent.iterdir()) == ["progress.json"]  # no temp left


@pytest.mark.parametrize(("content", "says"), [
    ("{ not json", "not lesson progress kinspect can read"),
    ('{"kind": "something-else", "version": 1}', "not kinspect's lesson progress"),
    ('[1, 2, 3]', "not kinspect's lesson progress"),
    ('{"kind": "kinspect-lesson-progress", "version": 9}', "version 9"),
    ('{"kind": "kinspect-lesson-progress", "version": 1, "lessons": {"x": {"status": "odd"}}}',
     "not lesson progress kinspect can read"),
    ('{"kind": "kinspect-lesson-progress", "version": 1, '
     '"lessons": {"x": {"predictions": [{"question": 1}]}}}', "a prediction is not"),
    ('{"kind": "kinspect-lesson-progress", "version": 1, "lessons": {"x": {"predictions": 7}}}',
     "not lesson progress kinspect can read"),
])
def test_a_file_that_is_not_ours_is_one_line_and_kept(home: Path, content: str,
                                                      says: str) -> None:
    path = progress_path()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(KinspectError) as caught:
        load_progress()
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and says in message
    with pytest.raises(KinspectError):
        save_progress(Progress().with_status(LESSON.name, Status.DONE))
    assert path.read_text() == content  # never overwritten
    assert last_good_run(LESSON.name) is None


def test_forget(home: Path) -> None:
    assert forget_progress() is False
    save_progress(Progress().with_status(LESSON.name, Status.DONE))
    assert forget_progress() is True
    assert load_progress() == Progress()


def test_last_good_run_needs_a_recording_on_disk(home: Path) -> None:
    run_dir = home / "runs" / "scenario-acks1-isolate-leader"
    progress = Progress().with_run(LESSON.name, ROW, run_dir, LESSON)
    save_progress(progress)
    assert last_good_run(LESSON.name) is None  # not on disk
    run_dir.mkdir(parents=True)
    assert last_good_run(LESSON.name) is None  # no recording in it
    record_story(run_dir / RECORDING_DIR, steps=40)
    assert last_good_run(LESSON.name) == run_dir
    assert last_good_run("fire-and-forget") is None
