"""SVG snapshots of the screens, rendered from a recorded model with a frozen clock.

Run `pytest tests/tui/test_tui_snapshots.py --snapshot-update` after an intended layout change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from tests.helpers.isolation import isolation_report
from tests.helpers.recorded import recorded_app

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def still_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    """An Input's cursor blinks every 0.5 s, headless too: on a loaded machine the screenshot
    came more than 0.5 s after the last key and caught it hidden (the partition editor failed
    in CI). Held still, the cursor shows where focus and the last key left it."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """Event times are shown in local time: pin it so the snapshots match on any machine."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if previous is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = previous
    time.tzset()


async def until_drawn(pilot: Any) -> None:
    """The recorded model comes from the feed's worker thread: on a loaded machine it can
    arrive after the first frame, and keys or the screenshot must wait for it."""
    app = pilot.app
    for _ in range(400):
        if app.snapshot is not None and app.lab is not None:
            await settled(pilot)
            return
        await pilot.pause(0.05)
    raise AssertionError("the recorded model was not drawn in 20 s")


async def settled(pilot: Any) -> None:
    """Until two screenshots 0.1 s apart are the same: with the model in, a loaded machine may
    still owe the screen a layout pass (the resize handler's panel heights, the load panel's
    rows), and the snapshot caught it half drawn (a different test failed each run while two
    labs and Spark ran beside the suite). The clock is frozen, so a drawn screen is still."""
    before = pilot.app.export_screenshot()
    for _ in range(100):
        await pilot.pause(0.1)
        now = pilot.app.export_screenshot()
        if now == before:
            return
        before = now
    raise AssertionError("the screen did not settle in 10 s")


@pytest.fixture
def snap(snap_compare: Any) -> Any:
    """snap_compare, once the recorded model is on screen (then any run_before of the test)."""
    def compare(app: Any, run_before: Any = None, **settings: Any) -> bool:
        async def before(pilot: Any) -> None:
            await until_drawn(pilot)
            if run_before is not None:
                await run_before(pilot)
        return bool(snap_compare(app, run_before=before, **settings))
    return compare


def test_main_screen(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE)


def test_main_screen_wide(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=(160, 45))


def test_main_screen_120(snap: Any) -> None:
    """Brokers sized to their content, warnings wrapped beside them, the diverged replica."""
    assert snap(recorded_app(), terminal_size=(120, 40))


def test_main_screen_220(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=(220, 50))


def test_all_topics_open(snap: Any) -> None:
    """`a` opens __consumer_offsets too: its 50 rows come after the user topics."""
    assert snap(recorded_app(), terminal_size=(160, 45), press=["a"])


def test_warnings_in_full(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=(120, 40), press=["W"])


def test_unhealthy_only(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE, press=["u"])


def test_help_screen(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE, press=["question_mark"])


def test_confirm_kill_modal(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE, press=["3", "k"])


def test_isolate_menu(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE, press=["2", "i"])


def test_load_form(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE, press=["l"])


def test_partition_editor(snap: Any) -> None:
    assert snap(recorded_app(), terminal_size=SIZE, press=["x", *"kafka2"])


def test_read_only_footer(snap: Any) -> None:
    assert snap(recorded_app(read_only=True), terminal_size=SIZE)


def test_report_screen(snap: Any) -> None:
    """The post-mortem report: its lanes (faults, leaders, acked/failed, the lost window) above
    the timeline, for an acks1-isolate-leader-like report."""
    from kinspect.tui.report_screen import ReportScreen

    async def open_report(pilot: Any) -> None:
        await pilot.app.push_screen(ReportScreen(isolation_report(), Path("/tmp/run/postmortem")))
        await pilot.pause()

    assert snap(recorded_app(), terminal_size=(120, 45), run_before=open_report)
