"""A real leader kill recorded by the live feed, then replayed: the replay shows the leader
change at the time it was recorded, and the kill in the journal just before it."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from textual.message import Message

from kinspect.lab.topics import create_topics
from kinspect.model import ClusterSnapshot
from kinspect.sources.observer import now_ms
from kinspect.sources.playback import open_recording
from kinspect.tui.feed import LiveFeed
from kinspect.tui.messages import SnapshotArrived
from kinspect.tui.replay_app import ReplayApp
from kinspect.tui.replay_feed import ReplayFeed
from tests.helpers import kinspect, partition_state
from tests.helpers.waiting import until

pytestmark = [pytest.mark.lab]


def wait(probe: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_a_recorded_leader_kill_replays_at_its_time(lab: dict[str, Any], zk: KazooClient,
                                                    tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"test1": 1})
    wait(lambda: zk.exists("/brokers/topics/test1/partitions/0/state"), 30, "test1's state")
    expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n.get("broker_id")}
    feed = LiveFeed(lab["bootstrap"], lab["zookeeper"], lab_backed=True, expected=expected,
                    title="lab", session_dir=tmp_path / "session")
    snaps: list[ClusterSnapshot] = []

    def post(message: Message) -> None:
        """What the app does with a snapshot: take it from the mailbox (else no more come)."""
        if isinstance(message, SnapshotArrived) and (latest := message.latest()):
            snaps.append(latest.snapshot)

    thread = threading.Thread(target=feed.start, args=(post,), daemon=True)
    thread.start()

    def leader_on_feed() -> int | None:
        p = snaps[-1].partition("test1", 0) if snaps else None
        return p.leader if p else None

    old = wait(leader_on_feed, 20, "test1 in the live feed")
    killed_at = now_ms()
    try:
        kinspect("lab", "kill", f"kafka{old}")
        # -1 is no leader at all: the controller writes it for a moment when it dies too
        new = wait(lambda: (leader := partition_state(zk, "test1", 0)["leader"]) not in (old, -1)
                   and leader, 30, "a new leader")
        wait(lambda: leader_on_feed() == new, 10, "the new leader in the live feed")
        time.sleep(1.5)  # the lab poll takes the journal's kill entry
    finally:
        feed.stop()
        thread.join(15)
        kinspect("lab", "start", f"kafka{old}")

    rec = open_recording(tmp_path / "session")
    frames = [f for i in range(len(rec.paths)) for f in rec.frames(i)]
    changed_at = next(f.t for f in frames if (p := f.snapshot.partition("test1", 0))
                      and p.leader == new)
    assert killed_at <= changed_at <= killed_at + 30_000
    kill = [x for f in frames for x in f.faults if x.get("action") == "kill"]
    assert kill and killed_at - 1000 <= int(kill[0]["ts"]) <= changed_at

    replay = ReplayFeed(rec, at_ms=changed_at - 1, paused=True)

    async def scenario() -> None:
        app = ReplayApp(replay)
        async with app.run_test(size=(120, 40)) as pilot:
            def leader() -> int | None:
                p = app.snapshot.partition("test1", 0) if app.snapshot else None
                return p.leader if p else None

            # the state in force just before the election: the old leader, or none at all when
            # the feed saw the partition leaderless for a moment
            start = rec.frame(rec.locate(changed_at - 1)).snapshot.partition("test1", 0)
            before_change = start.leader if start else None
            assert before_change != new
            await until(pilot, lambda: leader() == before_change, "the state before, paused")
            while leader() != new:  # one recorded change at a time up to the election
                before = replay.cursor
                await pilot.press("full_stop")
                await until(pilot, lambda before=before: replay.cursor != before, "a step")
                shown = rec.frame(replay.cursor).snapshot.partition("test1", 0)
                expected = shown.leader if shown else None
                # the feed moves its cursor before the app takes the frame: wait for that too
                await until(pilot, lambda expected=expected: leader() == expected,
                            "the stepped-to frame on screen")
            assert replay.position_ms == changed_at
            header = str(app.query_one("#header").render())
            assert "(epoch" in header

    asyncio.run(scenario())
