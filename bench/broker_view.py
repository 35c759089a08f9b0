"""The broker view (`b`) at 10,000 partitions: a synthetic stand-in for the cluster (bench/churn.py:
real ClusterSnapshots, every broker hosting every partition), so what is measured is kinspect.

Measured: the model's share per snapshot (hosted_by + sort + summary), the screen's redraw per
snapshot while it is open, keys while it is open (sort, move) until the app is idle again (Pilot's
press: during a failover that includes the snapshot draws in flight), and the event loop's
stalls, the longest a key can wait before it is handled; idle and during a whole-cluster
failover. There is no peer to put beside it: no other
tool's broker view can run against a stand-in; kafka-log-dirs' per-broker answer on a real lab
is in the log-dirs figures of docs/performance/index.md.

    python -m bench.broker_view [--partitions N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from bench.churn import ChurnFeed, churn_snapshot
from bench.lab import percentile
from bench.tui import LoopWatch, TimedApp, presses
from kinspect.model.brokers import hosted_by, summary, view
from kinspect.tui.broker_screen import BrokerScreen
from kinspect.tui.console import LabConsole

PARTITIONS = 10_000


def model_ms(partitions: int, rounds: int = 10) -> list[float]:
    out = []
    for round_ in range(rounds):
        snapshot, _ = churn_snapshot(partitions, round_)
        started = time.perf_counter()
        hosted = hosted_by(snapshot, 2)
        view(hosted, "health")
        summary(hosted)
        out.append((time.perf_counter() - started) * 1000)
    return out


async def on_screen(partitions: int) -> dict[str, list[float]]:
    shows: list[float] = []
    original = BrokerScreen.show

    def timed(self: BrokerScreen, snapshot: Any) -> None:
        started = time.perf_counter()
        original(self, snapshot)
        shows.append((time.perf_counter() - started) * 1000)

    BrokerScreen.show = timed  # type: ignore[method-assign]  # the bench's own hook
    feed = ChurnFeed(partitions)
    app = TimedApp(feed, LabConsole(), no_confirm=True)
    async with app.run_test(size=(160, 50)) as pilot:
        while app.snapshot is None:
            await pilot.pause(0.1)
        await pilot.press("2", "b")
        await pilot.pause(1)
        shows.clear()
        watch = LoopWatch()
        watch.start()
        idle = await presses(pilot, ["s", "down"] * 10)
        idle_stall, idle_show = watch.stop(), list(shows) or [0.0]
        feed.failing.set()
        await pilot.pause(1)
        shows.clear()
        watch.start()
        churn = await presses(pilot, ["s", "down", "pagedown", "up"] * 10)
        churn_stall, churn_show = watch.stop(), list(shows) or [0.0]
        feed.failing.clear()
    BrokerScreen.show = original  # type: ignore[method-assign]
    return {"idle_keys": idle, "idle_stall": idle_stall, "idle_show": idle_show,
            "churn_keys": churn, "churn_stall": churn_stall, "churn_show": churn_show}


def row(label: str, values: list[float]) -> str:
    return (f"| {label} | {percentile(values, 50):,.1f} | {percentile(values, 99):,.1f} | "
            f"{max(values):,.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.broker_view", description=__doc__)
    parser.add_argument("--partitions", type=int, default=PARTITIONS,
                        help=f"partitions on the broker (default {PARTITIONS:,})")
    partitions = parser.parse_args(argv).partitions
    model = model_ms(partitions)
    screen = asyncio.run(on_screen(partitions))
    print(f"\n## The broker view, {partitions:,} partitions on the broker (synthetic stand-in, ms)")
    print("| ms | p50 | p99 | max |\n|---|---:|---:|---:|")
    lines = (("model: hosted_by + sort + summary, per snapshot", model),
             ("screen: rows rebuilt per snapshot, idle", screen["idle_show"]),
             ("screen: rows rebuilt per snapshot, failover", screen["churn_show"]),
             ("key (sort, move) until the app is idle (Pilot), idle", screen["idle_keys"]),
             ("key (sort, move, page) until idle, failover (snapshot draws included)",
              screen["churn_keys"]),
             ("event-loop stall, idle", screen["idle_stall"]),
             ("event-loop stall, failover", screen["churn_stall"]))
    for label, values in lines:
        print(row(label, values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
