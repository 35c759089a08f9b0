"""Keeps the warm Spark engine running beside the TUI and reports its state to the header.

The engine is a process of its own (`kinspect postmortem --serve`): a JVM in the TUI's process
would share its terminal, and a slow start must never block a key. An engine that already
answers (started by hand, or by another TUI on this KINSPECT_HOME) is used and left running,
and when it ends one is started here (a TUI reopened at once must not keep the old one's
ending engine); one started here ends with the TUI.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable

from textual.message import Message

from kinspect.extras import installed
from kinspect.postmortem.spark.spark_client import engine_status, start_engine
from kinspect.tui.messages import EngineChanged

POLL_S = 1.0


class EngineKeeper:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None

    def run(self, post: Callable[[Message], object]) -> None:
        """Start an engine unless one answers, then say each change of state (a thread).
        Without the postmortem extra there is none to start: m says which extra it needs."""
        if not installed("postmortem"):
            return
        if engine_status() is None:
            self._process = start_engine(parent_pid=os.getpid())
        last = ""
        while not self._stop.wait(POLL_S):
            status = engine_status()
            if status is None and self._process is None:  # the engine we used has ended
                self._process = start_engine(parent_pid=os.getpid())
            if status is None:
                alive = self._process is not None and self._process.poll() is None
                state, detail = ("starting" if alive else "off"), ""
            else:
                state, detail = status.state, status.error
            if state != last:
                post(EngineChanged(state, detail))
                last = state

    def stop(self) -> None:
        """End the engine started here (it also ends by itself when the TUI's process does)."""
        self._stop.set()
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
