"""Waiting for a Textual pilot's app to reach a state."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


async def until(pilot: Any, probe: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


