"""The TUI against the real lab, driven by Textual's Pilot: keys in, screen contents out."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from kinspect.lab.topics import create_topics
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole, ReadOnlyConsole
from kinspect.tui.feed import LiveFeed
from kinspect.tui.partition_view import PartitionView
from kinspect.tui.widgets import BrokerTable
from tests.helpers import kinspect, partition_state

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def live_app(lab: dict[str, Any], read_only: bool = False) -> KinspectApp:
    expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n.get("broker_id")}
    feed = LiveFeed(lab["bootstrap"], lab["zookeeper"], lab_backed=not read_only,
                    expected=expected, title="test lab")
    if read_only:
        return KinspectApp(feed, ReadOnlyConsole("not a kinspect lab (test)"))
    return KinspectApp(feed, LabConsole())


def cell(app: KinspectApp, column: str) -> str:
    return app.screen_stack[0].query_one(PartitionView).cell("test1", 0, column)


async def until(pilot: Any, probe: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except Exception:  # the row may not exist yet
            pass
        await pilot.pause(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def test1(lab: dict[str, Any], zk: KazooClient) -> dict[str, Any]:
    create_topics(lab["bootstrap"], {"test1": 1})
    deadline = time.monotonic() + 30
    while not zk.exists("/brokers/topics/test1/partitions/0/state"):
        assert time.monotonic() < deadline, "test1 never got a state znode"
        time.sleep(0.2)
    return partition_state(zk, "test1", 0)


def test_screen_shows_controller_and_leader(lab: dict[str, Any], zk: KazooClient,
                                            test1: dict[str, Any]) -> None:
    async def scenario() -> None:
        app = live_app(lab)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: cell(app, "leader") != "", 20, "test1 on screen")
            state = partition_state(zk, "test1", 0)
            controller = int(__import__("json").loads(zk.get("/controller")[0])["brokerid"])
            await until(pilot, lambda: cell(app, "leader") == str(state["leader"]), 10,
                        "test1's leader on screen")
            header = str(app.query_one("#header").render())
            assert f"controller {controller}" in header
            assert "ZK connected" in header

    asyncio.run(scenario())


def test_kill_key_elects_a_new_leader_on_screen(lab: dict[str, Any], zk: KazooClient,
                                                test1: dict[str, Any]) -> None:
    old = partition_state(zk, "test1", 0)["leader"]

    async def scenario() -> None:
        app = live_app(lab)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: cell(app, "leader") == str(old), 20, "the old leader")
            await until(pilot, lambda: app.lab is not None, 5, "the lab state")
            await pilot.press(str(old))
            await pilot.press("k")
            await pilot.pause(0.3)
            assert type(app.screen).__name__ == "ConfirmScreen"
            await pilot.press("y")
            await until(pilot, lambda: cell(app, "leader") not in ("", str(old), "none"), 45,
                        "a new leader on screen")
            assert partition_state(zk, "test1", 0)["leader"] != old

    try:
        asyncio.run(scenario())
    finally:
        kinspect("lab", "start", f"kafka{old}", check=False)


def test_pausing_a_follower_shows_it_leave_the_isr(lab: dict[str, Any], zk: KazooClient,
                                                  test1: dict[str, Any]) -> None:
    state = partition_state(zk, "test1", 0)
    follower = next(r for r in state["isr"] if r != state["leader"])

    async def scenario() -> None:
        app = live_app(lab, read_only=False)
        app.no_confirm = True
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: str(follower) in cell(app, "isr"), 20, "full ISR")
            await until(pilot, lambda: app.lab is not None, 5, "the lab state")
            await pilot.press(str(follower))
            await pilot.press("p")
            # replica.lag.time.max.ms is 10 s in the demo preset; the shrink follows it
            await until(pilot, lambda: f"-{follower}" in cell(app, "isr"), 45,
                        f"broker {follower} marked missing from the ISR")
            assert "URP" in cell(app, "flags")
            await pilot.press("p")  # resume
            await until(pilot, lambda: "-" not in cell(app, "isr"), 60, "the ISR expanding")

    try:
        asyncio.run(scenario())
    finally:
        kinspect("lab", "resume", f"kafka{follower}", check=False)


def test_the_slow_key_slows_a_followers_link_and_restores_it(lab: dict[str, Any], zk: KazooClient,
                                                            test1: dict[str, Any]) -> None:
    state = partition_state(zk, "test1", 0)
    follower = next(r for r in state["isr"] if r != state["leader"])
    node = f"kafka{follower}"

    def shown() -> str:
        table = app.screen_stack[0].query_one(BrokerTable)
        return str(table.get_cell(str(follower), "lab").plain).strip()

    async def scenario() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(pilot, lambda: app.lab is not None and shown().startswith("running"), 20,
                        "the broker table")
            await pilot.press(str(follower), "w")
            await pilot.pause(0.3)
            assert type(app.screen).__name__ == "ConfirmScreen"
            await pilot.press("y")
            await until(pilot, lambda: "slow link: rate 256 kbit + 5 % loss, inbound" in shown(),
                        20, "the slowed link on screen")
            status = json.loads(kinspect("lab", "status", "--json").stdout)
            assert status["slowed"][node]["how"].startswith(("tbf", "netem"))
            await pilot.press("w")  # again: restore
            await pilot.pause(0.3)
            assert type(app.screen).__name__ == "ConfirmScreen"
            await pilot.press("y")
            await until(pilot, lambda: "slow link" not in shown(), 20, "the link restored")
            assert json.loads(kinspect("lab", "status", "--json").stdout)["slowed"] == {}

    app = live_app(lab)
    try:
        asyncio.run(scenario())
    finally:
        kinspect("lab", "unslow", check=False)


def test_read_only_refuses_fault_keys(lab: dict[str, Any], test1: dict[str, Any]) -> None:
    async def scenario() -> None:
        app = live_app(lab, read_only=True)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: cell(app, "leader") != "", 20, "test1 on screen")
            await pilot.press("1", "k")
            await pilot.pause(0.3)
            assert type(app.screen).__name__ != "ConfirmScreen"
            messages = [n.message for n in app._notifications]
            assert any("refused" in m for m in messages), messages
            footer_keys = {b.binding.key for b in app.active_bindings.values() if b.binding.show}
            assert "k" not in footer_keys and "q" in footer_keys

    asyncio.run(scenario())
    status = kinspect("lab", "status", "--json").stdout
    assert '"paused"' not in status and '"killed"' not in status


def test_an_observer_failure_is_shown_and_cleared(lab: dict[str, Any], zk: KazooClient,
                                                 test1: dict[str, Any],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot builder fails (an injected fault in the model's builder, the one stand-in
    here: the cluster and the observer's sources are real): the header says so and a toast
    tells it once; when the builder recovers the header is clear again."""
    from kinspect.sources import observer

    real_build = observer.build_snapshot
    failing = {"on": False}

    def build(*args: Any, **kwargs: Any) -> Any:
        if failing["on"]:
            raise RuntimeError("injected builder fault")
        return real_build(*args, **kwargs)

    monkeypatch.setattr(observer, "build_snapshot", build)

    def header(app: KinspectApp) -> str:
        return str(app.screen_stack[0].query_one("#header").render())

    async def scenario() -> None:
        app = live_app(lab)
        async with app.run_test(size=(160, 30)) as pilot:
            await until(pilot, lambda: cell(app, "leader") != "", 20, "test1 on screen")
            assert "FAILING" not in header(app)
            failing["on"] = True  # the AdminClient's next poll (each second) asks for a build
            await until(pilot, lambda: "injected builder fault" in header(app), 20,
                        "the builder's failure in the header")
            assert "FAILING: no new snapshot" in header(app)
            await pilot.pause(3)  # the feed reports it every second: still one toast
            toasts = [n.message for n in app._notifications]
            assert sum("injected builder fault" in t for t in toasts) == 1, toasts
            failing["on"] = False
            await until(pilot, lambda: "injected builder fault" not in header(app), 20,
                        "the header clear once the builder recovers")

    asyncio.run(scenario())
