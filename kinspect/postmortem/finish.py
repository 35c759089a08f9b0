"""Finishing a run: verify (read the final log back) → keep the evidence → the post-mortem.

One pipeline for every front end: `kinspect verify` runs its first half, and the TUI's `m`
and the scenario runner run all of it, so a run is judged the same way whoever started it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.lab.state import LabState
from kinspect.load.consumers.settings import (
    OUTPUT_ALL_DIR,
    OUTPUT_COMMITTED_DIR,
    ConsumeSettings,
    consumer_dir,
)
from kinspect.load.rundir import (
    PID_FILE,
    SETTINGS_FILE,
    VERIFY_FILE,
    load_running,
    mark,
    now_ms,
    runs_root,
)
from kinspect.load.runsettings import LoadSettings
from kinspect.load.verify import Count, PartitionRead, verify
from kinspect.postmortem.evidence.keep import collect_lab_evidence
from kinspect.postmortem.story.values import Report

Say = Callable[[str], None]
AGREE_WAIT_S = 30.0  # a healed zombie learns it is no longer leader within a few seconds


@dataclass(frozen=True)
class Verified:
    topic: str
    reads: list[PartitionRead]
    kept: list[str]
    warnings: list[str]


def verify_run(run_dir: Path, bootstrap: str, config: dict[str, str] | None = None,
               lab: LabState | None = None, say: Say | None = None,
               timeout_s: float | None = None, count: Count | None = None) -> Verified:
    """Read the run's topic back and keep the lab's evidence for its window. timeout_s
    limits each read (None: scaled to the records to read); count(done, total) follows it."""
    say = say or (lambda _line: None)
    if not run_dir.is_dir():
        raise KinspectError(f"run dir {run_dir} does not exist")
    settings = LoadSettings.load(run_dir)
    if load_running(run_dir):
        raise KinspectError(f"the load of {run_dir} is still running: stop it first "
                            f"(kinspect load stop --run-dir {run_dir})")
    warnings = [f"a load on {settings.topic} is still running in {other}: the final log may "
                "still grow" for other in loads_on(settings.topic) if other != run_dir.resolve()]
    if lab is not None:
        disagree = wait_for_agreement(lab, settings.topic, AGREE_WAIT_S, say)
        if disagree:
            warnings.append(f"after {AGREE_WAIT_S:.0f} s the brokers and ZooKeeper still "
                            f"disagree about the leader of {disagree}: the final log may change")
    for line in warnings:
        say(line)
    consumers = consumers_of(run_dir)
    say(f"reading {settings.topic} back to its high watermark…")
    reads = verify(bootstrap, settings.topic, run_dir, timeout_s, say, config, count=count)
    if consumers is not None and consumers.output is not None:
        say(f"reading the output {consumers.output} back, as read_committed and "
            "read_uncommitted consumers see it…")
        verify(bootstrap, consumers.output, run_dir, timeout_s, say, config,
               "read_committed", OUTPUT_COMMITTED_DIR, count)
        verify(bootstrap, consumers.output, run_dir, timeout_s, say, config,
               "read_uncommitted", OUTPUT_ALL_DIR, count)
    info = mark(run_dir, verified_at_ms=now_ms())
    (run_dir / VERIFY_FILE).write_text(json.dumps({"warnings": warnings, "partitions": [
        {"partition": r.partition, "log_start": r.log_start, "high_watermark": r.high_watermark,
         "records": r.records} for r in reads]}, indent=2) + "\n")
    kept: list[str] = []
    if lab is not None:
        window = info.window() if info else _legacy_window(run_dir)
        kept = collect_lab_evidence(run_dir, lab, window, settings.topic)
    return Verified(settings.topic, reads, kept, warnings)


def consumers_of(run_dir: Path) -> ConsumeSettings | None:
    """The settings of the consumer group that ran in this run dir (None: none ran); a
    group still running is refused, as a running load is."""
    if not (consumer_dir(run_dir) / "settings.json").is_file():
        return None
    if load_running(consumer_dir(run_dir)):
        raise KinspectError(f"the consumers of {run_dir} are still running: stop them first "
                            f"(kinspect consume stop --run-dir {run_dir})")
    return ConsumeSettings.load(run_dir)


def finish_run(run_dir: Path, bootstrap: str, config: dict[str, str] | None = None,
               lab: LabState | None = None, say: Say | None = None, spark: Any = None,
               chart: bool = True) -> Report:
    """verify → evidence → the PySpark post-mortem; returns the report. The post-mortem runs
    on `spark`, else on the warm engine when one runs (the TUI starts it), else cold."""
    from kinspect.postmortem import run_postmortem
    from kinspect.postmortem.spark.spark_client import postmortem_if_warm

    verify_run(run_dir, bootstrap, config, lab, say)
    report = postmortem_if_warm(run_dir, chart=chart, say=say) if spark is None else None
    return report or run_postmortem(run_dir, progress=say, spark=spark, chart=chart)


def loads_on(topic: str) -> list[Path]:
    """Run dirs under $KINSPECT_HOME/runs whose load on this topic is still running."""
    root = runs_root()
    if not root.is_dir():
        return []
    out = []
    for pid_file in root.glob(f"*/{PID_FILE}"):
        run_dir = pid_file.parent
        try:
            same = LoadSettings.load(run_dir).topic == topic
        except (KinspectError, TypeError, ValueError):
            continue
        if same and load_running(run_dir):
            out.append(run_dir.resolve())
    return out


def wait_for_agreement(lab: LabState, topic: str, timeout_s: float, say: Say) -> str | None:
    """Wait until every running broker names the leader the controller decided (ZooKeeper's,
    or in KRaft the newest epoch any broker has) for each partition of the topic; the first
    partition still in dispute after the timeout, else None."""
    from kinspect.clients.wire import ask_metadata
    from kinspect.lab.decision_link import lab_decisions

    judge = "the controller quorum" if lab.kraft else "ZooKeeper"
    try:
        with lab_decisions(lab, 5.0) as decided:
            deadline, told = time.monotonic() + timeout_s, False
            while True:
                disputed = _disputed(decided.leaders(topic), lab, topic, ask_metadata, judge)
                if disputed is None or time.monotonic() > deadline:
                    return disputed
                if not told:
                    say(f"waiting for the brokers to agree with {judge} about {disputed}…")
                    told = True
                time.sleep(0.5)
    except KinspectError:
        return None  # no ZooKeeper to compare with: nothing to wait for


def _disputed(leaders: dict[int, int | None], lab: LabState, topic: str, ask: Any,
              judge: str = "ZooKeeper") -> str | None:
    for broker in lab.brokers:
        if broker.state != "running":
            continue
        try:
            answer = ask(broker.address)
        except OSError:
            continue
        for partition, leader in sorted(leaders.items()):
            claim = answer.partitions.get((topic, partition))
            if claim is not None and claim.leader != leader:
                return f"{topic}-{partition} ({broker.name} says {claim.leader}, {judge} {leader})"
    return None


def _legacy_window(run_dir: Path) -> tuple[int, int]:
    """A run dir made before run.json: from its settings file to now."""
    settings = run_dir / SETTINGS_FILE
    start = int(settings.stat().st_mtime * 1000) if settings.exists() else 0
    return start, now_ms()

