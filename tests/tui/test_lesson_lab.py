"""A lesson on the real lab (Pilot): predictions, the scenario run narrated step by step with
the panel it points at marked on screen, the reveal equal to the post-mortem's report.json,
the progress kept; then, with the lab down, stage mode plays the recorded run in its place and
the presenter's key walks the same narration to the same reveal. CI runs lesson 3 (the leader
cut off from ZooKeeper only: the only isolate-zk run in CI); `make matrix` runs lesson 2 and
its fix's rerun (acks=all: nothing lost)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.lessons.flow import Phase
from kinspect.lessons.lesson_catalog import find
from kinspect.lessons.lesson_progress import load_progress
from kinspect.lessons.lesson_values import Lang, Panel
from kinspect.load.rundir import POSTMORTEM_DIR
from kinspect.tui.console import LabConsole
from kinspect.tui.feed import LiveFeed
from kinspect.tui.lesson_app import LessonApp, _lesson_app
from tests.helpers import kinspect
from tests.helpers.waiting import until

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]
LESSON = "cut-from-zookeeper"
RUN_S = 300  # the scenario: reset, load, isolate, heal, verify, post-mortem (~90 s here)


def live_lesson(lab: dict[str, Any], lang: Lang, name: str = LESSON) -> LessonApp:
    expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n.get("broker_id")}
    feed = LiveFeed(lab["bootstrap"], lab["zookeeper"], lab_backed=True, expected=expected,
                    title="test lab")
    return LessonApp(feed, LabConsole(), [find(name)], 0, lang, stage=False)


def pointed(app: LessonApp) -> set[str]:
    return {p.value for p in Panel if (found := app.screen_stack[0].query(f"#{p.value}"))
            and "pointed" in found.first().classes}


async def through_the_run(app: LessonApp, pilot: Any, fix: bool = False) -> set[str]:
    """Space at every pause until the reveal (or the fix's end); every panel pointed at."""
    seen: set[str] = set()
    done = Phase.FIX_DONE if fix else Phase.REVEAL

    async def moved_on() -> bool:
        seen.update(pointed(app))
        if app.flow.phase is done:
            return True
        flow = app.flow
        on_stage = flow.stage and flow.phase is Phase.RUN and flow.waiting_for is None \
            and flow.shown + 1 < len(flow.lesson.steps)  # the presenter shows each step
        if flow.held or flow.result is not None or on_stage:
            await pilot.press("space")
        return False

    for _ in range(RUN_S * 5):
        if await moved_on():
            return seen
        await pilot.pause(0.2)
    raise AssertionError(f"the lesson did not reach {done} in {RUN_S} s: {app.flow}")


@pytest.mark.extended  # a scenario round trip (CI: the lesson screen's pilot tests)
def test_a_lesson_runs_on_the_lab_and_replays_on_stage_with_the_lab_down(
        lab: dict[str, Any]) -> None:
    lesson = find(LESSON)
    app = live_lesson(lab, Lang.EN)

    async def live() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await until(pilot, lambda: app.snapshot is not None, "the lab on screen", 30)
            await pilot.press("3")  # thousands
            assert app.flow.phase is Phase.READY
            await pilot.press("space")
            seen = await through_the_run(app, pilot)
            assert app.flow.phase is Phase.REVEAL and app.flow.result is not None
            assert app.flow.result.failure is None, app.flow.result
            # every step's panel was pointed at on the screen while the step was current
            assert {s.point.value for s in lesson.steps if s.point} <= seen | {"header"}, seen
            assert app.flow.verdicts() == (True,), app.flow.result.row

    asyncio.run(live())
    result = app.flow.result
    assert result is not None and result.run_dir
    report = json.loads((Path(result.run_dir) / POSTMORTEM_DIR / "report.json").read_text())
    assert result.row["acked_lost"] == report["acked_lost"] >= 1000
    assert report["explanation"] == result.story
    record = load_progress().records[LESSON]
    assert record.run_dir == result.run_dir and record.measured["acked_lost"] == \
        report["acked_lost"]
    assert [p.right for p in record.predictions] == [True]

    kinspect("lab", "down")
    staged = _lesson_app(None, [lesson], 0, Lang.ZH, stage=True, replay=True)

    async def stage() -> None:
        async with staged.run_test(size=(160, 45)) as pilot:
            await until(pilot, lambda: staged.snapshot is not None, "the recording's first frame",
                        20)
            await pilot.press("3", "space")
            staged.feed.change_speed(16.0)  # type: ignore[attr-defined]  # a ReplayFeed
            await through_the_run(staged, pilot)
            assert staged.flow.result is not None
            assert staged.flow.result.row["acked_lost"] == report["acked_lost"]
            assert staged.flow.verdicts() == (True,)

    asyncio.run(stage())


@pytest.mark.extended  # a second scenario round trip: make matrix
def test_the_fix_reruns_the_lesson_and_its_expectation_holds(lab: dict[str, Any]) -> None:
    app = live_lesson(lab, Lang.EN, "isolated-leader")

    async def lesson() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await until(pilot, lambda: app.snapshot is not None, "the lab on screen", 30)
            await pilot.press("3", "1", "space")
            await through_the_run(app, pilot)
            assert app.flow.verdicts() == (True, True)
            await pilot.press("space")
            assert app.flow.phase is Phase.FIX and app.flow.lesson.fix is not None
            right = next(i for i, c in enumerate(app.flow.lesson.fix.choices) if c.scenario)
            wrong = next(i for i, c in enumerate(app.flow.lesson.fix.choices) if not c.scenario)
            await pilot.press(str(wrong + 1), "space")  # a wrong fix says why, runs nothing
            assert app.flow.phase is Phase.FIX and app.flow.fix_result is None
            await pilot.press(str(right + 1), "space")
            assert app.flow.phase is Phase.FIX_RUN
            await through_the_run(app, pilot, fix=True)

    asyncio.run(lesson())
    fixed = app.flow.fix_result
    assert fixed is not None and fixed.failure is None and fixed.held, fixed
    assert fixed.row["acked_lost"] == 0 and fixed.scenario == "acksall-isolate-leader"
    report = json.loads((Path(str(fixed.run_dir)) / POSTMORTEM_DIR / "report.json").read_text())
    assert report["acked_lost"] == 0
    record = load_progress().records["isolated-leader"]
    assert (record.fix_scenario, record.fix_held) == ("acksall-isolate-leader", True)
