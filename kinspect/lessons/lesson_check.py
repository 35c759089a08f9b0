"""`kinspect learn --check-all`'s judge: does a lesson still hold on the runs it teaches from?

A lesson's file is checked on load; whether its narration and questions fit what the lab
really does is only known from runs. Given a lesson and the run dirs of its scenario and of
its fix's rerun (scenario.json, faults.jsonl, timeline.jsonl), this proves each step's trigger
came in order, each question has exactly one right choice on the measured row, and each right
fix met its expectation. Steps are recognised by the live lesson's own code: the run's
happenings are fed to a `Flow` as the screen would feed them, through the screen's own
recogniser (`Recogniser`, handed in by the CLI: the TUI layer is above this one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from kinspect.lab.journal import JournalEntry
from kinspect.lessons.flow import Flow, Happening, RunResult
from kinspect.lessons.lesson_values import Lesson, Question, Step, Trigger
from kinspect.load.run_timeline import LIVE_LOSS_FILE
from kinspect.load.rundir import FAULTS_FILE, SCENARIO_FILE, TIMELINE_FILE
from kinspect.model import EventKind


@dataclass(frozen=True)
class Recogniser:
    """How the live screen turns what it saw into happenings: a journal entry (the lab's
    faults) and an observer's event kind. The TUI's own, so the judge cannot drift from it."""

    journal: Callable[[JournalEntry], list[Happening]]
    events: Mapping[EventKind, Trigger]


@dataclass(frozen=True)
class RunEvidence:
    """One run dir as the judge needs it: the result row and what happened, in time order
    (each inner tuple one instant: simultaneous, as one snapshot's diff)."""

    run_dir: Path
    row: Mapping[str, Any]
    happenings: tuple[tuple[Happening, ...], ...]
    missing: tuple[str, ...] = ()  # files the run dir lacks


@dataclass(frozen=True)
class LessonCheck:
    """One lesson judged: each failed claim in one line (none: the lesson holds)."""

    lesson: str
    failed: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failed


def _lines(path: Path) -> Iterator[Mapping[str, object]]:
    """The JSON objects of a .jsonl file; a torn or garbled line is skipped."""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(raw, dict):
            yield raw


def _event_happening(raw: Mapping[str, object], recognise: Recogniser) -> Happening | None:
    try:
        kind = EventKind(str(raw.get("kind")))
    except ValueError:  # a kind of a later version
        return None
    trigger = recognise.events.get(kind)
    if trigger is None:
        return None
    return Happening(trigger)


def _timed(run_dir: Path, recognise: Recogniser) -> list[tuple[int, Happening]]:
    """Every happening of the journal and the timeline with its time; the journal first at
    one instant (a fault comes before what it sets off)."""
    timed: list[tuple[int, Happening]] = []
    faults, timeline = run_dir / FAULTS_FILE, run_dir / TIMELINE_FILE
    if faults.exists():
        for raw in _lines(faults):
            entry = JournalEntry.from_json(raw)
            timed += [(entry.ts, h) for h in recognise.journal(entry)]
    if timeline.exists():
        for raw in _lines(timeline):
            happening, ts = _event_happening(raw, recognise), raw.get("ts")
            if happening is not None and isinstance(ts, int):
                timed.append((ts, happening))
    timed += _live_losses(run_dir)
    return sorted(timed, key=lambda pair: pair[0])  # stable: the journal's first


def _live_losses(run_dir: Path) -> list[tuple[int, Happening]]:
    """Each live judgement of the load that counts a doomed acknowledgement (the load's
    live_loss.jsonl, one line a second): the screen's load panel says live_lost at every poll
    while the count is above 0, so a step waiting for it after a later event still sees it.
    It is in neither the journal nor the timeline, and --check-all had never seen it come."""
    path = run_dir / LIVE_LOSS_FILE
    if not path.exists():
        return []
    seen = []
    for raw in _lines(path):
        doomed, ts = raw.get("doomed"), raw.get("ts")
        if isinstance(doomed, int) and doomed > 0 and isinstance(ts, int):
            seen.append((ts, Happening(Trigger.LIVE_LOST)))
    return seen
    for raw in _lines(path):
        doomed, ts = raw.get("doomed"), raw.get("ts")
        if isinstance(doomed, int) and doomed > 0 and isinstance(ts, int):
            return [(ts, Happening(Trigger.LIVE_LOST))]
    return []


def read_run(run_dir: Path, recognise: Recogniser) -> RunEvidence:
    """A run dir as evidence; a missing file is noted, not an error (the judge says so)."""
    names = (SCENARIO_FILE, FAULTS_FILE, TIMELINE_FILE)
    missing = tuple(name for name in names if not (run_dir / name).exists())
    row: Mapping[str, Any] = {}
    if SCENARIO_FILE not in missing:
        row = json.loads((run_dir / SCENARIO_FILE).read_text(encoding="utf-8"))
    instants = tuple(tuple(h for _, h in group)
                     for _, group in groupby(_timed(run_dir, recognise), key=lambda p: p[0]))
    return RunEvidence(run_dir, row, instants, missing)


def replayed(lesson: Lesson, run: RunEvidence) -> Flow:
    """The lesson's flow after the run, fed as the screen feeds it (stage mode: the
    narration stays put, so every step's moment is left to be found)."""
    flow = Flow(lesson, stage=True).started()
    for instant in run.happenings:
        flow = flow.saw_all(instant)
    return flow.finished(RunResult(lesson.scenario, row=run.row))


def _step_words(step: Step) -> str:
    if step.do is None:
        return step.on.value
    return f"{step.on.value} {step.do}"


def step_claims(lesson: Lesson, run: RunEvidence) -> list[str]:
    """The first step whose trigger did not come after the step before it (the steps after
    it cannot be judged: each waits for the one before, as the narration does)."""
    happened = replayed(lesson, run).happened()
    if all(happened):
        return []
    index = happened.index(False)
    later = len(lesson.steps) - index - 1
    tail = ""
    if later:
        tail = f" ({later} later steps not judged)"
    return [f"step {index + 1} ({_step_words(lesson.steps[index])}) never came in "
            f"{run.run_dir.name}{tail}"]


def _question_claim(index: int, question: Question, row: Mapping[str, Any]) -> str | None:
    right = [choice for choice in question.choices if choice.right(row)]
    if len(right) == 1:
        return None
    metrics = dict.fromkeys(c.when.metric for c in question.choices if c.when is not None)
    measured = ", ".join(f"{m}={row.get(m)}" for m in metrics)
    return (f"question {index + 1} ({question.ask.en}): {len(right)} choices right on "
            f"{measured}")


def question_claims(lesson: Lesson, row: Mapping[str, Any]) -> list[str]:
    """A line per question that has not exactly one right choice on the measured row."""
    claims = (_question_claim(i, q, row) for i, q in enumerate(lesson.questions))
    return [claim for claim in claims if claim is not None]


def _ran(name: str, run: RunEvidence) -> str | None:
    """Why the run cannot be judged (None: it ran)."""
    if SCENARIO_FILE in run.missing:
        return f"{name}: no {SCENARIO_FILE} in {run.run_dir}"
    status = run.row.get("status")
    if status != "ran":
        reason = run.row.get("reason") or "no reason given"
        return f"{name}: the run did not run ({status}: {reason})"
    return None


def fix_claims(fixes: Mapping[str, RunEvidence]) -> list[str]:
    """A line per right fix whose rerun did not meet its scenario's expectation."""
    failed = []
    for scenario, run in fixes.items():
        problem = _ran(f"fix {scenario}", run)
        if problem is None and run.row.get("expectation_met") is not True:
            told = "; ".join(map(str, run.row.get("expectation_failed") or ())) or "not met"
            problem = f"fix {scenario}: its expectation failed ({told})"
        if problem is not None:
            failed.append(problem)
    return failed


def right_fixes(lesson: Lesson) -> tuple[str, ...]:
    """The scenarios the lesson's right fixes rerun, in order."""
    if lesson.fix is None:
        return ()
    return tuple(c.scenario for c in lesson.fix.choices if c.scenario is not None)


def judge(lesson: Lesson, run: RunEvidence, fixes: Mapping[str, RunEvidence]) -> LessonCheck:
    """Every claim the lesson makes about its runs, proven or named in one line."""
    failed = fix_claims(fixes)
    failed += [f"fix {name}: not rerun" for name in right_fixes(lesson) if name not in fixes]
    problem = _ran(lesson.scenario, run)
    if problem is not None:
        return LessonCheck(lesson.name, (problem, *failed))
    claims = step_claims(lesson, run) + question_claims(lesson, run.row)
    return LessonCheck(lesson.name, (*claims, *failed))


def report_lines(checks: Sequence[LessonCheck]) -> list[str]:
    """What --check-all prints: a line per lesson, each failed claim indented under it, and
    the count."""
    lines = []
    for check in checks:
        if check.ok:
            lines.append(f"{check.lesson}: OK")
            continue
        lines.append(f"{check.lesson}: {len(check.failed)} failed")
        lines += [f"  {claim}" for claim in check.failed]
    held = sum(check.ok for check in checks)
    lines.append(f"{held} of {len(checks)} lessons hold")
    return lines
