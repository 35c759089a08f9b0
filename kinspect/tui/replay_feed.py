"""`kinspect replay`: a recorded session played back on the live screen.

`ReplayFeed` is a Feed like the live one: its own thread reads the recording (decoding a
segment off the UI thread) and posts the same messages the live feed does, timed by the
recorded clock, so the screen is the same code. The app below only adds the player keys and a
status bar; its console is read-only, so every fault key is refused.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual import on
from textual.app import App, SuspendNotSupported
from textual.binding import Binding
from textual.widgets import RichLog, Static

from kinspect.errors import KinspectError
from kinspect.lab.state import LabState, NodeRecord
from kinspect.load.liveloss import LiveLoss
from kinspect.load.load_process import LoadStatus
from kinspect.load.trend import trend_from_json
from kinspect.model import ClusterSnapshot, Event
from kinspect.sources.playback import Cursor, Frame, Recording, open_recording
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import ReadOnlyConsole
from kinspect.tui.feed import Feed, Mailbox, Post
from kinspect.tui.messages import (
    Arrival,
    LabArrived,
    ProblemsChanged,
    ReplayJumped,
    ReplayStatus,
    SnapshotArrived,
)
from kinspect.tui.render import event_line, fault_line

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
SEEK_S = 10
TICK_S = 0.1
READ_ONLY = "a replay: it shows what was recorded and acts on nothing"


def lab_from(data: dict[str, Any] | None) -> LabState | None:
    if not data:
        return None
    try:
        fields = dict(data)
        return LabState(nodes=[NodeRecord(**n) for n in fields.pop("nodes")], **fields)
    except (TypeError, ValueError, KeyError):  # a lab of another shape: the brokers without it
        return None


def load_from(data: dict[str, Any] | None) -> LoadStatus | None:
    if not data:
        return None
    try:
        live = data.get("live")
        return LoadStatus(Path(data["run_dir"]), bool(data["running"]), data["settings"],
                          data["stats"], data.get("consumers"),
                          LiveLoss.from_json(live) if live else None,
                          trend_from_json(data.get("trend") or ()))
    except (KeyError, TypeError, ValueError, IndexError):  # another version: an empty panel
        return None


class ReplayFeed(Feed):
    """Plays a recording; the keys call the controls (from the UI thread), which only leave a
    command for the feed's thread: nothing the UI calls reads a file."""

    lab_backed = True

    def __init__(self, recording: Recording, at_ms: int | None = None, speed: float = 1.0,
                 title: str = "replay", paused: bool = False) -> None:
        self.recording, self.title = recording, title
        self.position_ms = float(recording.start_ms if at_ms is None else at_ms)
        self.speed, self.paused = speed, paused
        self.cursor: Cursor = (0, 0)
        self._commands: list[tuple[str, float]] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.seek_ms: list[float] = []  # how long each seek took (the bench and tests read it)
        self._assessed: Arrival | None = None  # the last snapshot assessed, and its assessment

    # ----- controls (UI thread) ----------------------------------------------------------

    def clock(self) -> float:
        """The recorded time now: the header's age and STALE are the recording's own."""
        return self.position_ms / 1000

    def _command(self, name: str, value: float = 0.0) -> None:
        with self._cond:
            self._commands.append((name, value))
            self._cond.notify()

    def toggle(self) -> None:
        self._command("toggle")

    def hold(self, held: bool) -> None:
        """Pause (True) or play on (False), whatever the state: a lesson holds the recording
        at the moment its narration waits on."""
        self._command("hold", 1.0 if held else 0.0)

    def step(self, n: int) -> None:
        self._command("step", n)

    def seek(self, delta_s: float) -> None:
        self._command("seek", delta_s * 1000)

    def seek_to(self, at_ms: int) -> None:
        self._command("seek_to", at_ms)

    def change_speed(self, factor: float) -> None:
        self._command("speed", factor)

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify()

    # ----- the feed's thread -------------------------------------------------------------

    def start(self, post: Post) -> None:
        rec, mailbox = self.recording, Mailbox()
        self._jump(post, mailbox, self.position_ms)
        last, told = time.monotonic(), 0.0
        while not self._stop.is_set():
            with self._cond:
                commands, self._commands = self._commands, []
            changed = bool(commands)
            for name, value in commands:
                self._do(post, mailbox, name, value)
            now = time.monotonic()
            if not self.paused:
                self.position_ms = min(self.position_ms + (now - last) * 1000 * self.speed,
                                       rec.end_ms)
                self._play_until(post, mailbox, self.position_ms)
                if self.position_ms >= rec.end_ms:
                    self.paused, changed = True, True
            last = now
            if changed or (not self.paused and now - told >= 0.25):
                told = now
                post(self.status())
            with self._cond:
                if not self._commands and not self._stop.is_set():
                    self._cond.wait(TICK_S)

    def status(self) -> ReplayStatus:
        rec = self.recording
        return ReplayStatus(int(self.position_ms), rec.start_ms, rec.end_ms, self.speed,
                            self.paused)

    def _do(self, post: Post, mailbox: Mailbox, name: str, value: float) -> None:
        rec = self.recording
        if name == "toggle":
            if self.paused and self.position_ms >= rec.end_ms:  # at the end: from the start
                self._jump(post, mailbox, rec.start_ms)
            self.paused = not self.paused
        elif name == "hold":
            self.paused = bool(value) or self.position_ms >= rec.end_ms
        elif name == "speed":
            i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed * value))
            self.speed = SPEEDS[i]
        elif name in ("seek", "seek_to"):
            target = self.position_ms + value if name == "seek" else value
            self._jump(post, mailbox, min(max(target, rec.start_ms), rec.end_ms))
        elif name == "step":
            self.paused = True
            moved = rec.next(self.cursor) if value > 0 else rec.prev(self.cursor)
            if moved is None:
                return
            t = rec.frame(moved).t
            if not rec.start_ms <= t <= rec.end_ms:
                return
            if value > 0:
                self._play_until(post, mailbox, t, limit=1)
            else:
                self._jump(post, mailbox, t, moved)
            self.position_ms = t

    def _jump(self, post: Post, mailbox: Mailbox, at: float, cursor: Cursor | None = None) -> None:
        """Show the state in force at `at` from its segment's keyframe: the log is rewritten."""
        started = time.perf_counter()
        rec = self.recording
        self.cursor = cursor or rec.locate(int(at))
        self.position_ms = at
        frame = rec.frame(self.cursor)
        history = rec.history(self.cursor)
        self.seek_ms.append((time.perf_counter() - started) * 1000)
        mailbox.take()  # events of before the jump are not news after it
        post(ReplayJumped(history))
        post(LabArrived(lab_from(frame.lab), [], load_from(frame.load)))
        post(ProblemsChanged(frame.problems))
        arrival = self._arrival(frame.snapshot, ())
        if mailbox.put(arrival):
            post(SnapshotArrived(arrival, mailbox))

    def _play_until(self, post: Post, mailbox: Mailbox, t: float, limit: int = 1 << 30) -> None:
        """Every frame up to t, in order: their events and journal entries all reach the log."""
        rec = self.recording
        before = rec.frame(self.cursor)
        while limit > 0:
            moved = rec.next(self.cursor)
            if moved is None:
                return
            frame = rec.frame(moved)
            if frame.t > t:
                return
            self.cursor, limit = moved, limit - 1
            self._show(post, mailbox, before, frame)
            before = frame

    def _show(self, post: Post, mailbox: Mailbox, before: Frame, frame: Frame) -> None:
        if frame.lab is not before.lab or frame.load is not before.load or frame.faults:
            post(LabArrived(lab_from(frame.lab), list(frame.faults), load_from(frame.load)))
        if frame.problems != before.problems:
            post(ProblemsChanged(frame.problems))
        changed = frame.snapshot is not before.snapshot or frame.events
        if not changed:
            return
        arrival = self._arrival(frame.snapshot, frame.events)
        if mailbox.put(arrival):
            post(SnapshotArrived(arrival, mailbox))

    def _arrival(self, snapshot: ClusterSnapshot, events: Iterable[Event]) -> Arrival:
        """Assessed here, in the player's thread (never on the loop), and once per snapshot:
        frames that only add events share their snapshot and its assessment."""
        if self._assessed is None or self._assessed.snapshot is not snapshot:
            self._assessed = Arrival.assessed(snapshot)
        return replace(self._assessed, events=tuple(events))


class ReplayBar(Static):
    DEFAULT_CSS = "ReplayBar { height: 1; background: $primary-darken-2; color: $text; }"


class ReplayApp(KinspectApp):
    """The live screen, fed by a recording; the player's keys on top, fault keys refused."""

    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *KinspectApp.BINDINGS,
        Binding("space", "replay_toggle", "pause/play"),
        Binding("full_stop", "replay_step(1)", "step", show=False),
        Binding("comma", "replay_step(-1)", "step back", show=False),
        Binding("right_square_bracket", "replay_seek(10)", "+10 s", show=False),
        Binding("left_square_bracket", "replay_seek(-10)", "-10 s", show=False),
        Binding("plus,equals_sign", "replay_speed(2)", "faster", show=False),
        Binding("minus", "replay_speed(0.5)", "slower", show=False),
    ]

    def __init__(self, feed: ReplayFeed) -> None:
        super().__init__(feed, ReadOnlyConsole(READ_ONLY), clock=feed.clock)
        self.replay = feed
        self.replay_status: ReplayStatus = feed.status()

    def on_mount(self) -> None:
        """Runs before the base's on_mount (Textual calls both): the bar is there first."""
        self.main.mount(ReplayBar(self.replay_status.text(), id="replay-bar"), before=0)

    @on(ReplayStatus)
    def replay_moved(self, message: ReplayStatus) -> None:
        self.replay_status = message
        if self.screen_stack:
            self.main.query_one(ReplayBar).update(message.text())

    @on(ReplayJumped)
    def replay_jumped(self, message: ReplayJumped) -> None:
        if not self.screen_stack:
            return
        log = self.main.query_one("#events", RichLog)
        log.clear()
        for item in message.history:
            log.write(fault_line(item) if isinstance(item, dict) else event_line(item))

    def action_replay_toggle(self) -> None:
        self.replay.toggle()

    def action_replay_step(self, n: int) -> None:
        self.replay.step(n)

    def action_replay_seek(self, seconds: float) -> None:
        self.replay.seek(seconds)

    def action_replay_speed(self, factor: float) -> None:
        self.replay.change_speed(factor)


def run_replay(recording: Recording, at_ms: int | None, speed: float, title: str,
               paused: bool = False) -> int:
    ReplayApp(ReplayFeed(recording, at_ms, speed, title, paused)).run()
    return 0


def open_replay(app: App[Any], run_dir: Path, at_ms: int) -> None:
    """From the report's timeline: the run's replay at that moment, in this terminal (this app
    suspended meanwhile); the recording is checked in a thread, never on the UI's."""
    def check() -> None:
        try:
            rec = open_recording(run_dir)
        except KinspectError as exc:
            app.call_from_thread(app.notify, f"no replay: {exc}", severity="warning")
            return
        at = min(max(at_ms, rec.start_ms), rec.end_ms)
        app.call_from_thread(_play, app, run_dir, at)

    app.run_worker(check, name="open_replay", thread=True, group="replay", exclusive=True,
                   exit_on_error=False)


def _play(app: App[Any], run_dir: Path, at_ms: int) -> None:
    command = [sys.executable, "-m", "kinspect", "replay", str(run_dir), "--at", str(at_ms)]
    try:
        with app.suspend():
            subprocess.run(command, stdin=None)
    except SuspendNotSupported:  # headless (a test, a pipe): say the command instead
        app.notify(f"replay it with: kinspect replay {run_dir} --at {at_ms}",
                   title="replay")
