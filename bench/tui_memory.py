"""The TUI's memory over a shift on call: resident memory of the real app left open.

    python -m bench.tui_memory [--minutes 60] [--partitions 70 | --synthetic 10000]

Without --synthetic: the app (headless, the real KinspectApp and LiveFeed, recording off) on
the running lab, or a lab of its own, as `kinspect ui` would show it; --partitions N first
grows the lab's topics to N partitions (a topic `bench-memory` below 1,000, else
bench/snapshot.py's topics of 1,000 at RF 2). With --synthetic N: the
same app fed by the synthetic stand-in (bench/churn.py, idle: an unchanged picture of N
partitions once a second, as the observer's poll). The process's RSS is sampled every 10 s;
flat means the last quarter of the run ends no higher than the first quarter's peak plus 5%.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import tracemalloc
from pathlib import Path

from bench import memory_parts
from bench.churn import ChurnFeed
from bench.lab import bench_lab
from bench.snapshot import TOPIC_SIZE, grow
from bench.tui import LoopWatch
from kinspect.lab.topics import create_topics
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole
from kinspect.tui.feed import Feed, LiveFeed

SAMPLE_S = 10.0
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE / 1e6


class Parted:
    """With --parts: where the memory is (bench/memory_parts.py) every `every_min`, what grew
    since the last, and with --trace the lines whose Python allocations grew most."""

    def __init__(self, every_min: float, trace: bool) -> None:
        self.every_s, self.trace = every_min * 60, trace
        self.due = 0.0
        self.last: memory_parts.Parts | None = None
        self.last_trace: tracemalloc.Snapshot | None = None
        if trace:
            tracemalloc.start(8)

    def maybe(self, elapsed: float) -> None:
        if not self.every_s or elapsed < self.due:
            return
        self.due = elapsed + self.every_s
        parts = memory_parts.sample()
        print(f"\n[{elapsed / 60:5.1f} min] RSS {rss_mb():.0f} MB; {parts.line()}", flush=True)
        if self.last is not None:
            print(f"  grew: {memory_parts.grown(self.last, parts)}", flush=True)
        self.last = parts
        if self.trace:
            self.traced()

    def traced(self) -> None:
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)])
        print(f"  traced {tracemalloc.get_traced_memory()[0] / 1e6:.1f} MB", flush=True)
        if self.last_trace is not None:
            for stat in snap.compare_to(self.last_trace, "traceback")[:6]:
                print(f"  {stat.size_diff / 1e3:+.0f} kB {stat.count_diff:+} blocks:", flush=True)
                for frame in stat.traceback.format()[-8:]:
                    print(f"      {frame}", flush=True)
        self.last_trace = snap


async def watch(feed: Feed, minutes: float, parted: Parted | None = None
                ) -> tuple[list[tuple[float, float]], str]:
    """(minutes since start, RSS MB) every SAMPLE_S while the app runs, and what was watched
    (partitions, the full collections the app ran and the last one's cost, the event loop's
    stalls: how late a 50 ms sleep woke, as bench/tui.py measures them)."""
    app = KinspectApp(feed, LabConsole(), no_confirm=True)
    samples: list[tuple[float, float]] = []
    loop = LoopWatch()
    async with app.run_test(size=(160, 50)) as pilot:
        loop.start()
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < minutes * 60:
            samples.append((elapsed / 60, rss_mb()))
            if parted is not None:
                parted.maybe(elapsed)
            if sys.stderr.isatty():
                print(f"\r  {elapsed / 60:5.1f} min  {samples[-1][1]:6.1f} MB", end="",
                      file=sys.stderr)
            await pilot.pause(SAMPLE_S)
        lags = sorted(loop.stop())
        collector, snapshot = app.collector, app.snapshot
        partitions = len(snapshot.partitions()) if snapshot else 0
        seen = (f"{partitions:,} partitions; {collector.collections} full collections, "
                f"the last {collector.cost_s * 1000:.0f} ms; event-loop stall p50 "
                f"{lags[len(lags) // 2]:.0f} ms, p99 {lags[int(len(lags) * 0.99)]:.0f} ms, "
                f"max {lags[-1]:.0f} ms over {len(lags):,} wake-ups")
    return samples, seen


def verdict(samples: list[tuple[float, float]]) -> str:
    quarter = max(1, len(samples) // 4)
    first, last = max(m for _, m in samples[:quarter]), max(m for _, m in samples[-quarter:])
    return (f"first quarter's peak {first:.0f} MB, last quarter's {last:.0f} MB: "
            + ("flat" if last <= first * 1.05 else f"grew {100 * (last / first - 1):.0f}%"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--synthetic", type=int, default=0, metavar="PARTITIONS")
    parser.add_argument("--partitions", type=int, default=0,
                        help="grow the lab to this many partitions first")
    parser.add_argument("--parts", type=float, default=0.0, metavar="MINUTES",
                        help="say where the memory is every MINUTES (bench/memory_parts.py)")
    parser.add_argument("--trace", action="store_true",
                        help="with --parts, also tracemalloc's growth by line (slows the app)")
    args = parser.parse_args(argv)
    parted = Parted(args.parts, args.trace) if args.parts else None
    if args.synthetic:
        label = f"synthetic stand-in, {args.synthetic:,} partitions"
        samples, seen = asyncio.run(watch(ChurnFeed(args.synthetic), args.minutes, parted))
    else:
        with bench_lab() as lab:
            label = "the lab"
            if args.partitions >= TOPIC_SIZE:
                grow(lab["bootstrap"], args.partitions, 2)
            elif args.partitions:
                create_topics(lab["bootstrap"], {"bench-memory": args.partitions})
            feed = LiveFeed(lab["bootstrap"], lab.get("zookeeper"), lab_backed=True,
                            title="lab", record=False)
            samples, seen = asyncio.run(watch(feed, args.minutes, parted))
    print(f"\n## TUI memory over {args.minutes:.0f} min ({label}: {seen})")
    marks = sorted({round(args.minutes * f) for f in (0.05, 0.25, 0.5, 0.75, 1.0)})
    for mark in marks:
        minute, mb = min(samples, key=lambda s: abs(s[0] - mark))
        print(f"- {minute:5.1f} min: {mb:.0f} MB")
    print(f"- {verdict(samples)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
