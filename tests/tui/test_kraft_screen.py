"""The screen on a KRaft model, under Pilot: the header names the quorum leader and shows the
quorum, the broker table says who is in the metadata, a zombie leader is named as such. The
model is built from sources' answers (tests/sources/test_kraft_model.py), nothing live."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.widgets import Static

from kinspect.tui.app import KinspectApp
from kinspect.tui.feed import RecordedFeed
from kinspect.tui.partition_view import PartitionView
from kinspect.tui.widgets import BrokerTable
from tests.helpers.kraft_fixtures import T0, kraft_snapshot, kraft_view
from tests.helpers.model_fixtures import demo_snapshot
from tests.helpers.waiting import first_snapshot, until


def header_plain(app: KinspectApp) -> str:
    content = app.query_one("#header", Static).content
    return content.plain if isinstance(content, Text) else str(content)


def test_the_screen_shows_the_quorum_and_fencing_in_kraft_and_not_in_zookeeper_mode() -> None:
    async def scenario() -> None:
        feed = RecordedFeed(kraft_snapshot(kraft_view(listed=(1, 2))), title="kraft lab")
        app = KinspectApp(feed, clock=lambda: (T0 + 400) / 1000)
        async with app.run_test(size=(140, 40)) as pilot:
            await first_snapshot(pilot, app)
            first, second = header_plain(app).split("\n")
            assert "controller 101 (quorum leader, epoch 7)" in first
            assert second.startswith("quorum hw 1,234 │ voters 101* 102:-12")
            table = app.query_one(BrokerTable)
            labels = [column.label.plain.strip() for column in table.columns.values()]
            assert labels == ["id", "address", "lab", "metadata", "leads", "not in ISR", "disk"]
            assert table.get_cell("3", "zk").plain.strip() == "FENCED"
            assert app.query_one(PartitionView).cell("test1", 0, "flags").startswith(
                "stale leader 1")
            # Back to a ZooKeeper model: the zk column and the one-line header return.
            app.feed = RecordedFeed(demo_snapshot(isolated_leader=True, taken_at=T0))
            app.start_feed()
            await until(pilot, lambda: "\n" not in header_plain(app), "the ZooKeeper header")
            labels = [column.label.plain.strip() for column in table.columns.values()]
            assert labels[3] == "zk"
            assert app.query_one(PartitionView).cell("test1", 0, "flags").startswith("ZK≠broker 3")

    asyncio.run(scenario())
