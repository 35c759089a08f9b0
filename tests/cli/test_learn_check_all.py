"""`kinspect learn --check-all` without a lab: its bad input (one line, exit 2) and what it
prints and exits with for the judge's results (the runs are faked: no lab is started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinspect.cli import learn
from kinspect.errors import KinspectError
from kinspect.lessons.lesson_catalog import builtin
from kinspect.lessons.lesson_check import LessonCheck
from kinspect.lessons.lesson_values import Lesson
from tests.helpers import kinspect
from tests.helpers.errors import one_line_error

LESSONS = builtin()


@pytest.mark.parametrize(("args", "message"), [
    (("--only", "power-loss"), "--only goes with --check-all"),
    (("--check-all", "--only", "nope"), "--only: unknown lesson 'nope'"),
    (("--check-all", "--only", ","), "--only: unknown lesson ','"),
    (("--check-all", "2"), "--check_all takes no LESSON"),
    (("--check-all", "--list"), "not allowed with argument"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    result = kinspect("learn", *args, env={"KINSPECT_HOME": str(tmp_path)}, check=False)
    assert result.returncode == 2
    assert message in one_line_error(result)


def test_only_keeps_the_catalogue_order() -> None:
    chosen = learn.only_lessons(LESSONS, "kraft, power-loss")
    assert [lesson.name for lesson in chosen] == ["power-loss", "kraft"]
    with pytest.raises(KinspectError):
        learn.only_lessons(LESSONS, "power-loss,nope")


def judged(monkeypatch: pytest.MonkeyPatch, failed: dict[str, tuple[str, ...]]) -> None:
    def check(lesson: Lesson) -> LessonCheck:
        return LessonCheck(lesson.name, failed.get(lesson.name, ()))
    monkeypatch.setattr(learn, "check_lesson", check)


def test_all_hold(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    judged(monkeypatch, {})
    assert learn.check_all(LESSONS[:2]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "fire-and-forget: OK", "isolated-leader: OK", "2 of 2 lessons hold"]


def test_a_failed_claim_fails_the_check(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    judged(monkeypatch, {"power-loss": ("fix power-loss-flush-every-message: not rerun",)})
    chosen = learn.only_lessons(LESSONS, "power-loss,kraft")
    assert learn.check_all(chosen) == 1
    assert capsys.readouterr().out.splitlines() == [
        "power-loss: 1 failed", "  fix power-loss-flush-every-message: not rerun",
        "kraft: OK", "1 of 2 lessons hold"]


def test_a_run_that_broke_is_its_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str, mode: str | None) -> Path:
        raise KinspectError("no lab could be made")
    monkeypatch.setattr(learn, "_run", broken)
    lesson = learn.only_lessons(LESSONS, "power-loss")[0]
    assert learn.check_lesson(lesson) == LessonCheck(
        "power-loss", ("the run broke: no lab could be made",))
