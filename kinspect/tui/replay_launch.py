"""A run's replay opened from another screen (the report's timeline): `kinspect replay` in a
child process, in this terminal, the calling app suspended meanwhile.

In: the app, a run dir and a moment. Out: the child's screen, or a toast saying why not (no
recording) or what to type (a terminal that cannot be suspended). It knows no replay widget:
the child is a process of its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.app import App, SuspendNotSupported

from kinspect.errors import KinspectError
from kinspect.sources.playback import open_recording


def open_replay(app: App[Any], run_dir: Path, at_ms: int) -> None:
    """The run's replay at that moment; the recording is checked in a thread, never on the
    UI's."""
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
