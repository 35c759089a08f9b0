"""A consumer group started for a screen: `kinspect consume run` as its own process.

The TUI's `g` key starts one on the topic of the load it started, in the same run dir, so the
post-mortem (`m`) judges the producer and the consumer side of one run together.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.load.consumers.settings import consumer_dir
from kinspect.load.rundir import load_running
from kinspect.load.runner import stop_load

OUTPUT_FILE = "consume.out"


@dataclass(frozen=True)
class ConsumerRequest:
    """What the consumer form asks for, as typed (the consume command checks every value)."""

    topic: str
    group: str = "kinspect-tui"
    commit: str = "after"
    crash_after: str = ""
    fail_rate: str = "0"
    process_ms: str = "0"

    def arguments(self) -> list[str]:
        crash = ["--crash-after", self.crash_after] if self.crash_after else []
        return ["--topic", self.topic, "--group", self.group, "--commit", self.commit,
                "--fail-rate", self.fail_rate, "--process-ms", self.process_ms, *crash]


def start_consumers(request: ConsumerRequest, run_dir: Path) -> str:
    """Start the group in the load's run dir; the line to show, or KinspectError with the
    line the consume command refused it with."""
    folder = consumer_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / OUTPUT_FILE, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kinspect", "consume", "run", *request.arguments(),
             "--run-dir", str(run_dir), "--json"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    time.sleep(0.5)
    code = proc.poll()
    if code is not None and code != 0:
        lines = (folder / OUTPUT_FILE).read_text().strip().splitlines()
        raise KinspectError(lines[-1] if lines else f"consume exited with {code}")
    return f"consumer group {request.group} started on {request.topic} (commit {request.commit})"


def consumers_running(run_dir: Path | None) -> bool:
    return run_dir is not None and load_running(consumer_dir(run_dir))


def stop_consumers(run_dir: Path) -> str:
    return ("stopping the consumer group" if stop_load(consumer_dir(run_dir))
            else "no consumer group was running")
