"""A consumer group started for a screen: `kinspect consume run` as its own process.

The TUI's `g` key starts one on the topic of the load it started, in the same run dir, so the
post-mortem (`m`) judges the producer and the consumer side of one run together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kinspect.load.consumers.settings import consumer_dir
from kinspect.load.load_process import spawn, stop_load

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
    spawn(["consume", "run", *request.arguments(), "--run-dir", str(run_dir), "--json"],
          consumer_dir(run_dir) / OUTPUT_FILE, "consume")
    return f"consumer group {request.group} started on {request.topic} (commit {request.commit})"


def stop_consumers(run_dir: Path) -> str:
    return ("stopping the consumer group" if stop_load(consumer_dir(run_dir))
            else "no consumer group was running")
