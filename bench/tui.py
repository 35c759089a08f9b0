"""TUI responsiveness at 10,000 partitions: the line-rendered view beside the old DataTable.

Default: a synthetic stand-in feeds the real app (bench/churn.py: real ClusterSnapshots of
10,000 partitions, a whole-cluster failover in which every partition changes leader and ISR
each snapshot); what is measured is the TUI, both views in the same run, one after the other.
Key → screen: a key sent to the app until Textual has run its action and repainted
(call_after_refresh). Event-loop stall: how late a 50 ms sleep wakes (LoopWatch).

`python -m bench.tui --lab [--partitions N]` keeps the real-lab mode: 2,000 partitions on a
lab by default (bench/snapshot.py's topics past that), a broker killed, Pilot's key figures.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import time
from collections import Counter
from typing import Any, ClassVar

from textual import events
from textual.widget import Widget

from bench.churn import ChurnFeed
from bench.datatable_view import PartitionTable
from bench.lab import bench_lab, describe, percentile
from bench.observer import BIG_PARTITIONS, _create_big_topic
from bench.snapshot import grow
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole
from kinspect.tui.feed import LiveFeed
from kinspect.tui.messages import SnapshotArrived
from kinspect.tui.partition_view import PartitionView

SYNTHETIC_PARTITIONS = 10_000
IDLE_KEYS, FAILOVER_S, KEY_GAP_S, KEY_TIMEOUT_S = 30, 20.0, 0.2, 30.0


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
        snapshot, events = latest.snapshot, latest.events
        super()._draw(SnapshotArrived(latest))
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


async def measure(lab: dict[str, Any], partitions: int = BIG_PARTITIONS) -> dict[str, Any]:
    expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n.get("broker_id")}
    feed = LiveFeed(lab["bootstrap"], lab["zookeeper"], True, expected, title="bench")
    app = TimedApp(feed, LabConsole(), no_confirm=True)
    async with app.run_test(size=(160, 50)) as pilot:
        deadline = time.monotonic() + 60
        while app.query_one("#partitions").row_count < partitions:  # type: ignore[attr-defined]
            if time.monotonic() > deadline:
                raise SystemExit(f"bench: the table never showed {partitions:,} partitions")
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


def lab_main(partitions: int = BIG_PARTITIONS) -> int:
    """A real lab: 2,000 partitions at RF 3 (bench-2k), or past that bench/snapshot.py's
    topics of 1,000 at RF 2 (what three small brokers on two cores carry), kept afterwards."""
    with bench_lab() as lab:
        if partitions <= BIG_PARTITIONS:
            _create_big_topic(lab["bootstrap"])
        else:
            grow(lab["bootstrap"], partitions, 2)
        result = asyncio.run(measure(lab, partitions))
    print(f"\n## TUI with {partitions:,} partitions on a real lab (ms)")
    unsettled = result["unsettled"]
    print(f"- idle phase: {len(unsettled)} partitions unsettled {unsettled[:3]}, "
          f"{result['idle_draws']} snapshots drawn, events {result['idle_events'] or 'none'}")
    print(f"- key response, idle: {describe(result['idle_keys'])}")
    print(f"- key response while a broker dies (its partitions changing): "
          f"{describe(result['churn_keys'])}")
    print(f"- `u` (rebuild the table unhealthy-only and back) during the failover: "
          f"{describe(result['filter_keys'])}")
    print(f"- event-loop stall, idle: {describe(result['idle_stall'])}")
    print(f"- event-loop stall during the failover: {describe(result['churn_stall'])}")
    print(f"- snapshot → screen, steady: {describe(result['steady_lag'])}")
    print(f"- snapshot → screen, during the failover: {describe(result['churn_lag'])}")
    print(f"- table update per snapshot during the failover: {describe(result['churn_render'])}")
    return 0



class KeyTimed:
    """Mixed into a view: after each cursor move, note when the screen has been repainted."""

    painted: asyncio.Future[float] | None = None

    def _after_move(self) -> None:
        def stamp() -> None:
            if KeyTimed.painted is not None and not KeyTimed.painted.done():
                KeyTimed.painted.set_result(time.perf_counter())
        self.call_after_refresh(stamp)  # type: ignore[attr-defined]


class TimedLineView(PartitionView, KeyTimed):
    def action_cursor_down(self) -> None:
        super().action_cursor_down()
        self._after_move()

    def action_cursor_up(self) -> None:
        super().action_cursor_up()
        self._after_move()


class TimedTableView(PartitionTable, KeyTimed):
    def action_cursor_down(self) -> None:
        super().action_cursor_down()
        self._after_move()

    def action_cursor_up(self) -> None:
        super().action_cursor_up()
        self._after_move()


class LineApp(TimedApp):
    PARTITION_VIEW: ClassVar[type[Widget]] = TimedLineView


class TableApp(TimedApp):
    PARTITION_VIEW: ClassVar[type[Widget]] = TimedTableView


async def key_to_screen(app: KinspectApp, key: str) -> float:
    """ms from a key sent to the app (as a terminal would) until it is on screen."""
    loop = asyncio.get_running_loop()
    KeyTimed.painted = loop.create_future()
    started = time.perf_counter()
    app.post_message(events.Key(key, None))
    try:
        done = await asyncio.wait_for(KeyTimed.painted, KEY_TIMEOUT_S)
    except TimeoutError:
        return KEY_TIMEOUT_S * 1000
    return (done - started) * 1000


async def keys_for(app: KinspectApp, seconds: float | None, count: int) -> list[float]:
    out: list[float] = []
    deadline = time.monotonic() + (seconds or 1e9)
    while len(out) < count and time.monotonic() < deadline:
        out.append(await key_to_screen(app, "down" if len(out) % 2 == 0 else "up"))
        await asyncio.sleep(KEY_GAP_S)
    return out


async def synthetic(app_class: type[TimedApp], partitions: int) -> dict[str, Any]:
    feed = ChurnFeed(partitions)
    app = app_class(feed, LabConsole(), no_confirm=True)
    started = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        while app.snapshot is None or not app.render_log:
            await pilot.pause(0.1)
        first_s = time.perf_counter() - started
        await pilot.pause(2)
        watch = LoopWatch()
        app.render_log.clear()
        watch.start()
        idle = await keys_for(app, None, IDLE_KEYS)
        idle_stall = watch.stop()
        idle_render = [r for _, r in app.render_log] or [0.0]
        feed.failing.set()
        await pilot.pause(1)  # the first failover snapshots are on their way
        app.render_log.clear()
        watch.start()
        churn = await keys_for(app, FAILOVER_S, 10_000)
        churn_stall = watch.stop()
        churn_render = [r for _, r in app.render_log] or [0.0]
        churn_lag = [lag for lag, _ in app.render_log] or [0.0]
        feed.failing.clear()
    return {"first_s": first_s, "idle_keys": idle, "idle_stall": idle_stall,
            "idle_render": idle_render, "churn_keys": churn, "churn_stall": churn_stall,
            "churn_render": churn_render, "churn_lag": churn_lag,
            "built_ms": feed.built_ms or [0.0]}


def row(label: str, values: list[float]) -> str:
    return (f"| {label} | {percentile(values, 50):,.0f} | {percentile(values, 99):,.0f} | "
            f"{max(values):,.0f} |")


def synthetic_main(partitions: int = SYNTHETIC_PARTITIONS) -> int:
    results = {}
    views: tuple[tuple[str, type[TimedApp]], ...] = (("line view", LineApp), ("DataTable", TableApp))
    if partitions > SYNTHETIC_PARTITIONS:  # the old DataTable is compared at 10,000 only
        views = views[:1]
    for name, app_class in views:
        print(f"bench: {name}, {partitions:,} partitions (synthetic stand-in) …", file=sys.stderr)
        results[name] = asyncio.run(synthetic(app_class, partitions))
    print(f"\n## TUI with {partitions:,} partitions, synthetic stand-in for the cluster (ms)")
    print("A thread builds real ClusterSnapshots (bench/churn.py); the failover moves every "
          "partition's leader and ISR each snapshot, every 0.25 s. The TUI is what is measured.")
    for name, result in results.items():
        print(f"\n### {name}: first snapshot on screen after {result['first_s']:.1f} s; "
              f"{len(result['churn_render'])} snapshots drawn during the failover")
        print("| ms | p50 | p99 | max |\n|---|---:|---:|---:|")
        print(row("key → screen, idle", result["idle_keys"]))
        print(row("key → screen, during the failover", result["churn_keys"]))
        print(row("event-loop stall, idle", result["idle_stall"]))
        print(row("event-loop stall during the failover", result["churn_stall"]))
        print(row("draw per snapshot, idle", result["idle_render"]))
        print(row("draw per snapshot during the failover", result["churn_render"]))
        print(row("snapshot built → on screen, failover", result["churn_lag"]))
        print(row("stand-in: building and assessing one snapshot (its thread)",
                  result["built_ms"]))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nPeak resident memory of the bench process (app and stand-in): {peak:,.0f} MB")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tui", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lab", action="store_true", help="measure on the running lab (or one "
                        "started for the run) instead of the synthetic stand-in")
    parser.add_argument("--partitions", type=int, default=None,
                        help=f"partitions (default {SYNTHETIC_PARTITIONS:,} synthetic, "
                        f"{BIG_PARTITIONS:,} on a lab)")
    args = parser.parse_args(argv)
    if args.lab:
        return lab_main(args.partitions or BIG_PARTITIONS)
    return synthetic_main(args.partitions or SYNTHETIC_PARTITIONS)


if __name__ == "__main__":
    sys.exit(main())
