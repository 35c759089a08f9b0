"""`kinspect learn` without a lab: the course listed with its marks, the facilitator's summary
from a progress file, checked lesson files, and every bad input one line with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.lessons.lesson_catalog import builtin
from tests.helpers import kinspect
from tests.helpers.errors import one_line_error

LESSONS = builtin()
ISOLATED = next(lesson for lesson in LESSONS if lesson.name == "isolated-leader")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run(home: Path, *args: str, check: bool = True, **env: str) -> Any:
    return kinspect("learn", *args, env={"KINSPECT_HOME": str(home), "LANG": "C.UTF-8",
                                         "LC_ALL": "", "LC_MESSAGES": "", **env}, check=check)


def write_progress(home: Path) -> Path:
    """A workshop half done, as the lesson screen writes it: lesson 1 done, lesson 2 current
    with its predictions judged, its run measured and its fix rerun."""
    lost, whose = ISOLATED.questions
    data = {
        "kind": "kinspect-lesson-progress", "version": 1, "current": "isolated-leader",
        "lessons": {
            "fire-and-forget": {"status": "done", "updated_at": "2026-11-25T10:00:00+00:00",
                                "predictions": [], "measured": {"acked_lost": 198}},
            "isolated-leader": {
                "status": "current", "updated_at": "2026-11-25T10:30:00+00:00",
                "predictions": [
                    {"question": lost.ask.en, "chosen": lost.choices[1].text.en, "right": False},
                    {"question": whose.ask.en, "chosen": whose.choices[0].text.en,
                     "right": True}],
                "measured": {"acked_lost": 58902, "lost_blamed_on_target": 1.0},
                "run_dir": str(home / "runs" / "one"),
                "fix_scenario": "acksall-isolate-leader", "fix_held": True,
                "fix_run_dir": str(home / "runs" / "two")}}}
    path = home / "lessons" / "progress.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    return path


def test_list_a_new_learner(home: Path) -> None:
    lines = run(home, "--list").stdout.splitlines()
    assert len(lines) == len(LESSONS)
    assert "fire-and-forget" in lines[0] and lines[0].endswith("(next)")
    assert "acks=0: fire and forget" in lines[0]
    assert "[kraft]" in lines[-1]


def test_list_marks_done_current_and_next(home: Path) -> None:
    write_progress(home)
    lines = run(home, "--list").stdout.splitlines()
    assert lines[0].startswith(" ✓  1  fire-and-forget")
    assert lines[1].startswith(" ▶  2  isolated-leader") and "(next)" not in lines[1]
    assert lines[2].endswith("(next)")
    rows = json.loads(run(home, "--list", "--json").stdout)
    assert [r["status"] for r in rows[:3]] == ["done", "current", "new"]
    assert [r["next"] for r in rows[:3]] == [False, False, True]


def test_list_speaks_the_locale(home: Path) -> None:
    out = run(home, "--list", LANG="zh_CN.UTF-8").stdout
    assert "acks=0\uff1a发了就不管" in out  # a full-width colon
    assert "acks=0: fire and forget" in run(home, "--list", "--lang", "en",
                                            LANG="zh_CN.UTF-8").stdout


def test_summary_json_for_the_facilitator(home: Path) -> None:
    write_progress(home)
    data = json.loads(run(home, "--summary", "--json").stdout)
    assert data["lessons"] == len(LESSONS) and data["done"] == 1
    assert data["current"] == "isolated-leader"
    assert data["predictions"] == {"made": 2, "right": 1, "wrong": 1, "not_judged": 0}
    assert data["fixes"] == {"tried": 1, "held": 1}
    entry = data["progress"][1]
    assert entry["name"] == "isolated-leader" and entry["number"] == 2
    assert entry["scenario"] == "acks1-isolate-leader"
    assert entry["measured"] == {"acked_lost": 58902, "lost_blamed_on_target": 1.0}
    assert entry["predictions"][0]["right"] is False
    assert entry["fix"]["scenario"] == "acksall-isolate-leader" and entry["fix"]["held"] is True


def test_summary_text(home: Path) -> None:
    write_progress(home)
    out = run(home, "--summary").stdout
    assert out.startswith(f"lessons done: 1 of {len(LESSONS)} · predictions right: 1 of 2 · "
                          "fixes held: 1 of 1")
    assert "measured: acked_lost 58,902" in out
    assert "fix: acksall-isolate-leader (held)" in out


def test_check_a_builtin_lesson_file(home: Path) -> None:
    path = ISOLATED.path
    assert path is not None
    out = run(home, "--check", str(path)).stdout
    assert "OK (lesson isolated-leader: scenario acks1-isolate-leader, fix " \
           "acksall-isolate-leader; 2 questions, 7 steps)" in out


def test_forget_asks_first(home: Path) -> None:
    path = write_progress(home)
    line = one_line_error(run(home, "--forget", check=False))
    assert "--yes" in line and path.exists()
    assert "forgot all lesson progress" in run(home, "--forget", "--yes").stdout
    assert not path.exists()


@pytest.mark.parametrize(("args", "says"), [
    (("--lang", "fr"), "argument --lang: invalid choice: 'fr'"),
    (("--list", "--stage"), "--list takes no --stage"),
    (("--summary", "3"), "--summary takes no LESSON"),
    (("--json",), "--json goes with --list or --summary"),
    (("--yes",), "--yes goes with --forget"),
    (("--list", "--summary"), "not allowed with argument"),
    (("nope",), "unknown lesson 'nope' (see: kinspect learn --list)"),
    (("99",), f"lesson number 99 is not 1..{len(LESSONS)}"),
    ((), "no lab is running: start one with kinspect lab up"),
    (("2",), "no lab is running: start one with kinspect lab up"),
    (("--stage",), "no lab is running"),
    (("--replay",), "no recording of lesson fire-and-forget yet"),
    (("--file", "/nonexistent/lesson.toml"), "cannot read /nonexistent/lesson.toml"),
])
def test_bad_input_is_one_line(home: Path, args: tuple[str, ...], says: str) -> None:
    line = one_line_error(run(home, *args, check=False))
    assert says in line, line
    assert not (home / "lessons").exists()  # nothing written


def test_a_corrupt_progress_file_is_one_line(home: Path) -> None:
    path = home / "lessons" / "progress.json"
    path.parent.mkdir(parents=True)
    path.write_text("{ half a file")
    for args in (("--list",), ("--summary", "--json"), ()):
        line = one_line_error(run(home, *args, check=False))
        assert str(path) in line and "kinspect learn --forget" in line
    assert path.read_text() == "{ half a file"
