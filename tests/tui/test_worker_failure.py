"""A worker that raises is said on screen and the app goes on: no worker can take it down."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from textual.message import Message

from kinspect.tui import feed as feed_module
from kinspect.tui.app import KinspectApp
from kinspect.tui.feed import LabPoll, LiveFeed
from kinspect.tui.messages import LabArrived, Post, ProblemsChanged
from kinspect.tui.modals import HelpScreen
from tests.helpers.recorded import recorded_app
from tests.helpers.waiting import until


def toasts(app: KinspectApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def still_answers(app: KinspectApp, pilot: Any) -> None:
    """Alive, and its keys act: u filters the partitions, ? opens the help."""
    assert app.is_running and app.return_code is None
    await pilot.press("u")
    assert app.main.query_one("#partitions").border_title == "partitions (unhealthy only)"
    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")


def test_a_feed_that_raises_is_said_and_the_screen_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()
    shown = app.feed.start

    def start_then_break(post: Post) -> None:
        shown(post)  # the model is on screen, then the feed's thread dies
        raise RuntimeError("the poll broke")

    monkeypatch.setattr(app.feed, "start", start_then_break)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            line = "start_feed stopped: RuntimeError: the poll broke"
            await until(pilot, lambda: line in toasts(app), "the failure's toast")
            assert line in app.stopped  # the feed lasts as long as the screen: in the header
            header = app.main.query_one("#header").render()
            assert "start_feed stopped" in str(header)
            await still_answers(app, pilot)

    asyncio.run(scenario())


def test_an_action_worker_that_raises_is_said_and_keys_still_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise KeyError("no such node")

    monkeypatch.setattr(app, "_answer", broken)  # past the worker's own error handling

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.2)
            await pilot.press("h")  # heal: a fault worker
            line = "apply_fault stopped: KeyError: 'no such node'"
            await until(pilot, lambda: line in toasts(app), "the failure's toast")
            assert app.stopped == ()  # a one-off action: a toast, not a lasting problem
            await still_answers(app, pilot)

    asyncio.run(scenario())


class QuietObserver:
    """The observer's side of a look: nothing failing."""

    admin = None

    def problems(self) -> list[str]:
        return []


def test_one_failed_look_of_the_live_feed_is_a_problem_and_the_loop_goes_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr(feed_module, "POLL_S", 0.01)
    looks = iter([OSError("disk gone")])
    real_look = LabPoll.look

    def look_once_broken(self: LabPoll, post: Post, load: Any) -> tuple[str, ...]:
        if (error := next(looks, None)) is not None:
            raise error
        return real_look(self, post, load)

    monkeypatch.setattr(LabPoll, "look", look_once_broken)
    live = LiveFeed("localhost:1", None, lab_backed=False, session_dir=tmp_path, record=False)
    posted: list[Message] = []
    done = threading.Event()

    def post(message: Message) -> None:
        posted.append(message)
        if isinstance(message, ProblemsChanged) and not message.problems:
            done.set()  # the next look worked: the problem is gone again

    thread = threading.Thread(target=live._poll,
                              args=(QuietObserver(), post, LabPoll(False, 0)))
    thread.start()
    try:
        assert done.wait(5), posted
    finally:
        live.stop()
        thread.join(5)
    problems = [m.problems for m in posted if isinstance(m, ProblemsChanged)]
    assert problems[:2] == [("polling the cluster: OSError: disk gone",), ()]
    assert any(isinstance(m, LabArrived) for m in posted)
    assert not thread.is_alive()
