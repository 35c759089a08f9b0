"""The live feed's recording: every observer snapshot, and whatever else the feed posts.

It wraps the feed's `post`, so the lab state, fault journal entries, load counters and problems
are recorded exactly as the screen got them, without the feed's loop knowing. A session is one
recording (`$KINSPECT_HOME/sessions/<time>-<pid>/recording/`); each load started in it is
attached, so its run dir gets a pointer with its window and, when it ends, a copy of its part.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from kinspect.errors import error_line
from kinspect.load.load_process import LoadStatus
from kinspect.model import ClusterSnapshot, Event, Severity
from kinspect.sources.recording import RECORDING_DIR, Recorder
from kinspect.tui.messages import LabArrived, Post, ProblemsChanged, Said

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject


def load_json(load: LoadStatus | None) -> JsonObject | None:
    """The load panel's counters as recorded (the replay builds a LoadStatus from them)."""
    if load is None:
        return None
    return load.to_json()


class SessionRecording:
    """One live session's recorder; a recording that fails is said once, the session goes on."""

    def __init__(self, recorder: Recorder, post: Post) -> None:
        self.recorder, self._post, self._said = recorder, post, False

    @classmethod
    def open(cls, session_dir: Path, title: str, post: Post) -> SessionRecording | None:
        try:
            return cls(Recorder(session_dir / RECORDING_DIR, title=title), post)
        except OSError as exc:
            post(Said(f"not recording this session: {error_line(exc)}", "recording",
                      Severity.ERROR, timeout=15))
            return None

    def snapshot(self, snapshot: ClusterSnapshot, events: list[Event]) -> None:
        """An observer subscriber: every snapshot, not only those the screen had time for."""
        self.recorder.snapshot(snapshot, events)

    def post(self, message: Message) -> object:
        """The feed's post, recording what it carries on the way."""
        if isinstance(message, LabArrived):
            self.recorder.lab(asdict(message.lab) if message.lab else None,
                              [entry.to_json() for entry in message.faults],
                              load_json(message.load))
        elif isinstance(message, ProblemsChanged):
            self.recorder.problems(message.problems)
        if self.recorder.error and not self._said:
            self._said = True
            self._post(Said(self.recorder.error, "recording", Severity.ERROR, timeout=15))
        return self._post(message)

    def attach_run(self, run_dir: Path | None) -> None:
        self.recorder.attach_run(run_dir)

    def close(self) -> None:
        self.recorder.close()
