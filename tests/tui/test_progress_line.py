"""A long task's progress (m, a scenario, a lesson's run) is one line that updates in place and
goes once the task ends, not a stack of toasts over the screen (Pilot, recorded model)."""

from __future__ import annotations

import asyncio

from textual.widgets import Static

from kinspect.tui.messages import TaskStep
from tests.helpers.recorded import recorded_app
from tests.helpers.waiting import until


def test_progress_is_one_line_in_place_and_goes_when_done() -> None:
    app = recorded_app()

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            line = app.main.query_one("#progress", Static)
            assert not line.display or "visible" not in line.classes
            steps = ["verify: reading the final log", "evidence", "Spark job", "report"]
            for step in steps:
                app.post_message(TaskStep("post-mortem", step))
                await pilot.pause()
            await until(pilot, lambda: "post-mortem: report" in str(line.render()),
                        "the newest step")
            assert "visible" in line.classes and line.region.height == 1
            assert not any(step in str(n.message) for n in app._notifications
                           for step in steps)  # no toast per step
            app.post_message(TaskStep("post-mortem", "", done=True))
            await until(pilot, lambda: "visible" not in line.classes, "the line gone")

    asyncio.run(scenario())
