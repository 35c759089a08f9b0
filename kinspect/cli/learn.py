"""`kinspect learn`: the guided workshop. Each lesson runs one catalogue scenario on the live
screen: predict, watch, explain, fix.

Opening a lesson talks to the running lab (like `kinspect ui`); --list, --summary, --check and
--forget only read files, so they are marked as the command's action and run on this host
(placement.py) whatever the lab is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.lessons.lang import LANGS, pick_lang
from kinspect.lessons.lesson_catalog import builtin, read
from kinspect.lessons.lesson_check import LessonCheck, Recogniser
from kinspect.lessons.lesson_progress import (
    Progress,
    forget_progress,
    last_good_run,
    load_progress,
    progress_path,
)
from kinspect.lessons.lesson_values import Lang, Lesson, LessonRecord, Status
from kinspect.target import ClusterTarget

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

OFFLINE = ("list", "summary", "check", "forget")  # placement.py: these stay on this host
# --check-all makes labs (as scenario run does): its learn_command is "check_all"
MARKS = {Status.DONE: "✓", Status.CURRENT: "▶", Status.SKIPPED: "-", Status.NEW: " "}


class _Offline(argparse.Action):
    """An option that is the whole command and needs no lab: noted as the command's action
    (`learn_command`), which placement.py keeps on this host."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if self.nargs == 0:  # a flag
            values = True
        setattr(namespace, self.dest, values)
        namespace.learn_command = self.dest


def register(commands: Any) -> None:
    learn = commands.add_parser(
        "learn", help="guided lessons on the live screen: predict, watch, explain, fix",
        description="Each lesson runs one scenario of the catalogue on the running lab: a "
                    "story, your predictions, the run narrated on the screen, the reveal, a "
                    "fix rerun, what you learned. Progress is kept in "
                    "$KINSPECT_HOME/lessons/progress.json.")
    learn.add_argument("lesson", nargs="?", metavar="LESSON",
                       help="a lesson's name or number (see --list); default: where you left off")
    learn.add_argument("--file", type=Path, metavar="F", help="a facilitator's lesson file")
    learn.add_argument("--lang", choices=LANGS,
                       help="en or zh (default: from LC_ALL, LC_MESSAGES or LANG)")
    learn.add_argument("--stage", action="store_true",
                       help="stage mode: the narration moves on only on the presenter's key")
    learn.add_argument("--replay", action="store_true",
                       help="no lab needed: play the lesson's last good recorded run")
    only = learn.add_mutually_exclusive_group()
    only.add_argument("--list", action=_Offline, nargs=0, default=False,
                      help="the lessons, with ✓ done, ▶ current and the next")
    only.add_argument("--summary", action=_Offline, nargs=0, default=False,
                      help="for the facilitator: lessons done, predictions and whether they "
                           "were right, what was measured, each fix and whether it held")
    only.add_argument("--check", action=_Offline, type=Path, metavar="F",
                      help="check a lesson file: OK, or the one line that is wrong")
    only.add_argument("--forget", action=_Offline, nargs=0, default=False,
                      help="clear all progress (asks first unless --yes)")
    only.add_argument("--check-all", action=_Offline, nargs=0, default=False,
                      help="for the course's authors: run every lesson's scenario and its "
                           "fix's on a fresh lab (one at a time, as kinspect scenario run "
                           "does) and check each step came, each question has one right "
                           "answer, each fix held; a line per lesson, exit 1 if any fails")
    learn.add_argument("--only", metavar="NAME,...",
                       help="--check-all: only these lessons (names, comma-separated)")
    learn.add_argument("--json", action="store_true", help="--list or --summary as JSON")
    learn.add_argument("--yes", action="store_true", help="--forget without asking")
    learn.set_defaults(handler=cmd_learn, learn_command=None, long_lived=True)


def cmd_learn(args: argparse.Namespace) -> int:
    action = args.learn_command
    _check_combination(args, action)
    if args.only is not None and action != "check_all":
        raise KinspectError("--only goes with --check-all")
    lang = pick_lang(args.lang, os.environ)
    if action == "check":
        return validate_file(args.check)
    if action == "forget":
        return forget(args.yes)
    lessons = builtin()
    if action == "check_all":
        return check_all(only_lessons(lessons, args.only))
    if action == "list":
        return print_list(lessons, load_progress(), lang, args.json)
    if action == "summary":
        return print_summary(lessons, load_progress(), lang, args.json)
    return open_lessons(args, lessons, lang)


def _check_combination(args: argparse.Namespace, action: str | None) -> None:
    """Options that mean nothing together are refused, not silently ignored."""
    if action is not None:
        given = [name for name, value in (("LESSON", args.lesson), ("--file", args.file),
                                          ("--stage", args.stage), ("--replay", args.replay))
                 if value]
        if given:
            raise KinspectError(f"--{action} takes no {given[0]} (it opens no lesson)")
    if args.json and action not in ("list", "summary"):
        raise KinspectError("--json goes with --list or --summary")
    if args.yes and action != "forget":
        raise KinspectError("--yes goes with --forget")
    if args.lesson and args.file:
        raise KinspectError("give a LESSON or --file F, not both")


def validate_file(path: Path) -> int:
    lesson = read(path)
    fix = ""
    if lesson.fix:
        fix = f", fix {', '.join(c.scenario for c in lesson.fix.choices if c.scenario)}"
    print(f"{path}: OK (lesson {lesson.name}: scenario {lesson.scenario}{fix}; "
          f"{len(lesson.questions)} questions, {len(lesson.steps)} steps)")
    return 0


def only_lessons(lessons: Sequence[Lesson], only: str | None) -> list[Lesson]:
    """The lessons --check-all runs, in catalogue order; an unknown name is bad input."""
    if only is None:
        return list(lessons)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {lesson.name for lesson in lessons}
    unknown = [name for name in wanted if name not in known]
    if unknown or not wanted:
        raise KinspectError(f"--only: unknown lesson {(unknown or [only])[0]!r} "
                            "(see: kinspect learn --list)")
    return [lesson for lesson in lessons if lesson.name in wanted]


def check_all(lessons: Sequence[Lesson]) -> int:
    """Each lesson's run and its fixes' reruns, judged; progress on stderr, a line per
    lesson on stdout."""
    from kinspect.lessons.lesson_check import report_lines

    checks = [check_lesson(lesson) for lesson in lessons]
    for line in report_lines(checks):
        print(line)
    if all(check.ok for check in checks):
        return 0
    return 1


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _run(name: str, mode: str | None) -> Path:
    """One catalogue scenario run as `kinspect scenario run` runs it; its run dir."""
    from kinspect.cli.lab import stop_loads_on_lab
    from kinspect.scenarios.catalog import find
    from kinspect.scenarios.platform import Platform
    from kinspect.scenarios.scenario_run import default_run_dir, run_scenario

    run_dir = default_run_dir(name)
    _say(f"{name}: run dir {run_dir}")
    stop_loads_on_lab()  # the scenario resets the lab
    run_scenario(find(name), run_dir, _say, platform=Platform.of(mode or "zookeeper"))
    return run_dir


def check_lesson(lesson: Lesson) -> LessonCheck:
    """Run the lesson's scenario and each right fix's, then judge; a run that broke is its
    failed claim."""
    from kinspect.lessons.lesson_check import judge, read_run, right_fixes
    from kinspect.tui.lesson_app import EVENT_TRIGGERS, journal_happenings

    recognise = Recogniser(journal_happenings, EVENT_TRIGGERS)
    _say(f"lesson {lesson.name}")
    try:
        run = read_run(_run(lesson.scenario, lesson.mode), recognise)
        fixes = {name: read_run(_run(name, lesson.mode), recognise)
                 for name in right_fixes(lesson)}
    except KinspectError as exc:
        return LessonCheck(lesson.name, (f"the run broke: {exc}",))
    return judge(lesson, run, fixes)


def forget(yes: bool) -> int:
    path = progress_path()
    if not path.exists():
        print(f"no lesson progress to forget ({path})")
        return 0
    if not yes:
        if not sys.stdin.isatty():
            raise KinspectError(f"--forget asks before clearing {path}; add --yes to clear it "
                                "without asking")
        if input(f"forget all lesson progress in {path}? [y/N] ").strip().lower() not in (
                "y", "yes"):
            print("kept")
            return 0
    forget_progress(path)
    print(f"forgot all lesson progress ({path})")
    return 0


# ----- opening a lesson --------------------------------------------------------------------

def open_lessons(args: argparse.Namespace, lessons: list[Lesson], lang: Lang) -> int:
    """The lesson TUI on the running lab (or, with --replay, on a recording)."""
    path = _lesson_file(args)
    if path is None:
        first = pick_lesson(args.lesson, lessons, load_progress())
    else:
        lessons = [read(path)]
        first = lessons[0]
    if args.replay and last_good_run(first.name) is None:
        raise KinspectError(f"no recording of lesson {first.name} yet: run it once on a lab "
                            f"(kinspect learn {first.name}), then --replay plays it")
    cluster = lab_cluster(args.replay)
    from kinspect.tui.lesson_app import run_learn

    return run_learn(cluster, lessons, first.name, lang, args.stage, args.replay)


def _lesson_file(args: argparse.Namespace) -> Path | None:
    """The lesson file asked for: --file, or a LESSON that names a .toml file."""
    file: Path | None = args.file
    if file is not None:
        return file
    if args.lesson and args.lesson.endswith(".toml"):
        return Path(args.lesson)
    return None


def pick_lesson(wanted: str | None, lessons: Sequence[Lesson], progress: Progress) -> Lesson:
    """LESSON as typed (a name, or its number in --list), else where the learner left off,
    else the first."""
    if not lessons:
        raise KinspectError("no lessons found")
    if not wanted:
        found = progress.next_lesson(lessons)
        if found is None:
            return lessons[0]
        return found
    if wanted.isdigit():
        number = int(wanted)
        if not 1 <= number <= len(lessons):
            raise KinspectError(f"lesson number {number} is not 1..{len(lessons)} "
                                "(see: kinspect learn --list)")
        return lessons[number - 1]
    for lesson in lessons:
        if lesson.name == wanted:
            return lesson
    raise KinspectError(f"unknown lesson {wanted!r} (see: kinspect learn --list)")


def lab_cluster(replay: bool) -> ClusterTarget | None:
    """The running lab as a cluster target; None for --replay without a lab."""
    from kinspect.cli.common import resolve_cluster
    from kinspect.lab import running_lab

    if running_lab() is None:
        if replay:
            return None
        raise KinspectError("no lab is running: start one with kinspect lab up (or play a "
                            "lesson's last recorded run: kinspect learn --replay)")
    return resolve_cluster(argparse.Namespace())


# ----- --list and --summary ----------------------------------------------------------------

def _next_name(lessons: Sequence[Lesson], progress: Progress) -> str | None:
    """The lesson after the current one not finished yet (no current: the one to open)."""
    names = [lesson.name for lesson in lessons]
    if progress.current not in names:
        found = progress.next_lesson(lessons)
        if found is None:
            return None
        return found.name
    after = names[names.index(progress.current) + 1:]
    for name in after:
        if progress.record(name).status not in (Status.DONE, Status.SKIPPED):
            return name
    return None


@dataclass(frozen=True)
class ListRow:
    """One lesson of --list: its place, words, status, and whether it is current or next."""

    number: int
    lesson: Lesson
    title: str
    status: Status
    current: bool
    next: bool

    def to_json(self) -> JsonObject:
        return {"number": self.number, "name": self.lesson.name, "title": self.title,
                "scenario": self.lesson.scenario, "mode": self.lesson.mode,
                "status": self.status.value, "current": self.current, "next": self.next}


def list_rows(lessons: Sequence[Lesson], progress: Progress, lang: Lang) -> list[ListRow]:
    nxt = _next_name(lessons, progress)
    return [ListRow(i, lesson, lesson.title(lang), progress.record(lesson.name).status,
                    lesson.name == progress.current, lesson.name == nxt)
            for i, lesson in enumerate(lessons, start=1)]


def print_list(lessons: Sequence[Lesson], progress: Progress, lang: Lang, as_json: bool) -> int:
    rows = list_rows(lessons, progress, lang)
    if as_json:
        print(json.dumps([row.to_json() for row in rows], indent=2, ensure_ascii=False))
        return 0
    width = max(len(row.lesson.name) for row in rows)
    for row in rows:
        mark = MARKS[row.status]
        if row.current:
            mark = "▶"
        mode = ""
        if row.lesson.mode:
            mode = f" [{row.lesson.mode}]"
        tail = ""
        if row.next:
            tail = "  (next)"
        print(f" {mark} {row.number:>2}  {row.lesson.name:<{width}}  {row.title}{mode}{tail}")
    return 0


@dataclass(frozen=True)
class SummaryEntry:
    """One lesson of the summary: its place and words (None: a record of a lesson no longer in
    the course) and its record."""

    number: int | None
    title: str | None
    scenario: str | None
    record: LessonRecord

    def to_json(self) -> JsonObject:
        """As --summary --json writes it."""
        record = self.record
        return {"number": self.number, "name": record.name, "title": self.title,
                "scenario": self.scenario, "status": record.status.value,
                "updated_at": record.updated_at,
                "predictions": [{"question": p.question, "chosen": p.chosen, "right": p.right}
                                for p in record.predictions],
                "measured": record.measured, "run_dir": record.run_dir,
                "fix": _fix_summary(record)}


def _record_summary(number: int | None, lesson: Lesson | None, record: LessonRecord,
                    lang: Lang) -> SummaryEntry:
    if lesson is None:  # a record of a lesson no longer in the course
        return SummaryEntry(number, None, None, record)
    return SummaryEntry(number, lesson.title(lang), lesson.scenario, record)


def _fix_summary(record: LessonRecord) -> JsonObject | None:
    if record.fix_scenario is None:
        return None
    return {"scenario": record.fix_scenario, "held": record.fix_held,
            "run_dir": record.fix_run_dir}


def _entries(lessons: Sequence[Lesson], progress: Progress, lang: Lang) -> list[SummaryEntry]:
    """Each lesson of the course in order, then the records of lessons no longer in it."""
    known = {lesson.name for lesson in lessons}
    entries = [_record_summary(i, lesson, progress.record(lesson.name), lang)
               for i, lesson in enumerate(lessons, start=1)]
    entries += [_record_summary(None, None, record, lang)
                for name, record in sorted(progress.records.items()) if name not in known]
    return entries


def summary(lessons: Sequence[Lesson], progress: Progress, lang: Lang) -> JsonObject:
    """What a facilitator wants after a workshop, as one JSON object."""
    entries = _entries(lessons, progress, lang)
    return {
        "lessons": len(lessons), "done": _done(entries),
        "current": progress.current, "predictions": _prediction_counts(entries),
        "fixes": _fix_counts(entries), "progress": [e.to_json() for e in entries]}


def _done(entries: list[SummaryEntry]) -> int:
    return sum(e.record.status == Status.DONE for e in entries)


def _prediction_counts(entries: list[SummaryEntry]) -> dict[str, int]:
    rights = [p.right for e in entries for p in e.record.predictions]
    return {"made": len(rights), "right": sum(r is True for r in rights),
            "wrong": sum(r is False for r in rights), "not_judged": sum(r is None for r in rights)}


def _fix_counts(entries: list[SummaryEntry]) -> dict[str, int]:
    fixes = [e.record for e in entries if e.record.fix_scenario is not None]
    return {"tried": len(fixes), "held": sum(f.fix_held is True for f in fixes)}


def print_summary(lessons: Sequence[Lesson], progress: Progress, lang: Lang,
                  as_json: bool) -> int:
    if as_json:
        print(json.dumps(summary(lessons, progress, lang), indent=2, ensure_ascii=False))
        return 0
    entries = _entries(lessons, progress, lang)
    p, f = _prediction_counts(entries), _fix_counts(entries)
    print(f"lessons done: {_done(entries)} of {len(lessons)} · predictions right: "
          f"{p['right']} of {p['made']} · fixes held: {f['held']} of {f['tried']}")
    for entry in entries:
        if entry.record.status == Status.NEW and not entry.record.predictions:
            continue
        _print_entry(entry)
    return 0


VERDICTS = {True: "right", False: "wrong", None: "not run yet"}  # a prediction's `right`
HELD = {True: "held", False: "did not hold", None: "?"}  # a fix's `held`


def _print_entry(entry: SummaryEntry) -> None:
    """One lesson of the summary: its line, each prediction, what was measured, the fix."""
    record = entry.record
    number: int | str = "-"  # a lesson no longer in the course
    if entry.number is not None:
        number = entry.number
    title = entry.title or ""
    print(f" {MARKS[record.status]} {number:>2}  {record.name}  {title}")
    for pred in record.predictions:
        print(f"      {pred.question} → {pred.chosen} ({VERDICTS[pred.right]})")
    if record.measured:
        print("      measured: " + ", ".join(_measured(name, value)
                                             for name, value in record.measured.items()))
    if record.fix_scenario is not None:
        print(f"      fix: {record.fix_scenario} ({HELD[record.fix_held]})")


def _measured(name: str, value: object) -> str:
    if isinstance(value, int):
        return f"{name} {value:,}"
    return f"{name} {value}"
