"""The lab that acts: start, break and tear down a local Kafka cluster (zk1 + kafka1..N)."""

from __future__ import annotations

from pathlib import Path

from kinspect.lab.backend import LabBackend, UpOptions, status_json
from kinspect.lab.state import LabState, load_state

__all__ = ["LabBackend", "LabState", "UpOptions", "open_backend", "running_lab", "status_json"]


def open_backend(name: str | None = None, root: Path | None = None) -> LabBackend:
    """The backend of the lab on disk (or the one asked for, when none exists yet)."""
    state = load_state(root)
    chosen = name if name and name != "auto" else (state.backend if state else "process")
    if chosen == "process":
        from kinspect.lab.process import ProcessBackend

        return ProcessBackend(root)
    from kinspect.errors import KinspectError

    raise KinspectError(f"unknown lab backend {chosen!r} (available: process)")


def running_lab(root: Path | None = None) -> LabState | None:
    """The lab state if one is up, reconciled with the processes that actually run."""
    state = load_state(root)
    if state is None:
        return None
    return open_backend(state.backend, root).state()
