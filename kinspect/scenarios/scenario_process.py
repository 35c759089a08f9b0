"""A scenario run for a screen: `kinspect scenario run NAME` as its own process, followed.

The scenario is its own process writing its progress to RUN_DIR.log, so a screen that quits
midway does not break the experiment; `follow` hands each progress line to a callback and
returns the outcome (the judged result row and the post-mortem's report) when it ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinspect.load.rundir import POSTMORTEM_DIR, SCENARIO_FILE
from kinspect.postmortem.story.values import Report

FOLLOW_POLL_S = 0.3


@dataclass(frozen=True)
class ScenarioProcess:
    name: str
    proc: subprocess.Popen[bytes]
    run_dir: Path

    @property
    def log_path(self) -> Path:
        return self.run_dir.with_suffix(".log")


@dataclass(frozen=True)
class ScenarioOutcome:
    """How a scenario run ended: `failure` (one line) when it did not finish; else its result
    row, and its report when the post-mortem wrote one."""

    name: str
    failure: str | None
    row: dict[str, Any] | None = None
    report: Report | None = None
    report_dir: Path | None = None

    @property
    def held(self) -> bool:
        return bool(self.row and self.row.get("expectation_met"))

    def verdict(self) -> str:
        if self.failure is not None:
            return f"scenario {self.name} failed: {self.failure}"
        row = self.row or {}
        if row.get("status") == "skipped":  # a platform it needs more than (KRaft, Kafka 4.x)
            return f"{self.name}: not run: {row.get('reason')}"
        return (f"{self.name}: expected {row.get('expectation')}: "
                f"{'held' if self.held else 'did NOT hold'}")


def start_scenario(name: str, mode: str | None = None, kafka: str | None = None
                   ) -> ScenarioProcess:
    """Start the run, keeping the lab afterwards (the screen goes on showing it); `mode` and
    `kafka`: the lab's (zookeeper or kraft, its release), else the defaults."""
    from kinspect.scenarios.scenario_run import default_run_dir  # the extras: not for the screen

    run_dir = default_run_dir(name)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(run_dir.with_suffix(".log"), "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kinspect", "scenario", "run", name, "--json",
             "--keep-lab", "--run-dir", str(run_dir), *(["--mode", mode] if mode else []),
             *(["--kafka", kafka] if kafka else [])],
            stdout=subprocess.DEVNULL, stderr=out, stdin=subprocess.DEVNULL,
            start_new_session=True)
    return ScenarioProcess(name, proc, run_dir)


def follow(run: ScenarioProcess, on_line: Callable[[str], object]) -> ScenarioOutcome:
    """Every progress line to `on_line` as it is written; the outcome once the process ends."""
    last = ""
    with open(run.log_path) as log:
        while True:
            done = run.proc.poll() is not None
            for line in log.read().splitlines():
                last = line
                on_line(line)
            if done:
                break
            time.sleep(FOLLOW_POLL_S)
    result = run.run_dir / SCENARIO_FILE
    if run.proc.returncode != 0 or not result.exists():
        return ScenarioOutcome(run.name, last or f"exit code {run.proc.returncode}")
    report_dir = run.run_dir / POSTMORTEM_DIR
    report_path = report_dir / "report.json"
    report = Report.from_json(json.loads(report_path.read_text())) if report_path.exists() else None
    return ScenarioOutcome(run.name, None, json.loads(result.read_text()), report,
                           report_dir if report is not None else None)
