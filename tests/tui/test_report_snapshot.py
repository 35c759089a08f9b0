"""SVG snapshot of the post-mortem report screen: its lanes (faults, leaders, acked/failed,
the lost window) above the timeline, for an acks1-isolate-leader-like report.

Run `pytest tests/tui/test_report_snapshot.py --snapshot-update` after an intended change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postmortem.test_chart_lanes import isolation_report
from tests.tui.recorded import recorded_app


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """The timeline's times are local: pin the zone so the snapshot matches anywhere."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if previous is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = previous
    time.tzset()


def test_report_screen(snap_compare: Any) -> None:
    from kinspect.tui.report_screen import ReportScreen

    async def open_report(pilot: Any) -> None:
        await pilot.app.push_screen(ReportScreen(isolation_report(), Path("/tmp/run/postmortem")))
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=(120, 45), run_before=open_report)
