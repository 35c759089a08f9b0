"""TUI responsiveness with 2,000 partitions: refresh latency and key response under churn.

Refresh latency: from the snapshot's build (taken_at) to the table updated on screen.
Key response: wall time of a key press until Textual has processed it and repainted (Pilot),
idle and while a broker dies and 2,000 partitions change leaders and ISRs at once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from typing import Any

from bench.lab import bench_lab, describe
from bench.observer import BIG_PARTITIONS, _create_big_topic
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole
from kinspect.tui.feed import LiveFeed, SnapshotArrived
from kinspect.tui.widgets import PartitionTable


async def presses(pilot: Any, keys: list[str]) -> list[float]:
    out = []
    for key in keys:
        started = time.perf_counter()
        await pilot.press(key)
        out.append((time.perf_counter() - started) * 1000)
        await pilot.pause(0.05)
    return out


class LoopWatch:
    """How late a 50 ms sleep wakes up on the app's own event loop: the longest stall is
    the longest a key could wait before Textual even sees it."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.05)
            self.lags.append((time.perf_counter() - started - 0.05) * 1000)

    def start(self) -> None:
        self.lags.clear()
        self.task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> list[float]:
        if self.task:
            self.task.cancel()
        return list(self.lags) or [0.0]


class TimedApp(KinspectApp):
    """The app, timing each draw: (snapshot taken → on screen, table update) in ms. The
    product keeps no benchmark hook; the measurement lives here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.render_log: list[tuple[float, float]] = []
        self.events_seen: Counter[str] = Counter()

    def _draw(self, message: SnapshotArrived) -> None:
        latest = message.latest()
        if latest is None:
            return
        snapshot, events = latest
        super()._draw(SnapshotArrived(snapshot, events))
        if self.snapshot is snapshot:
            lag = time.time() * 1000 - snapshot.taken_at
            self.render_log.append((lag, self.last_render_ms))
            self.events_seen.update(str(event.kind) for event in events)

    def unsettled(self) -> list[str]:
        """Partitions without a leader or with a partial ISR: 'idle' means a cluster that is
        not changing, so the bench waits for none."""
        snapshot = self.snapshot
        if snapshot is None:
            return ["no snapshot"]
        return [f"{topic.name}-{p.partition} leader {p.leader} isr {p.isr}/{p.replicas}"
                for topic in snapshot.topics for p in topic.partitions
                if p.leader is None or len(p.isr) != len(p.replicas)]


async def measure(lab: dict[str, Any]) -> dict[str, Any]:
    expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n.get("broker_id")}
    feed = LiveFeed(lab["bootstrap"], lab["zookeeper"], True, expected, title="bench")
    app = TimedApp(feed, LabConsole(), no_confirm=True)
    async with app.run_test(size=(160, 50)) as pilot:
        deadline = time.monotonic() + 60
        while app.query_one(PartitionTable).row_count < BIG_PARTITIONS:
            if time.monotonic() > deadline:
                raise SystemExit("bench: the table never showed 2,000 partitions")
            await pilot.pause(0.2)
        settle_deadline = time.monotonic() + 60
        while app.unsettled() and time.monotonic() < settle_deadline:
            await pilot.pause(1)
        await pilot.pause(2)
        watch = LoopWatch()
        app.render_log.clear()
        app.events_seen.clear()
        watch.start()
        idle = await presses(pilot, ["down"] * 20)
        idle_stall = watch.stop()
        steady_lag = [lag for lag, _ in app.render_log]
        idle_events = dict(app.events_seen)
        subprocess.run([sys.executable, "-m", "kinspect", "lab", "kill", "kafka3"], check=True,
                       capture_output=True)
        app.render_log.clear()
        watch.start()
        churn = await presses(pilot, ["down", "up"] * 20)
        filter_keys = await presses(pilot, ["u", "u"])
        await pilot.pause(5)
        churn_stall = watch.stop()
        churn_lag = [lag for lag, _ in app.render_log]
        churn_render = [render for _, render in app.render_log]
    subprocess.run([sys.executable, "-m", "kinspect", "lab", "start", "kafka3"], check=True,
                   capture_output=True)
    return {"idle_keys": idle, "churn_keys": churn, "filter_keys": filter_keys,
            "idle_stall": idle_stall, "churn_stall": churn_stall, "steady_lag": steady_lag or [0.0],
            "churn_lag": churn_lag or [0.0], "churn_render": churn_render or [0.0],
            "idle_draws": len(steady_lag), "idle_events": idle_events, "unsettled": app.unsettled()}


def main(argv: list[str] | None = None) -> int:
    with bench_lab() as lab:
        _create_big_topic(lab["bootstrap"])
        result = asyncio.run(measure(lab))
    print(f"\n## TUI with {BIG_PARTITIONS:,} partitions (ms)")
    unsettled = result["unsettled"]
    print(f"- idle phase: {len(unsettled)} partitions unsettled {unsettled[:3]}, "
          f"{result['idle_draws']} snapshots drawn, events {result['idle_events'] or 'none'}")
    print(f"- key response, idle: {describe(result['idle_keys'])}")
    print(f"- key response while a broker dies (2,000 partitions changing): "
          f"{describe(result['churn_keys'])}")
    print(f"- `u` (rebuild the table unhealthy-only and back) during the failover: "
          f"{describe(result['filter_keys'])}")
    print(f"- event-loop stall, idle: {describe(result['idle_stall'])}")
    print(f"- event-loop stall during the failover: {describe(result['churn_stall'])}")
    print(f"- snapshot → screen, steady: {describe(result['steady_lag'])}")
    print(f"- snapshot → screen, during the failover: {describe(result['churn_lag'])}")
    print(f"- table update per snapshot during the failover: {describe(result['churn_render'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
