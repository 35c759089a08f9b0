"""`kinspect learn --check-all`'s judge, on run dirs built from literal lines shaped like a
real run's (tests/lessons/data/sc-power: lines of a real power-loss-all-brokers run), with the
screen's own recogniser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from kinspect.lessons.lesson_catalog import builtin
from kinspect.lessons.lesson_check import (
    LessonCheck,
    Recogniser,
    judge,
    read_run,
    report_lines,
)
from kinspect.tui.lesson_app import EVENT_TRIGGERS, journal_happenings

DATA = Path(__file__).parent / "data" / "sc-power"
RECOGNISE = Recogniser(journal_happenings, EVENT_TRIGGERS)
POWER = next(lesson for lesson in builtin() if lesson.name == "power-loss")
FIX = "power-loss-flush-every-message"


def write_run(path: Path, row: dict[str, Any], faults: list[dict[str, Any]] | None = None,
              timeline: list[dict[str, Any]] | None = None) -> Path:
    path.mkdir(parents=True)
    (path / "scenario.json").write_text(json.dumps(row))
    for name, lines in (("faults.jsonl", faults), ("timeline.jsonl", timeline)):
        if lines is not None:
            (path / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def fault(ts: int, action: str, node: str) -> dict[str, Any]:
    return {"ts": ts, "action": action, "node": node, "groups": None, "detail": action,
            "lab_id": "cd023ad25b8f", "version": 2}


def event(ts: int, kind: str) -> dict[str, Any]:
    return {"ts": ts, "kind": kind, "partition": "test1-0", "broker": 1, "severity": "warn",
            "detail": kind}


LOST = {"scenario": "power-loss-all-brokers", "status": "ran", "acked": 40000,
        "acked_lost": 24349, "lost_outside_power_cuts": 0, "expectation_met": True}
FAULTS = [fault(1000, "power-off", "kafka1,kafka2,kafka3"),
          fault(4000, "power-on", "kafka1,kafka2,kafka3")]
TIMELINE = [event(500, "broker_gone"), event(5000, "isr_shrank"),
            event(5100, "leader_changed"), event(9000, "isr_expanded")]
FIXED = {"scenario": FIX, "status": "ran", "acked_lost": 0, "expectation_met": True,
         "expectation_failed": []}


def fix_run(tmp_path: Path, row: dict[str, Any] = FIXED) -> dict[str, Any]:
    return {FIX: read_run(write_run(tmp_path / "fix", row, FAULTS, TIMELINE), RECOGNISE)}


def test_a_run_that_does_what_the_lesson_says_holds(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path / "run", LOST, FAULTS, TIMELINE), RECOGNISE)
    assert judge(POWER, run, fix_run(tmp_path)) == LessonCheck("power-loss")


def test_the_real_runs_lines_hold(tmp_path: Path) -> None:
    """The journal and timeline of a real run (three power-off lines, one per broker, and
    the observer's clock), and its row."""
    run = read_run(DATA, RECOGNISE)
    assert run.missing == ()
    assert judge(POWER, run, fix_run(tmp_path)).ok


ISOLATED = next(lesson for lesson in builtin() if lesson.name == "isolated-leader")


def test_the_live_loss_the_load_judged_is_a_step_that_came(tmp_path: Path) -> None:
    """A real acks1-isolate-leader run (tests/lessons/data/sc-isolated, from --check-all on
    2026-12-08) and its fix's: the step 'live_lost' comes from the load's live_loss.jsonl,
    the first second it counted a doomed acknowledgement, as the screen's load panel shows
    it. Without it --check-all said the step never came in three lessons."""
    run = read_run(DATA.parent / "sc-isolated", RECOGNISE)
    fix = read_run(DATA.parent / "sc-isolated-fix", RECOGNISE)
    assert judge(ISOLATED, run, {"acksall-isolate-leader": fix}) == LessonCheck("isolated-leader")
    alone = tmp_path / "run"
    shutil.copytree(DATA.parent / "sc-isolated", alone)
    (alone / "live_loss.jsonl").unlink()
    assert judge(ISOLATED, read_run(alone, RECOGNISE),
                 {"acksall-isolate-leader": fix}).failed == (
        "step 5 (live_lost) never came in run (2 later steps not judged)",)


def test_a_fault_that_never_came_is_named_with_the_steps_left_unjudged(tmp_path: Path) -> None:
    faults = [fault(1000, "kill", "kafka1"), fault(4000, "start", "kafka1")]
    run = read_run(write_run(tmp_path / "run", LOST, faults, TIMELINE), RECOGNISE)
    assert judge(POWER, run, fix_run(tmp_path)).failed == (
        "step 2 (fault power-off) never came in run (4 later steps not judged)",)


def test_an_event_before_its_fault_does_not_count(tmp_path: Path) -> None:
    """The ISR shrinking before the power-on is not the shrink the step narrates."""
    timeline = [event(500, "isr_shrank"), event(600, "leader_changed")]
    run = read_run(write_run(tmp_path / "run", LOST, FAULTS, timeline), RECOGNISE)
    assert judge(POWER, run, fix_run(tmp_path)).failed == (
        "step 4 (isr_shrank) never came in run (2 later steps not judged)",)


def test_a_question_with_no_right_choice_on_the_row(tmp_path: Path) -> None:
    row = {**LOST, "lost_outside_power_cuts": None}
    run = read_run(write_run(tmp_path / "run", row, FAULTS, TIMELINE), RECOGNISE)
    assert judge(POWER, run, fix_run(tmp_path)).failed == (
        "question 2 (Were the lost messages all in writes the power cut dropped?): 0 choices "
        "right on lost_outside_power_cuts=None",)


def test_a_fix_that_did_not_hold_or_did_not_run(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path / "run", LOST, FAULTS, TIMELINE), RECOGNISE)
    broken = {**FIXED, "acked_lost": 12, "expectation_met": False,
              "expectation_failed": ["acked_lost == 0 (got 12)"]}
    assert judge(POWER, run, fix_run(tmp_path, broken)).failed == (
        f"fix {FIX}: its expectation failed (acked_lost == 0 (got 12))",)
    assert judge(POWER, run, {}).failed == (f"fix {FIX}: not rerun",)


def test_a_skipped_run_is_one_line_and_nothing_else_judged(tmp_path: Path) -> None:
    row = {"scenario": "power-loss-all-brokers", "status": "skipped",
           "reason": "no /dev/fuse"}
    run = read_run(write_run(tmp_path / "run", row), RECOGNISE)
    assert run.missing == ("faults.jsonl", "timeline.jsonl")
    assert judge(POWER, run, fix_run(tmp_path)).failed == (
        "power-loss-all-brokers: the run did not run (skipped: no /dev/fuse)",)


def test_a_run_dir_without_its_row(tmp_path: Path) -> None:
    shutil.copytree(DATA, tmp_path / "run")
    (tmp_path / "run" / "scenario.json").unlink()
    run = read_run(tmp_path / "run", RECOGNISE)
    failed = judge(POWER, run, fix_run(tmp_path)).failed
    assert failed == (f"power-loss-all-brokers: no scenario.json in {tmp_path / 'run'}",)


def test_torn_lines_are_skipped(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run", LOST, FAULTS, TIMELINE)
    with open(path / "timeline.jsonl", "a") as handle:
        handle.write('{"ts": 99\n[1, 2]\n{"ts": 9500, "kind": "a_later_kind"}\n')
    assert judge(POWER, read_run(path, RECOGNISE), fix_run(tmp_path)).ok


def test_the_report_a_line_per_lesson_and_the_claims_under_it() -> None:
    checks = [LessonCheck("fire-and-forget"),
              LessonCheck("power-loss", ("step 2 (fault power-off) never came in run",
                                         "fix x: not rerun"))]
    assert report_lines(checks) == [
        "fire-and-forget: OK", "power-loss: 2 failed",
        "  step 2 (fault power-off) never came in run", "  fix x: not rerun",
        "1 of 2 lessons hold"]
