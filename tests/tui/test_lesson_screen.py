"""A lesson on the screen with no lab (Pilot): the predictions asked in the panel, a recorded
run played in the live lab's place (stage mode's safety net) with the narration following
what the recording shows and pointing at the panel, the reveal judged on the recorded row,
in English and in Chinese at 80x24 and 160x45. The recording is the recorder's own output of a
story built from the model (tests/helpers/recording_story.py); the lab's run is tested in
test_lesson_lab.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

from kinspect.lessons.flow import Phase
from kinspect.lessons.lesson_values import Lang, Lesson, Panel, Step, Trigger
from kinspect.load.rundir import SCENARIO_FILE
from kinspect.sources.recording import RECORDING_DIR
from kinspect.tui.lesson_app import LessonApp, _replay_app
from kinspect.tui.lesson_panel import LessonPanel
from tests.helpers.lesson_fixtures import LESSON, t
from tests.helpers.recording_story import record_story
from tests.helpers.waiting import until

# The story's own moments: a kill of kafka3, then test1-0's leader moves 3 -> 1.
STORY_LESSON = Lesson(**{**LESSON.__dict__, "steps": (
    Step(Trigger.START, t("the load runs"), Panel.LOAD),
    Step(Trigger.FAULT, t("kafka3 is killed"), Panel.EVENTS, do="kill", pause=True),
    Step(Trigger.LEADER_CHANGED, t("a new leader"), Panel.PARTITIONS),
)})
ROW = {"acked_lost": 150, "lost_blamed_on_target": 0.9, "expectation_met": True}


def recorded_run(root: Path) -> Path:
    run_dir = root / "scenario-acks1-isolate-leader-1"
    record_story(run_dir / RECORDING_DIR)
    (run_dir / SCENARIO_FILE).write_text(json.dumps(ROW))
    return run_dir


def drawn(app: LessonApp) -> tuple[int, list[Strip]]:
    """The panel's text as drawn: its width and its lines (rich measures each cell)."""
    static = app.screen_stack[0].query_one(LessonPanel).query_one("#lesson-text", Static)
    width, height = static.size
    return width, static.render_lines(Region(0, 0, width, height))


def screen_text(app: LessonApp) -> str:
    """The panel as read, its wrapped lines joined (a wrap may fall inside a sentence)."""
    return "".join(strip.text.strip() for strip in drawn(app)[1])


def said(text: str) -> str:
    return text.replace(" ", "")


@pytest.mark.parametrize("lang", [Lang.EN, Lang.ZH])
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_a_recorded_lesson_plays_with_no_lab(tmp_path: Path, lang: Lang,
                                             size: tuple[int, int]) -> None:
    run_dir = recorded_run(tmp_path)
    app = _replay_app([STORY_LESSON], 0, lang, stage=False, backup=run_dir)

    async def scenario() -> None:
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.snapshot is not None, "the recording's first frame")
            await until(pilot, lambda: said(STORY_LESSON.questions[0].ask(lang))
                        in said(screen_text(app)), "the first question")
            await pilot.press("3", "1")
            assert app.flow.phase is Phase.READY and app.flow.answers == (2, 0)
            await pilot.press("space")  # the recording plays in the live lab's place
            app.feed.change_speed(16.0)  # type: ignore[attr-defined]  # a ReplayFeed now
            await until(pilot, lambda: app.flow.shown == 1, "the kill narrated")
            events = app.screen_stack[0].query_one("#events")
            assert "pointed" in events.classes and "▶▶" in str(events.border_title)
            assert app.flow.held
            await pilot.press("space")
            await until(pilot, lambda: app.flow.shown == 2, "the new leader narrated")
            assert "pointed" in app.screen_stack[0].query_one("#partitions").classes
            assert "pointed" not in events.classes
            await until(pilot, lambda: app.flow.result is not None, "the recording's end")
            await pilot.press("space")
            assert app.flow.phase is Phase.REVEAL
            assert app.flow.verdicts() == (True, True)
            await pilot.pause(0.2)
            text = said(screen_text(app))
            assert "150" in text and said(STORY_LESSON.explain(lang)) in text, text
            width, lines = drawn(app)
            assert lines and all(strip.cell_length == width for strip in lines)
            assert all(cell_len(strip.text) <= width for strip in lines)

    asyncio.run(scenario())
