"""`kinspect replay`'s feed: a recorded session played back as the live feed's messages.

`ReplayFeed` is a Feed like the live one: its own thread reads the recording (decoding a
segment off the UI thread) and posts the same messages the live feed does, timed by the
recorded clock, so the screen is the same code. In: a Recording and the player's commands
(from the UI thread). Out: Textual messages; no widget here (the app is replay_app.py, the
launcher from another screen replay_launch.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from kinspect.lab.journal import JournalEntry
from kinspect.lab.state import LabState, NodeRecord
from kinspect.load.load_process import LoadStatus
from kinspect.model import ClusterSnapshot, Event
from kinspect.sources.playback import Cursor, Frame, Recording
from kinspect.sources.recording import Json
from kinspect.tui.feed import Feed, Mailbox
from kinspect.tui.messages import (
    Arrival,
    LabArrived,
    Post,
    ProblemsChanged,
    ReplayJumped,
    ReplayStatus,
    SnapshotArrived,
)

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
TICK_S = 0.1


def lab_from(data: dict[str, Any] | None) -> LabState | None:
    if not data:
        return None
    try:
        fields = dict(data)
        return LabState(nodes=[NodeRecord(**n) for n in fields.pop("nodes")], **fields)
    except (TypeError, ValueError, KeyError):  # a lab of another shape: the brokers without it
        return None


def _entry(item: Event | Json) -> Event | JournalEntry:
    """An event, or a fault journal entry as the recording holds it (JSON), as the log shows
    it: the screen gets journal entries, never their JSON."""
    if isinstance(item, dict):
        return JournalEntry.from_json(item)
    return item


def load_from(data: dict[str, Any] | None) -> LoadStatus | None:
    if not data:
        return None
    try:
        return LoadStatus.from_json(data)
    except (KeyError, TypeError, ValueError, IndexError):  # another version: an empty panel
        return None


class ReplayFeed(Feed):
    """Plays a recording; the keys call the controls (from the UI thread), which only leave a
    command for the feed's thread: nothing the UI calls reads a file."""

    lab_backed = True

    def __init__(self, recording: Recording, at_ms: int | None = None, speed: float = 1.0,
                 title: str = "replay", paused: bool = False) -> None:
        self.recording, self.title = recording, title
        if at_ms is None:
            at_ms = recording.start_ms
        self.position_ms = float(at_ms)
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
        self._command("hold", float(held))

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
        """One player command, in the feed's thread."""
        rec = self.recording
        if name == "toggle":
            self._toggle(post, mailbox)
        elif name == "hold":
            self.paused = bool(value)
            if self.position_ms >= rec.end_ms:
                self.paused = True
        elif name == "speed":
            self.speed = min(SPEEDS, key=lambda speed: abs(speed - self.speed * value))
        elif name == "seek":
            self._jump(post, mailbox, self._within(self.position_ms + value))
        elif name == "seek_to":
            self._jump(post, mailbox, self._within(value))
        elif name == "step":
            self._step(post, mailbox, forward=value > 0)

    def _within(self, at: float) -> float:
        return min(max(at, self.recording.start_ms), self.recording.end_ms)

    def _toggle(self, post: Post, mailbox: Mailbox) -> None:
        rec = self.recording
        if self.paused and self.position_ms >= rec.end_ms:  # at the end: from the start
            self._jump(post, mailbox, rec.start_ms)
        self.paused = not self.paused

    def _step(self, post: Post, mailbox: Mailbox, forward: bool) -> None:
        """One frame on (its news reach the log) or back (the state in force then)."""
        rec = self.recording
        self.paused = True
        move = rec.prev
        if forward:
            move = rec.next
        moved = move(self.cursor)
        if moved is None:
            return
        t = rec.frame(moved).t
        if not rec.start_ms <= t <= rec.end_ms:
            return
        if forward:
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
        history = [_entry(item) for item in rec.history(self.cursor)]
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
            faults = [JournalEntry.from_json(entry) for entry in frame.faults]
            post(LabArrived(lab_from(frame.lab), faults, load_from(frame.load)))
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
