"""An idle cluster costs the screen next to nothing: a poll that changed nothing repaints only
the header's clock, and the cycle collector runs at quiet moments, not during a failover.

Every repaint leaves Textual's strips as cyclic garbage, and every panel update laid the whole
screen out again: on an idle 3-broker lab that was ~3,000 garbage objects a second."""

from __future__ import annotations

import asyncio
import gc
import platform
import subprocess
import sys
import threading
import time
from itertools import pairwise

from rich.text import Text

from kinspect.heap import ARENAS, limit_arenas, malloc_trim
from kinspect.tui.app import KinspectApp
from kinspect.tui.collector import (
    EVERY_S,
    LONGEST_S,
    NEVER,
    QUIET_S,
    SHARE,
    SWITCH_S,
    QuietCollector,
)
from kinspect.tui.feed import Feed, Mailbox
from kinspect.tui.messages import Arrival, Post, SnapshotArrived
from kinspect.tui.partition_rows import Preparer
from kinspect.tui.partition_view import PartitionView
from kinspect.tui.widgets import TextBox
from tests.helpers.model_fixtures import T0, demo_snapshot
from tests.helpers.waiting import until


def test_an_unchanged_picture_is_the_same_model_and_a_change_a_new_one() -> None:
    preparer = Preparer()
    first = preparer.prepare(demo_snapshot())
    again = preparer.prepare(demo_snapshot(taken_at=T0 + 1000))  # polled again, nothing moved
    assert again.model is first.model and again.changes == ()
    moved = preparer.prepare(demo_snapshot(isolated_leader=True, taken_at=T0 + 2000))
    assert moved.model is not first.model and moved.changes


class SamePicture(Feed):
    """The demo cluster polled `times` times, nothing changing but the time taken."""

    title = "same picture"

    def __init__(self, times: int) -> None:
        self.times, self.preparer = times, Preparer()
        self.go, self.done = threading.Event(), threading.Event()  # go: after the first draw

    def start(self, post: Post) -> None:
        mailbox = Mailbox()
        for i in range(self.times):
            arrival = Arrival.assessed(demo_snapshot(taken_at=T0 + 1000 * i), (), self.preparer)
            if mailbox.put(arrival):
                post(SnapshotArrived(arrival, mailbox))
            self.go.wait(30)
            time.sleep(0.3)  # a poll's pace, shortened
        self.done.set()


def test_polls_that_change_nothing_repaint_nothing_but_the_header() -> None:
    feed = SamePicture(6)
    app = KinspectApp(feed)
    rebuilt: list[int] = []
    shown: dict[str, list[Text]] = {"header": [], "warnings": []}

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
            view = app.query_one(PartitionView)
            original = view._rebuild
            view._rebuild = lambda: (rebuilt.append(1), original())[1]  # type: ignore[method-assign]
            for name, updates in shown.items():
                box = app.query_one(f"#{name}", TextBox)
                box_update = box.update
                box.update = (lambda text, *, layout=True, _u=box_update, _l=updates:  # type: ignore[method-assign]
                              (_l.append(text), _u(text, layout=layout))[1])
            feed.go.set()
            await until(pilot, lambda: feed.done.is_set() and app.snapshot is not None
                        and app.snapshot.taken_at == T0 + 5000, "the last poll drawn")

    asyncio.run(scenario())
    assert rebuilt == []  # the partitions drawn once, before the spy: never again
    assert shown["warnings"] == []  # the same warnings: not redrawn
    # Each header repaint a new text: the clock or the staleness moved. (Not all distinct: the
    # staleness, now minus the snapshot's time, can come back to a value shown before when a
    # newer snapshot arrives while the machine is slow.)
    headers = [t.plain for t in shown["header"]]
    assert headers and all(a != b for a, b in pairwise(headers))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_full_collection_waits_for_quiet_and_for_its_turn() -> None:
    clock = Clock()
    collector = QuietCollector(clock)
    clock.now += EVERY_S - 1
    assert not collector.maybe_collect()  # not a minute yet
    clock.now += 1
    collector.busy()  # a change on screen, or a key
    clock.now += QUIET_S - 0.1
    assert not collector.maybe_collect()
    clock.now += 0.1
    assert collector.maybe_collect() and collector.collections == 1
    clock.now += EVERY_S
    collector.cost_s = 0.5  # what one took at 100,000 partitions: rarer, a small share of time
    assert not collector.due()
    clock.now += 0.5 / SHARE - EVERY_S
    assert collector.due()


def test_a_screen_never_quiet_still_collects_now_and_then() -> None:
    clock = Clock()
    collector = QuietCollector(clock)
    for _ in range(int(LONGEST_S) - 1):  # a failover that goes on: a change every second
        clock.now += 1
        collector.busy()
        assert not collector.maybe_collect()
    clock.now += 1
    assert collector.maybe_collect() and collector.collections == 1


def test_python_runs_no_full_collection_of_its_own_once_the_screen_starts() -> None:
    """Its threshold counts young collections: at 100,000 partitions one came every few polls."""
    before = gc.get_threshold()
    try:
        QuietCollector(Clock()).start()
        assert gc.get_threshold() == (700, 10, NEVER)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_screen_shares_the_gil_in_short_turns_and_gives_pythons_back() -> None:
    before = sys.getswitchinterval()
    during: list[float] = []

    feed = SamePicture(1)
    feed.go.set()  # no draw to wait for

    async def scenario() -> None:
        app = KinspectApp(feed)
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause(0.05)
            during.append(sys.getswitchinterval())

    asyncio.run(scenario())
    assert during == [SWITCH_S] and before > SWITCH_S
    assert sys.getswitchinterval() == before


def test_each_full_collection_hands_the_freed_memory_back() -> None:
    clock, trims = Clock(), []
    collector = QuietCollector(clock, trim=trims.append)
    clock.now += EVERY_S
    assert collector.maybe_collect() and trims == [0]
    assert not collector.maybe_collect() and trims == [0]  # not due: no trim either


def test_malloc_trim_is_glibcs_where_the_c_library_is_glibc() -> None:
    trim = malloc_trim()
    if platform.libc_ver()[0] != "glibc":
        assert trim is None
        return
    assert trim is not None and trim(0) in (0, 1)  # 1: memory was handed back


# Twelve threads alive at once, each allocating; then glibc's own account of its arenas
# (malloc_info: one <heap> per arena). "screen": as the app mounts, before its feed's threads;
# "watch": inside `kinspect watch`'s handler (a long-lived command), as the CLI runs it.
ARENA_COUNT = """
import sys, threading
from kinspect.heap import malloc_info
def count(_args=None):
    ready = threading.Barrier(13)
    def work():
        kept = [bytes(4096 + i) for i in range(200)]
        ready.wait()
        ready.wait()
    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads: t.start()
    ready.wait()
    print(len(malloc_info().findall("heap")))
    ready.wait()
    return 0
if sys.argv[1] == "screen":
    from kinspect.tui.collector import QuietCollector
    QuietCollector().start()
if sys.argv[1] == "watch":
    import kinspect.cli, kinspect.cli.observe
    kinspect.cli.observe.cmd_watch = count
    kinspect.cli.main(["watch", "--bootstrap", "127.0.0.1:1"])
else:
    count()
"""


def arenas_with_twelve_threads(mode: str) -> int:
    run = subprocess.run([sys.executable, "-c", ARENA_COUNT, mode], capture_output=True,
                         text=True, timeout=60, check=True)
    return int(run.stdout)


def test_the_screens_threads_share_two_malloc_arenas() -> None:
    """The polls' threads had spread over 15 arenas at 10,000 partitions, each keeping its own
    freed pieces; once the screen's collector starts, glibc itself counts at most ARENAS (and
    more without it)."""
    if platform.libc_ver()[0] != "glibc":
        assert limit_arenas() is False
        return
    assert arenas_with_twelve_threads("screen") <= ARENAS
    assert arenas_with_twelve_threads("watch") <= ARENAS  # `kinspect demo` had made 15 first
    assert arenas_with_twelve_threads("default") > ARENAS


def test_an_arrival_no_longer_drawn_is_freed_on_the_graveyards_thread() -> None:
    """At 100,000 partitions freeing a snapshot took ~80 ms; the loop only hands it over."""
    import weakref

    from kinspect.tui import graveyard

    arrival = Arrival.assessed(demo_snapshot(), (), Preparer())
    freed_in: list[str] = []
    weakref.finalize(arrival.snapshot.topics[0],  # a topic: partitions have slots, no weakrefs
                     lambda: freed_in.append(threading.current_thread().name))
    yard = graveyard.Graveyard()
    yard.bury(arrival)
    yard.bury(None)  # nothing drawn yet: nothing to bury
    del arrival
    deadline = time.monotonic() + graveyard.GRACE_S + 10
    while not freed_in and time.monotonic() < deadline:
        time.sleep(0.05)
    assert freed_in == ["kinspect-graveyard"]
