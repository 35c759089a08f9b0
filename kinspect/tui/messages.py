"""Every message of the TUI: the feeds and workers post these, and only the handlers touch the app.

One module so the vocabulary between the threads and the screen is read in one place; the
feeds (feed.py, replay_feed.py), the engine keeper and the acting workers import from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message

from kinspect.lab.journal import JournalEntry
from kinspect.lab.state import LabState
from kinspect.load.load_process import LoadStatus
from kinspect.model import ClusterSnapshot, Event, HealthReport, Severity, assess
from kinspect.target import ClusterTarget
from kinspect.tui.partition_rows import Prepared, Preparer
from kinspect.tui.render import clock_text

if TYPE_CHECKING:
    from kinspect.lessons.flow import RunResult
    from kinspect.postmortem.story.values import Report

Post = Callable[[Message], object]  # how a feed or worker hands a message to the app


class Said(Message):
    """A line for the user (a toast): a fault done, a progress step, an error. Its severity is
    the model's one vocabulary; the app turns it into Textual's toast level."""

    def __init__(self, text: str, title: str = "", severity: Severity = Severity.INFO,
                 timeout: float = 5.0) -> None:
        super().__init__()
        self.text, self.title, self.severity, self.timeout = text, title, severity, timeout


class TaskStep(Message):
    """A long task's newest step (m, a scenario, a lesson's run): one line updated in place,
    readable from the back of a room, where a toast per step stacked up over the screen."""

    def __init__(self, title: str, line: str, done: bool = False) -> None:
        super().__init__()
        self.title, self.line, self.done = title, line, done


class LessonRunEnded(Message):
    """A lesson's run (or its fix's) ended: what the lesson reveals, and the report for m."""

    def __init__(self, result: RunResult, report: Report | None, report_dir: Path | None) -> None:
        super().__init__()
        self.result, self.report, self.report_dir = result, report, report_dir


class LoadStarted(Message):
    """A load started from this screen: follow its counters from now on."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir


class ReportReady(Message):
    """A post-mortem's report to show."""

    def __init__(self, report: Report, report_dir: Path) -> None:
        super().__init__()
        self.report, self.report_dir = report, report_dir


class CatalogReady(Message):
    """The scenario catalog, read: (name, title, expectation) per scenario, to pick from."""

    def __init__(self, choices: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.choices = choices


# ----- the feeds (feed.py, replay_feed.py) ------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    """A snapshot as the screen draws it: with its health assessment and the events since the
    last one drawn. Made in the feed's thread (`assessed`): at 10,000 partitions `assess` costs
    ~16 ms, a stall per snapshot on the event loop, where keys wait."""

    snapshot: ClusterSnapshot
    health: HealthReport  # `kinspect health`'s assessment of this very snapshot
    events: tuple[Event, ...] = ()
    prepared: Prepared | None = None  # the panels' passes over every partition, made too

    @classmethod
    def assessed(cls, snapshot: ClusterSnapshot, events: Iterable[Event] = (),
                 preparer: Preparer | None = None) -> Arrival:
        """Assess `snapshot` (and prepare it for the panels): call it in a feed's thread,
        never on the event loop."""
        prepared = preparer.prepare(snapshot) if preparer is not None else None
        return cls(snapshot, assess(snapshot), tuple(events), prepared)

    def after(self, earlier: Arrival) -> Arrival:
        """This one, drawn in place of `earlier` (never drawn): every event and change since."""
        prepared = self.prepared
        if prepared is not None and earlier.prepared is not None:
            prepared = prepared.after(earlier.prepared)
        return replace(self, events=earlier.events + self.events, prepared=prepared)


class Pending(Protocol):
    """Where a burst of snapshots waits for the UI (feed.Mailbox): taken once, by the handler."""

    def take(self) -> Arrival | None: ...


class SnapshotArrived(Message):
    """A snapshot to draw: this one, or with a mailbox the newest waiting in it."""

    def __init__(self, arrival: Arrival, mailbox: Pending | None = None) -> None:
        super().__init__()
        self.arrival, self.mailbox = arrival, mailbox

    def latest(self) -> Arrival | None:
        """The newest snapshot and every event since the last one shown (None: already shown)."""
        return self.mailbox.take() if self.mailbox else self.arrival


class LabArrived(Message):
    """The lab as it is now, new fault journal entries, and the load's counters."""

    def __init__(self, lab: LabState | None, faults: Sequence[JournalEntry],
                 load: LoadStatus | None) -> None:
        super().__init__()
        self.lab, self.faults, self.load = lab, faults, load


class FeedFailed(Message):
    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class ProblemsChanged(Message):
    """What is failing now, one line each (empty: all is well again)."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__()
        self.problems = problems


class ReplayStatus(Message):
    """Where the player is: recorded time, position in the recording, speed, paused."""

    def __init__(self, at_ms: int, start_ms: int, end_ms: int, speed: float,
                 paused: bool) -> None:
        super().__init__()
        self.at_ms, self.start_ms, self.end_ms = at_ms, start_ms, end_ms
        self.speed, self.paused = speed, paused

    def text(self) -> str:
        def mmss(ms: int) -> str:
            return f"{ms // 60_000}:{ms // 1000 % 60:02d}"

        state = "PAUSED" if self.paused else "playing"
        return (f"REPLAY {clock_text(self.at_ms)}  {mmss(self.at_ms - self.start_ms)} / "
                f"{mmss(self.end_ms - self.start_ms)}  {self.speed:g}x  {state}   "
                "space pause  . , step  ] [ ±10 s  + - speed")


class ReplayJumped(Message):
    """The player jumped (seek, step back, start): the event log is rewritten from history."""

    def __init__(self, history: list[Any]) -> None:
        super().__init__()
        self.history = history


# ----- the warm Spark engine (spark_keeper.py) ----------------------------------------------


class EngineChanged(Message):
    """The warm engine's state: starting, ready, busy, failed, or off (none answers)."""

    def __init__(self, state: str, detail: str = "") -> None:
        super().__init__()
        self.state, self.detail = state, detail


class ClusterChoices(Message):
    """What the cluster switcher offers: the profiles file's names, and the lab if one runs
    (`problem`: why the profiles could not be read)."""

    def __init__(self, names: tuple[str, ...], lab: bool, problem: str | None) -> None:
        super().__init__()
        self.names, self.lab, self.problem = names, lab, problem


class ClusterSwitched(Message):
    """The cluster to look at from now on, resolved (its lab proven, or read-only)."""

    def __init__(self, target: ClusterTarget) -> None:
        super().__init__()
        self.target = target
