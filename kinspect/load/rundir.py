"""The run directory: one run's identity, its window in time, and the names of its files.

A run (a `load run`, a TUI load, a scenario) gets a run id that every message carries in its
value (`<run>-<producer>-<seq>|…`), so a topic used by many runs still gives each run its own
verdict. `run.json` records when the run began, when its load ended and when it was verified:
the evidence kept for it (faults, broker logs, replica snapshots, timeline) is cut to that
window, so a report never shows another run's faults.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.paths import kinspect_home

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

RUN_FILE = "run.json"
SETTINGS_FILE = "settings.json"
SUMMARY_FILE = "summary.json"
PID_FILE = "load.pid"
WORKERS_FILE = "workers.json"
LEDGER_DIR = "ledger"
STATS_DIR = "stats"
FAILURE_SUFFIX = ".failure"  # stats/pNNN.failure: why a worker stopped early (one line)
CRASH_SUFFIX = ".crash"  # stats/pNNN.crash: a planned crash's counts, written just before it
FINAL_LOG_DIR = "final_log"
TIMELINE_FILE = "timeline.jsonl"
FAULTS_FILE = "faults.jsonl"
BROKER_LOGS_DIR = "broker-logs"
REPLICAS_DIR = "replicas"
POWER_CUTS_DIR = "power-cuts"  # what each power cut of the run dropped (lab/power.py)
POSTMORTEM_DIR = "postmortem"
SCENARIO_FILE = "scenario.json"
VERIFY_FILE = "verify.json"  # what verify read and what it warned about

RUN_ID = re.compile(r"^[0-9a-f]{8}$")
# What a message value starts with: `<run>-<producer>-<seq>|`, or `<producer>-<seq>|` from
# kinspect before run ids (read as run None).
MESSAGE_ID = re.compile(rb"^(?:([0-9a-f]{8})-)?(\d{1,9})-(\d{1,18})\|")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_run_id() -> str:
    """Eight hex digits: short enough to read on screen, random enough never to repeat."""
    return secrets.token_hex(4)


def id_prefix(run_id: str, producer: int) -> str:
    """`<run>-<producer>-` (or `<producer>-` for a run dir made before run ids)."""
    return f"{run_id}-{producer}-" if run_id else f"{producer}-"


def parse_message_id(value: bytes | None) -> tuple[str | None, int, int] | None:
    """(run, producer, seq) from a message value, or None for a record kinspect did not write."""
    if not value:
        return None
    found = MESSAGE_ID.match(value)
    if found is None:
        return None
    run = found[1].decode() if found[1] else None
    return run, int(found[2]), int(found[3])


@dataclass(frozen=True)
class RunInfo:
    """What run.json holds. Times are wall-clock ms; None until that moment has come."""

    run_id: str
    topic: str
    origin: str  # "load", "tui", "scenario": who started it
    started_at_ms: int
    load_ended_at_ms: int | None = None
    verified_at_ms: int | None = None

    def window(self) -> tuple[int, int]:
        """From the run's start to the end of verify (or now, before verify)."""
        return self.started_at_ms, self.verified_at_ms or now_ms()


def _write_json(path: Path, value: JsonObject) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(tmp, path)


def begin_run(run_dir: Path, topic: str, origin: str, run_id: str | None = None) -> RunInfo:
    """Give a run its identity; the run dir must not hold another run already."""
    existing = read_run(run_dir)
    if existing is not None:
        raise KinspectError(f"{run_dir} already holds run {existing.run_id}; use a new --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    info = RunInfo(run_id=run_id or new_run_id(), topic=topic, origin=origin,
                   started_at_ms=now_ms())
    _write_json(run_dir / RUN_FILE, asdict(info))
    return info


def read_run(run_dir: Path) -> RunInfo | None:
    """The run's identity; None for a run dir made before run ids (or not a run dir)."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        info = RunInfo(**data)
    except (ValueError, TypeError):
        raise KinspectError(f"{path} is not a kinspect run file") from None
    if not RUN_ID.match(info.run_id):
        raise KinspectError(f"{path}: {info.run_id!r} is not a run id")
    return info


def mark(run_dir: Path, load_ended_at_ms: int | None = None,
         verified_at_ms: int | None = None) -> RunInfo | None:
    """Record when the load ended / verify finished (a legacy run dir has nothing to mark)."""
    info = read_run(run_dir)
    if info is None:
        return None
    info = replace(info, load_ended_at_ms=load_ended_at_ms or info.load_ended_at_ms,
                   verified_at_ms=verified_at_ms or info.verified_at_ms)
    _write_json(run_dir / RUN_FILE, asdict(info))
    return info


def runs_root() -> Path:
    return kinspect_home() / "runs"


def new_run_dir(name: str = "") -> Path:
    """$KINSPECT_HOME/runs/[NAME-]TIME, never one that exists already."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = runs_root() / (f"{name}-{stamp}" if name else stamp)
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def latest_run(root: Path | None = None) -> Path | None:
    """The run that began last (by its settings file, which a run writes first)."""
    runs = (root or runs_root()).glob(f"*/{SETTINGS_FILE}")
    newest = max(runs, key=lambda path: path.stat().st_mtime, default=None)
    return newest.parent if newest else None


def report_dir(run_dir: Path) -> Path:
    """Where the post-mortem writes report.json, report.md and its chart."""
    return run_dir / POSTMORTEM_DIR


def load_running(run_dir: Path) -> bool:
    """Whether the load of this run dir still runs (its runner's pid file names a live process)."""
    pid_file = run_dir / PID_FILE
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return False
    return pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether a process of that pid exists (one of another user's counts: it is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a run dir's JSON object that are fields of the dataclass `cls`: what an older
    or newer kinspect wrote beside them (a note, a field since added) is left out."""
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}
