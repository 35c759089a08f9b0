"""Waiting for a Textual pilot's app to reach a state.

The deadline only guards against a hang; it is never a speed target. `make test` runs the
tests needing no lab at nice 10 beside the lab's JVMs, where they may get a tenth of a core,
so a 5 s deadline once failed a replay that needed 31 ms of recording (CI, stop 59)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEADLINE_S = 60.0


async def until(pilot: Any, probe: Callable[[], bool], what: str,
                timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


async def first_snapshot(pilot: Any, app: Any) -> None:
    """The feed's first snapshot drawn: a feed posts from its own thread, so a fixed pause may
    end before it arrives on a busy machine."""
    await until(pilot, lambda: app.snapshot is not None, "the feed's first snapshot")
    await pilot.pause()
