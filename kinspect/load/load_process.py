"""A load started for a screen: `kinspect load run` as its own process, and its status.

The TUI's `l` key starts one here and follows it through `load_status` once a second; the load
outlives the TUI (quitting says which keep running), and stops through `stop_load`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.load.consumers.settings import consumer_dir
from kinspect.load.consumers.stats import STATS_DIR, read_consumer_stats
from kinspect.load.liveloss import LiveLoss
from kinspect.load.rundir import SETTINGS_FILE, load_running, new_run_dir
from kinspect.load.trend import RateSample

__all__ = ["LoadRequest", "LoadStatus", "load_status", "start_load", "stop_load"]

OUTPUT_FILE = "load.out"  # the process's own output: its last line says why it failed


@dataclass(frozen=True)
class LoadRequest:
    """What the load form asks for, as typed (the load command checks every value)."""

    topic: str = "test1"
    acks: str = "1"
    rate: str = "10000"
    count: str = "100000"
    producers: str = "1"

    def arguments(self) -> list[str]:
        return ["--topic", self.topic, "--acks", self.acks, "--rate", self.rate,
                "--count", self.count, "--producers", self.producers]


@dataclass(frozen=True)
class LoadStatus:
    run_dir: Path
    running: bool
    settings: Mapping[str, Any]
    stats: Mapping[str, Any]
    consumers: Mapping[str, Any] | None = None  # the group reading along: counters, running
    live: LiveLoss | None = None  # acknowledgements judged against the leaders now (the feed's)
    trend: tuple[RateSample, ...] = ()  # acked/failed per second, faults marked (the feed's)


def spawn(arguments: list[str], output: Path, what: str) -> None:
    """`kinspect ARGUMENTS` as a process of its own (it outlives the screen), its output in
    `output`; KinspectError with its last line when it refuses at once (bad input)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kinspect", *arguments], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    time.sleep(0.5)
    code = proc.poll()
    if code is not None and code != 0:
        lines = output.read_text().strip().splitlines()
        raise KinspectError(lines[-1] if lines else f"{what} exited with {code}")


def start_load(request: LoadRequest, origin: str = "tui") -> Path:
    """Start the load in a run dir of its own; its run dir, or KinspectError with the line the
    load command refused it with (a bad rate, an unknown topic)."""
    run_dir = new_run_dir()
    spawn(["load", "run", *request.arguments(), "--run-dir", str(run_dir), "--json",
           "--origin", origin], run_dir / OUTPUT_FILE, "load")
    return run_dir


def load_status(run_dir: Path | None) -> LoadStatus | None:
    """The run's settings, whether its load still runs, and its counters (None: no run)."""
    if run_dir is None:
        return None
    from kinspect.load.runstats import aggregate, read_stats  # the load extra, once one runs

    try:
        settings = json.loads((run_dir / SETTINGS_FILE).read_text())
    except (OSError, ValueError):
        settings = {}  # not written yet: the load is starting
    consumers = None
    if (consumer_dir(run_dir) / STATS_DIR).is_dir():
        consumers = {**read_consumer_stats(run_dir),
                     "running": load_running(consumer_dir(run_dir))}
    return LoadStatus(run_dir, load_running(run_dir), settings, aggregate(read_stats(run_dir)),
                      consumers)


def stop_load(run_dir: Path) -> bool:
    """`producer_run.stop_load`, imported when asked: the screen opens without the load extra."""
    from kinspect.load import producer_run

    return producer_run.stop_load(run_dir)
