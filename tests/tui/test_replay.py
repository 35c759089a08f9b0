"""Replay on the real screen (Pilot): a recorded story played back with pause, step, seek and
speed, each key changing what is shown; fault keys are refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kinspect.sources.playback import Recording
from kinspect.tui.replay_app import ReplayApp, ReplayBar
from kinspect.tui.replay_feed import ReplayFeed
from tests.helpers.model_fixtures import T0
from tests.helpers.recording_story import FAILOVER_STEP, STEP_MS, record_story
from tests.helpers.waiting import until


def bar(app: ReplayApp) -> str:
    return str(app.query_one(ReplayBar).render())


def header(app: ReplayApp) -> str:
    return str(app.query_one("#header").render())


def test_pause_step_seek_and_speed_change_the_screen(tmp_path: Path) -> None:
    record_story(tmp_path)
    feed = ReplayFeed(Recording(tmp_path), paused=True, title="story")

    async def scenario() -> None:
        app = ReplayApp(feed)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.snapshot is not None and "PAUSED" in bar(app),
                        "the first frame, paused")
            assert app.snapshot is not None and app.snapshot.taken_at == T0
            assert "0:00 / 0:59" in bar(app) and "(epoch 3)" in header(app)

            await pilot.press("full_stop")  # one change forward
            await until(pilot, lambda: app.snapshot is not None
                        and app.snapshot.taken_at == T0 + STEP_MS, "one step forward")
            await pilot.press("full_stop", "full_stop", "comma")  # two forward, one back
            await until(pilot, lambda: app.snapshot is not None
                        and app.snapshot.taken_at == T0 + 2 * STEP_MS, "step back")

            await pilot.press("right_square_bracket", "right_square_bracket")  # +20 s
            at = T0 + 2 * STEP_MS + 20_000  # past the failover
            assert at > T0 + FAILOVER_STEP * STEP_MS
            await until(pilot, lambda: app.snapshot is not None
                        and app.snapshot.taken_at == at, "seek +20 s")
            await until(pilot, lambda: "0:21 / 0:59" in bar(app) and "(epoch 4)" in header(app),
                        "the failover on screen after the seek")
            assert app.snapshot.partition("test1", 0).leader == 1  # type: ignore[union-attr]
            await pilot.press("left_square_bracket")  # -10 s: before the failover again
            await until(pilot, lambda: "(epoch 3)" in header(app), "seek back 10 s")
            assert app.snapshot.partition("test1", 0).leader == 3  # type: ignore[union-attr]

            await pilot.press("plus", "plus", "minus")
            await until(pilot, lambda: " 2x " in bar(app), "speed 2x")
            await pilot.press("space")
            at = app.snapshot.taken_at  # type: ignore[union-attr]
            await until(pilot, lambda: "playing" in bar(app)
                        and app.snapshot is not None and app.snapshot.taken_at > at + STEP_MS,
                        "playing moves the screen")
            await pilot.press("space")
            await until(pilot, lambda: "PAUSED" in bar(app), "paused again")
            held = app.snapshot.taken_at  # type: ignore[union-attr]
            await pilot.pause(0.6)
            assert app.snapshot.taken_at == held  # type: ignore[union-attr]

            await pilot.press("k")  # a fault key: refused, nothing acts in a replay
            await until(pilot, lambda: any("refused" in str(n.message)
                                           for n in app._notifications), "kill refused")

    asyncio.run(scenario())
    assert feed.seek_ms and max(feed.seek_ms) < 500


def test_playing_to_the_end_pauses_there(tmp_path: Path) -> None:
    record_story(tmp_path, steps=50)
    rec = Recording(tmp_path)
    feed = ReplayFeed(rec, at_ms=rec.end_ms - 1000, speed=16.0)

    async def scenario() -> None:
        app = ReplayApp(feed)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.snapshot is not None
                        and app.snapshot.taken_at == rec.end_ms and "PAUSED" in bar(app),
                        "the last frame, paused")
            log = app.screen_stack[0].query_one("#events")
            await until(pilot, lambda: any("leader 3 → 1" in line.text for line in log.lines),
                        "the failover's events in the log, from history")

    asyncio.run(scenario())


def test_a_jump_writes_the_fault_journal_back_into_the_log(tmp_path: Path) -> None:
    """The history a jump rewrites the log from holds the journal's entries as well as the
    events: each is a fault line, as when it was played."""
    record_story(tmp_path)
    feed = ReplayFeed(Recording(tmp_path), at_ms=T0 + (FAILOVER_STEP - 1) * STEP_MS + 100,
                      paused=True)

    async def scenario() -> None:
        app = ReplayApp(feed)
        async with app.run_test(size=(120, 30)) as pilot:
            log = app.screen_stack[0].query_one("#events")
            await until(pilot, lambda: any("fault: kill" in line.text and "kafka3" in line.text
                                           for line in log.lines),
                        "the kill journaled before the moment, in the log")

    asyncio.run(scenario())


def test_a_timeline_entry_opens_the_replay_at_its_moment(tmp_path: Path) -> None:
    """Enter on a report's timeline entry: the replay of that run at that time (headless, the
    app cannot hand the terminal over, so it says the command instead)."""
    from textual.widgets import DataTable

    from kinspect.postmortem.story.values import Report
    from kinspect.tui.report_screen import ReportScreen
    from tests.helpers.recorded import recorded_app

    run_dir = tmp_path / "run"
    record_story(run_dir / "recording")
    moment = T0 + FAILOVER_STEP * STEP_MS
    report = {"run_dir": str(run_dir), "timeline": [
        {"ts": T0 + 1000, "kind": "fault", "detail": "kill kafka3"},
        {"ts": moment, "kind": "leader_changed", "partition": "test1-0", "detail": "3 → 1"}]}

    async def scenario() -> None:
        app = recorded_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await app.push_screen(ReportScreen(Report.from_json(report), run_dir / "postmortem"))
            table = app.screen.query_one(".timeline", DataTable)
            table.focus()
            await pilot.press("down", "enter")
            await until(pilot, lambda: any(f"replay {run_dir} --at {moment}" in str(n.message)
                                           for n in app._notifications), "the replay command")

    asyncio.run(scenario())
