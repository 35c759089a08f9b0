"""Progress of the long CLI steps on stderr: rich bars with rate and ETA on a terminal.

Without a terminal on stderr every call falls back to the plain lines kinspect always printed
(tests and CI parse them), and stdout is never touched, so `--json` stays clean. The TUI never
comes here: it shows its own toasts.

A `Display` has at most one current stage (a spinner, its line and how long it has run; the
finished ones stay above with their time) and any number of bars (done of total, rate, ETA).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kinspect.lab.dist import Tick

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text

STAGE = "stage"


def bars_wanted() -> bool:
    """Bars only on a real terminal (not TERM=dumb, not KINSPECT_NO_BARS=1)."""
    if not sys.stderr.isatty():
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return not os.environ.get("KINSPECT_NO_BARS")


def plain(line: str) -> None:
    """One write per line: lines said from two threads never share a line."""
    sys.stderr.write(f"{line}\n")
    sys.stderr.flush()


def _summary(key: str, done: int, unit: str, elapsed: float) -> str:
    """`✓ reading orders: 1,000,000 records in 6.2 s, 161,290/s` (a time-driven bar: no count)."""
    if unit in ("", "s") or not done:
        return f"✓ {key} in {elapsed:.1f} s"
    rate = ""
    if elapsed > 0.5:
        rate = f", {done / elapsed:,.0f}/s"
    return f"✓ {key}: {done:,} {unit} in {elapsed:.1f} s{rate}"


def _speed(task: Task) -> float | None:
    """rich's recent rate, else the average since the start (steps of minutes, the matrix's
    runs, are too slow for a recent rate)."""
    if task.speed:
        return task.speed
    elapsed = task.elapsed
    if elapsed is None or elapsed <= 1.0:
        return None
    if not task.completed:
        return None
    return task.completed / elapsed


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _per_second(speed: float) -> str:
    """`1,234/s`, or `0.42/s` for the slow steps."""
    if speed >= 10:
        return f"{speed:,.0f}/s"
    return f"{speed:.2f}/s"


def _is_stage(task: Task) -> bool:
    return bool(task.fields.get("kind") == STAGE)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    if not lines:
        return ""
    return lines[0]


def _label(key: str, note: str) -> str:
    """A bar's description: its key, and its note when it has one."""
    if not note:
        return key
    return f"{key}  {note}"[:70].rstrip()


def _count(task: Task) -> str:
    """`12,345/100,000 records`, or `12,345 records` when the total is not known."""
    if _is_stage(task):
        return ""
    unit = task.fields.get("unit", "")
    text = f"{int(task.completed):,}"
    if task.total is not None:
        text = f"{text}/{int(task.total):,}"
    return f"{text} {unit}".rstrip()


def _rate(task: Task) -> str:
    if _is_stage(task) or task.fields.get("unit") == "s":
        return ""
    speed = _speed(task)
    if not speed:
        return ""
    return _per_second(speed)


def _eta(task: Task) -> str:
    if _is_stage(task) or task.total is None:
        return ""
    speed = _speed(task)
    if not speed:
        return ""
    remaining = max(0.0, task.total - task.completed) / speed
    return f"ETA {_clock(remaining)}"


def _styled(text: str, style: str) -> Text:
    """A column's cell: nothing at all when there is nothing to say."""
    from rich.text import Text

    if not text:
        return Text("")
    return Text(text, style=style)


def _progress() -> Progress:
    """rich's Progress with our columns (rich is imported only when a bar is drawn)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Column
    from rich.text import Text

    class _Bar(BarColumn):
        def render(self, task: Task) -> Any:
            if _is_stage(task):
                return Text("")
            return super().render(task)

    class _Count(ProgressColumn):
        def render(self, task: Task) -> Text:
            return _styled(_count(task), "progress.download")

    class _Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            return _styled(_rate(task), "progress.data.speed")

    class _Eta(ProgressColumn):
        def render(self, task: Task) -> Text:
            return _styled(_eta(task), "progress.remaining")

    def fixed() -> Column:
        return Column(no_wrap=True)

    return Progress(
        SpinnerColumn(finished_text="✓"),
        TextColumn("{task.description}", markup=False,
                   table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
        _Bar(bar_width=20, table_column=fixed()), _Count(table_column=fixed()),
        _Rate(table_column=fixed()), _Eta(table_column=fixed()),
        TimeElapsedColumn(table_column=fixed()),
        console=Console(file=sys.stderr, emoji=False), transient=True, redirect_stdout=False,
        speed_estimate_period=10.0, expand=True)


class Display:
    """One live area on stderr (a context manager); thread-safe, as lines come from threads."""

    def __init__(self, live: bool | None = None) -> None:
        if live is None:
            live = bars_wanted()
        self.live = live
        self._lock = threading.RLock()
        self._stage: tuple[TaskID, str, float] | None = None  # task, line, started
        self._bars: dict[str, TaskID] = {}
        self._progress: Progress = None  # type: ignore[assignment]  # used only when live
        if live:
            self._progress = _progress()

    def start(self) -> Display:
        if self.live:
            self._progress.start()
        return self

    def stop(self, failed: bool = False) -> None:
        """Close the live area: the current stage and every bar leave a line each."""
        if not self.live:
            return
        with self._lock:
            self._end_stage(failed)
            for key in list(self._bars):
                self.finish(key)
        self._progress.stop()

    def __enter__(self) -> Display:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop(failed=kind is not None)

    def say(self, line: str) -> None:
        """A line that stays, above the live area (a plain line without a terminal); the
        current stage ends first, so lines keep their order."""
        if not self.live:
            plain(line)
            return
        with self._lock:
            self._end_stage()
            self._print(line)

    def _print(self, line: str) -> None:
        self._progress.console.print(line, markup=False, highlight=False, emoji=False)

    def line(self, line: str) -> None:
        """A new stage: the previous one is kept above with its time, this one spins. A Tick
        (from the jar fetch or an image build) drives a bar of its own instead."""
        if isinstance(line, Tick):
            self.tick(line)
            return
        if not self.live:
            plain(line)
            return
        with self._lock:
            for key in list(self._bars):
                self.finish(key, whole=True)  # a plain line after a step's ticks: it is over
            self._end_stage()
            task = self._progress.add_task(_first_line(line)[:100], total=None, kind=STAGE)
            self._stage = (task, line, time.monotonic())

    def tick(self, tick: Tick) -> None:
        if not self.live:
            plain(tick)
            return
        self.bar(tick.step, tick.done, tick.total, tick.unit, tick.strip())

    def bar(self, key: str, done: float, total: float | None, unit: str = "",
            note: str = "") -> None:
        """Create or move the bar `key` (the same key after it finished: a new bar)."""
        if not self.live:
            return
        with self._lock:
            task = self._bars.get(key)
            label = _label(key, note)
            if task is None:
                task = self._progress.add_task(label, total=total, unit=unit)
                self._bars[key] = task
            self._progress.update(task, completed=done, total=total, description=label)

    def finish(self, key: str, whole: bool = False) -> None:
        """End the bar `key` (`whole`: all of its total done): it leaves the live area as one
        line with its count and time."""
        with self._lock:
            task_id = self._bars.pop(key, None)
            if task_id is None or not self.live:
                return
            task = next(t for t in self._progress.tasks if t.id == task_id)
            done = task.completed
            if whole and task.total is not None:
                done = task.total
            self._progress.remove_task(task_id)
            self._end_stage()  # the stage the bar belonged to
            self._print(_summary(key, int(done), task.fields.get("unit", ""), task.elapsed or 0.0))

    def _end_stage(self, failed: bool = False) -> None:
        if self._stage is None:
            return
        task, line, started = self._stage
        self._stage = None
        self._progress.remove_task(task)
        seconds = time.monotonic() - started
        took = ""
        if seconds >= 0.1:
            took = f"  ({seconds:.1f} s)"
        if failed:
            line = "✗ " + line
        self._print(line + took)
