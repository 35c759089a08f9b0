"""The partition view under Pilot, on the recorded model: keys open and close topics."""

from __future__ import annotations

import asyncio

from kinspect.tui.partition_rows import TopicSummary
from kinspect.tui.partition_view import PartitionView
from tests.helpers.recorded import recorded_app
from tests.helpers.waiting import first_snapshot


def test_enter_closes_and_opens_a_topic_and_a_opens_all() -> None:
    async def scenario() -> None:
        app = recorded_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await first_snapshot(pilot, app)
            view = app.query_one(PartitionView)
            assert view.row_count == 10  # test1 + 1, orders + 6, __consumer_offsets closed
            assert view.cell("test1", 0, "leader") == "1"
            # the load's topic (test1) comes first: its row, its partition, then orders
            await pilot.press("down", "down", "down", "enter")  # on orders-0: closes orders
            assert isinstance(view.selected, TopicSummary) and not view.selected.open
            assert view.row_count == 4
            await pilot.press("enter")
            assert view.row_count == 10
            await pilot.press("a")
            assert view.row_count == 3 + 7 + 50
            await pilot.press("u")
            assert view.row_count == 2 + 50 + 1 + 2  # unhealthy: orders-2, test1-0, all 50

    asyncio.run(scenario())
