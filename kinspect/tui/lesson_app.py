"""`kinspect learn`: the live screen with a lesson beside it.

The lesson's state is a `Flow` (lessons/flow.py); this app hands it what the screen saw (the
events drawn, the lab's journal, the live loss) and the keys, runs the lesson's scenario in a
worker like the `e` key does, and renders the panel. On stage (`--stage`) the presenter
advances every step, and B plays the last good recording of the lesson in place of the live
lab, on the same screen, through the replay's feed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.binding import Binding
from textual.events import Resize

from kinspect.errors import KinspectError, error_line
from kinspect.lab.faults import FaultKind
from kinspect.lab.journal import JournalEntry
from kinspect.lab.state import LabState
from kinspect.lessons import words as w
from kinspect.lessons.flow import Flow, Happening, Phase, RunResult
from kinspect.lessons.lesson_progress import (
    Progress,
    last_good_run,
    load_progress,
    save_progress,
)
from kinspect.lessons.lesson_values import Lang, Lesson, Panel, Prediction, Status, Trigger
from kinspect.load.load_process import LoadStatus
from kinspect.load.rundir import POSTMORTEM_DIR, SCENARIO_FILE
from kinspect.model import Event, EventKind
from kinspect.postmortem.story.values import Report
from kinspect.sources.playback import Recording
from kinspect.target import ClusterTarget, lab_target
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import Console, LabConsole, ReadOnlyConsole
from kinspect.tui.feed import Feed
from kinspect.tui.lesson_panel import LessonPanel, PanelContext
from kinspect.tui.messages import LessonRunEnded, LoadStarted, ReplayStatus, Said, TaskStep
from kinspect.tui.report_screen import ReportScreen

# The events of the model a step can wait for (a fenced KRaft broker is a broker gone).
EVENT_TRIGGERS: dict[EventKind, Trigger] = {
    EventKind.LEADER_CHANGED: Trigger.LEADER_CHANGED,
    EventKind.ISR_SHRANK: Trigger.ISR_SHRANK,
    EventKind.ISR_EXPANDED: Trigger.ISR_EXPANDED,
    EventKind.CONTROLLER_CHANGED: Trigger.CONTROLLER_CHANGED,
    EventKind.VIEWS_DISAGREE_STARTED: Trigger.VIEWS_DISAGREE,
    EventKind.BROKER_GONE: Trigger.BROKER_GONE,
    EventKind.BROKER_FENCED: Trigger.BROKER_GONE,
}
POINTED = "pointed"
NARROW = 120  # columns under which the warnings panel gives way to the lesson
READ_ONLY = "a lesson's recording: it shows what was recorded and acts on nothing"


class LessonApp(KinspectApp):
    """The live screen, a lesson panel beside it, and the lesson's keys."""

    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *KinspectApp.BINDINGS,
        Binding("space", "lesson_go_on", "go on", priority=True),
        Binding("T", "lesson_hint", "hint"),
        Binding("R", "lesson_restart", "restart lesson", show=False),
        Binding("N", "lesson_skip", "next lesson", show=False),
        Binding("B", "lesson_backup", "play the recording", show=False),
    ]

    def __init__(self, feed: Feed, console: Console, lessons: Sequence[Lesson], index: int,
                 lang: Lang, stage: bool, backup: Backup | None = None,
                 answers: Sequence[int] = (), **kwargs: Any) -> None:
        super().__init__(feed, console, **kwargs)
        self.lessons, self.index, self.lang = list(lessons), index, lang
        self.flow = Flow(self.lessons[index], stage)
        for choice in answers:  # predictions made before the lab was remade for this lesson
            self.flow = self.flow.answer(choice)
        self.backup = backup  # a recorded run to play instead of the live lab
        self.run_progress = ""
        self.lesson_report: tuple[Report, Path] | None = None
        # (mode, lesson, answers): remake the lab in that mode, reopen there
        self.reopen: tuple[str, int, tuple[int, ...]] | None = None
        self._titles: dict[str, str] = {}  # each panel's own border title, to point and unpoint

    # ----- the panel -------------------------------------------------------------------

    def on_mount(self) -> None:
        panel = LessonPanel(id="lesson")
        if self.flow.stage:
            panel.add_class("stage")
        self.main.mount(panel)
        self.call_after_refresh(self._show_lesson)

    def on_resize(self, event: Resize) -> None:
        """Below 120 columns the lesson takes the warnings' place (W still shows them)."""
        if self.main.query("#side"):
            self.main.query_one("#side").display = event.size.width >= NARROW

    def _panel_context(self) -> PanelContext:
        nxt = None
        if self.index + 1 < len(self.lessons):
            nxt = self.lessons[self.index + 1].title(self.lang)
        return PanelContext(self.lang, self.index + 1, len(self.lessons), self.run_progress,
                            nxt, self._backup_when(), self._needs_mode())

    def _backup_when(self) -> str | None:
        return self.backup.made if self.backup is not None else None

    def _needs_mode(self) -> str | None:
        """The mode this lesson needs when the lab runs the other (a recording needs none)."""
        want = self.flow.lesson.mode
        if want is None or self.backup is not None or self.lab is None:
            return None
        if self.lab.mode == want:
            return None
        return want

    def _show_lesson(self) -> None:
        if not self.screen_stack or not self.main.query("#lesson"):
            return
        self.main.query_one(LessonPanel).show(self.flow, self._panel_context())
        pointed = None
        if self.flow.phase is Phase.RUN and self.flow.step:
            pointed = self.flow.step.point
        self._point(pointed)

    def _point(self, panel: Panel | None) -> None:
        """The part of the screen the step is about: a bright double border, and its title
        says so (the captured screen shows it too)."""
        for name in Panel:
            found = self.main.query(f"#{name.value}")
            if not found:
                continue
            widget = found.first()
            self._titles.setdefault(name.value, str(widget.border_title or ""))
            pointed = name is panel
            widget.set_class(pointed, POINTED)
            widget.border_title = _pointed_title(self._titles[name.value], pointed)

    def _moved(self, flow: Flow) -> None:
        self.flow = flow
        self._show_lesson()
        self._hold_recording()

    def _hold_recording(self) -> None:
        """A recording (unlike a live cluster) waits for the narration: held at a pause, and on
        stage while the next step has happened but the presenter has not shown it yet."""
        from kinspect.tui.replay_feed import ReplayFeed

        flow = self.flow
        if not isinstance(self.feed, ReplayFeed) or flow.phase is not Phase.RUN:
            return
        nxt = flow.shown + 1
        owed = flow.stage and nxt < len(flow.lesson.steps) and flow.waiting_for is None
        self.feed.hold(flow.held or owed)

    # ----- what the screen saw -----------------------------------------------------------

    def saw_events(self, events: Sequence[Event]) -> None:
        seen = [Happening(EVENT_TRIGGERS[e.kind]) for e in events if e.kind in EVENT_TRIGGERS]
        if seen:
            self._moved(self.flow.saw_all(seen))

    def saw_lab(self, faults: Sequence[JournalEntry], load: LoadStatus | None) -> None:
        seen = [happening for entry in faults for happening in journal_happenings(entry)]
        if load is not None and load.live is not None and load.live.doomed_total > 0:
            seen.append(Happening(Trigger.LIVE_LOST))
        if seen:
            self._moved(self.flow.saw_all(seen))

    def progressed(self, message: TaskStep) -> None:
        if message.title.startswith("lesson"):
            self.run_progress = message.line
            self._show_lesson()

    # ----- keys --------------------------------------------------------------------------

    def action_select_broker(self, broker_id: int) -> None:
        """Digits answer the question or pick the fix while one is asked; else they select."""
        flow = self.flow
        if flow.question is not None:
            self._moved(flow.answer(broker_id - 1))
            if self.flow.phase is Phase.READY:
                self.keep_progress(with_predictions(self.flow))
            return
        if flow.phase is Phase.FIX:
            self._moved(flow.choose_fix(broker_id - 1))
            return
        super().action_select_broker(broker_id)

    def action_lesson_go_on(self) -> None:
        flow = self.flow
        if flow.phase is Phase.READY:
            self._start_run()
        elif flow.phase is Phase.FIX and flow.chosen_fix and flow.chosen_fix.scenario:
            self._moved(flow.fix_started())
            self.run_lesson(flow.chosen_fix.scenario, fix=True)
        elif flow.phase is Phase.SUMMARY:
            self._next_lesson()
        else:
            self._moved(flow.go_on())
            if self.flow.phase is Phase.SUMMARY and self.backup is None:
                name = flow.lesson.name
                self.keep_progress(lambda p: p.with_status(name, Status.DONE))

    def _start_run(self) -> None:
        mode = self._needs_mode()
        if mode is not None:
            self.reopen = (mode, self.index, self.flow.answers)
            self.exit()
            return
        if self.backup is not None:
            self._play_backup(self.backup)
            return
        if self._refused():
            return
        self._moved(self.flow.started())
        self.run_lesson(self.flow.lesson.scenario, fix=False)

    def action_lesson_hint(self) -> None:
        if self.flow.hints_shown >= len(self.flow.lesson.hints):
            self.notify(w.NO_HINT(self.lang), title=w.HINT(self.lang))
        self._moved(self.flow.hint())

    def action_lesson_restart(self) -> None:
        self.lesson_report = None
        self._moved(self.flow.restart())

    def action_lesson_skip(self) -> None:
        name = self.flow.lesson.name  # read now: the worker runs after the next lesson opens
        self.keep_progress(lambda p: p.with_status(name, Status.SKIPPED))
        self._next_lesson()

    def _next_lesson(self) -> None:
        if self.index + 1 >= len(self.lessons):
            self.notify("that was the last lesson", title="lessons")
            return
        self.index += 1
        self.lesson_report, self.run_progress = None, ""
        self._moved(Flow(self.lessons[self.index], self.flow.stage))
        name = self.flow.lesson.name
        self.keep_progress(lambda p: p.with_status(name, Status.CURRENT))

    def action_postmortem(self) -> None:
        """m after a lesson's run: its report (the scenario ran the post-mortem already)."""
        if self.lesson_report is not None:
            report, out = self.lesson_report
            self.push_screen(ReportScreen(report, out))
            return
        super().action_postmortem()

    # ----- the run -----------------------------------------------------------------------

    @work(thread=True, group="scenario", exclusive=True, exit_on_error=False)
    def run_lesson(self, scenario: str, fix: bool) -> None:
        """The scenario in its own process, followed; its end posted as the lesson's result."""
        from kinspect.scenarios.scenario_process import follow

        title = "lesson: fix" if fix else "lesson"
        mode, kafka = self.flow.lesson.mode, None
        if self.lab is not None:
            mode = mode or self.lab.mode
            # the lab's release too, when the lesson keeps the lab's mode (a 4.x lab stays 4.x)
            if self.lab.mode == mode:
                kafka = self.lab.kafka_version
        try:
            process = self.lab_console.start_scenario(scenario, mode, kafka)
            self.post_message(LoadStarted(process.run_dir))  # the load panel follows its load
            outcome = follow(process, self._progress(title))
        except (KinspectError, OSError) as exc:
            self.post_message(LessonRunEnded(RunResult(scenario, error_line(exc)), None, None))
            return
        finally:
            self.post_message(TaskStep(title, "", done=True))
        report = outcome.report
        result = RunResult(scenario, outcome.failure, outcome.row or {}, _story(report),
                           str(process.run_dir), outcome.held)
        self.post_message(LessonRunEnded(result, report, outcome.report_dir))

    @on(LessonRunEnded)
    def lesson_run_ended(self, message: LessonRunEnded) -> None:
        if message.report is not None and message.report_dir is not None:
            self.lesson_report = (message.report, message.report_dir)
        fix = self.flow.phase is Phase.FIX_RUN
        self._moved(self.flow.finished(message.result))
        result = message.result
        if self.backup is not None:
            return  # a recording teaches; it is not progress
        lesson = self.flow.lesson  # read now: the worker may run after the next lesson opens
        if fix:
            self.keep_progress(lambda p: p.with_fix(lesson.name, result.scenario,
                                                    result.held and result.failure is None,
                                                    _path(result.run_dir)))
        elif result.failure is None:
            self.keep_progress(lambda p: p.with_run(lesson.name, result.row,
                                                    _path(result.run_dir), lesson))

    # ----- stage mode's safety net -------------------------------------------------------

    def action_lesson_backup(self) -> None:
        """B: the last good recording of this lesson, in place of the live lab."""
        self.find_backup(self.flow.lesson.name)

    @work(thread=True, group="backup", exclusive=True, exit_on_error=False)
    def find_backup(self, name: str) -> None:
        """The recording, its result and report read here, off the loop."""
        found = last_good_run(name)
        if found is None:
            self.post_message(Said(f"no recording of lesson {name} yet: run it once live",
                                   "stage", timeout=8))
            return
        try:
            backup = load_backup(self.flow.lesson.scenario, found)
        except KinspectError as exc:
            self.post_message(Said(f"no replay: {exc}", "stage", timeout=8))
            return
        self.call_from_thread(self._play_backup, backup)

    def _play_backup(self, backup: Backup) -> None:
        """Swap the live feed for the recording's, from its start, and narrate it."""
        from kinspect.tui.replay_feed import ReplayFeed

        self.feed.stop()
        self.backup = backup
        replay = ReplayFeed(backup.recording, title=f"recording of {backup.run_dir.name}")
        self.feed, self.clock = replay, replay.clock
        self.lab_console = ReadOnlyConsole(READ_ONLY)
        if self.flow.phase is Phase.STORY:
            self._show_lesson()
            return
        self._moved(self.flow.started())
        self.start_feed()

    @on(ReplayStatus)
    def replay_moved(self, message: ReplayStatus) -> None:
        """The recording played to its end: the run it recorded ended, with its verdict."""
        if self.backup is None or not message.paused or message.at_ms < message.end_ms:
            return
        if self.flow.phase is Phase.RUN and self.flow.result is None:
            backup = self.backup
            if backup.report is not None:
                self.lesson_report = (backup.report, backup.run_dir / POSTMORTEM_DIR)
            self._moved(self.flow.finished(backup.result))

    # ----- progress ----------------------------------------------------------------------

    @work(thread=True, group="progress", exit_on_error=False)
    def keep_progress(self, change: Callable[[Progress], Progress]) -> None:
        """Read, change and write the progress file off the loop; a failure is one toast
        (the lesson goes on: nothing on screen depends on the file)."""
        try:
            save_progress(change(load_progress()))
        except (KinspectError, OSError) as exc:
            self.post_message(Said(f"progress not saved: {error_line(exc)}", "lessons",
                                   timeout=10))


def journal_happenings(entry: JournalEntry) -> list[Happening]:
    """A lab journal entry as the steps see it: a fault a step may name, by its kind's word
    (a step's "isolate-zk" matches an isolation), and a heal is also the HEAL trigger."""
    kind = entry.kind
    if kind is None or not kind.in_steps:
        return []
    fault = Happening(Trigger.FAULT, kind.value)
    if kind is FaultKind.HEAL:
        return [Happening(Trigger.HEAL), fault]
    return [fault]


def with_predictions(flow: Flow) -> Callable[[Progress], Progress]:
    """The change that records the flow's predictions (not judged yet: nothing ran)."""
    predictions = tuple(Prediction(q.ask.en, q.choices[a].text.en)
                        for q, a in zip(flow.lesson.questions, flow.answers, strict=True))
    name = flow.lesson.name
    return lambda progress: progress.with_predictions(name, predictions)


def _path(text: str | None) -> Path | None:
    return Path(text) if text else None


@dataclass(frozen=True)
class Backup:
    """A recorded run of a lesson, read whole before it plays (nothing read on the loop)."""

    run_dir: Path
    recording: Recording
    made: str  # when it was recorded, as the panel says it
    result: RunResult
    report: Report | None


def load_backup(scenario: str, run_dir: Path) -> Backup:
    """The recording (KinspectError when there is none), when it was made, what it measured."""
    from kinspect.sources.playback import open_recording

    recording = open_recording(run_dir)
    made = datetime.fromtimestamp(run_dir.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
    result, report = recorded_result(scenario, run_dir)
    return Backup(run_dir, recording, made, result, report)


def recorded_result(scenario: str, run_dir: Path) -> tuple[RunResult, Report | None]:
    """What a recorded run measured: its result row and its report, as written then."""
    try:
        row = json.loads((run_dir / SCENARIO_FILE).read_text())
        report_path = run_dir / POSTMORTEM_DIR / "report.json"
        report = None
        if report_path.exists():
            report = Report.from_json(json.loads(report_path.read_text()))
    except (OSError, ValueError) as exc:
        return RunResult(scenario, f"the recording's result: {error_line(exc)}"), None
    held = bool(row.get("expectation_met"))
    return RunResult(scenario, None, row, _story(report), str(run_dir), held), report


def _story(report: Report | None) -> str:
    """The report's explanation (none without a report)."""
    if report is None:
        return ""
    return report.explanation


def _pointed_title(title: str, pointed: bool) -> str | None:
    """A panel's border title, between arrows when the step points at it (none: no title)."""
    if not title:
        return None
    if pointed:
        return f"▶▶ {title} ◀◀"
    return title


def run_learn(cluster: ClusterTarget | None, lessons: Sequence[Lesson], first: str,
              lang: Lang, stage: bool, replay: bool) -> int:
    """The lessons from `first` on; a lesson that needs the lab in the other mode quits the
    screen, remakes the lab (its progress on the terminal) and opens it again there."""
    index = next((i for i, lesson in enumerate(lessons) if lesson.name == first), 0)
    answers: tuple[int, ...] = ()
    while True:
        app = _lesson_app(cluster, lessons, index, lang, stage, replay, answers)
        app.run()
        if app.reopen is None:
            return 0
        mode, index, answers = app.reopen
        cluster = _remade_lab(mode)


def _lesson_app(cluster: ClusterTarget | None, lessons: Sequence[Lesson], index: int,
                lang: Lang, stage: bool, replay: bool, answers: tuple[int, ...] = ()
                ) -> LessonApp:
    from kinspect.tui.feed import LiveFeed

    backup = None
    if replay:
        backup = last_good_run(lessons[index].name)
        if backup is None:
            raise KinspectError(f"no recording of lesson {lessons[index].name} yet: run it "
                                "once on a lab (kinspect learn), then --replay plays it")
    if cluster is None or replay:
        return _replay_app(lessons, index, lang, stage, backup)
    feed = LiveFeed(cluster.bootstrap, cluster.zookeeper, lab_backed=True,
                    expected=cluster.expected_brokers, title=cluster.label,
                    admin_config=cluster.kafka, controllers=cluster.controllers)
    console: Console = LabConsole() if cluster.lab is not None else ReadOnlyConsole()
    return LessonApp(feed, console, lessons, index, lang, stage, answers=answers)


def _replay_app(lessons: Sequence[Lesson], index: int, lang: Lang, stage: bool,
                backup: Path | None) -> LessonApp:
    """No lab: the recording's feed from the start (paused until the run is asked for)."""
    from kinspect.tui.replay_feed import ReplayFeed

    if backup is None:
        raise KinspectError("no recording to play")
    loaded = load_backup(lessons[index].scenario, backup)
    replay = ReplayFeed(loaded.recording, title=f"recording of {backup.name}", paused=True)
    app = LessonApp(replay, ReadOnlyConsole(READ_ONLY), lessons, index, lang, stage,
                    backup=loaded, clock=replay.clock)
    return app


def _remade_lab(mode: str) -> ClusterTarget:
    """`kinspect lab reset --mode MODE`, its lines on the terminal; the lab it left."""
    from kinspect.lab import running_lab

    print(f"kinspect: remaking the lab in {mode} mode for this lesson …", flush=True)
    done = subprocess.run([sys.executable, "-m", "kinspect", "lab", "reset", "--mode", mode],
                          check=False)
    lab: LabState | None = running_lab()
    if done.returncode != 0 or lab is None:
        raise KinspectError(f"the lab could not be remade in {mode} mode "
                            f"(kinspect lab reset --mode {mode}: exit {done.returncode})")
    return lab_target(lab)

