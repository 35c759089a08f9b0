"""`kinspect scenario run NAME --json` as a user runs it, and what every result must carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kinspect.lab.dist import resolve_version
from tests.helpers import kinspect

KEYS = {"scenario", "acked", "in_log", "acked_lost", "unacked_present", "duplicates",
        "expectation_met"}


def run(name: str, run_dir: Path, mode: str = "zookeeper", kafka: str | None = None,
        backend: str | None = None) -> dict[str, Any]:
    """The run's row; `backend`: the lab it makes when none runs (a running lab keeps its own)."""
    proc = kinspect("scenario", "run", name, "--json", "--keep-lab", "--run-dir", str(run_dir),
                    "--mode", mode, *(["--kafka", kafka] if kafka else []), timeout=600,
                    env={"KINSPECT_BACKEND": backend} if backend else None)
    row = dict(json.loads(proc.stdout))
    assert set(row) >= KEYS, row
    assert row["mode"] == mode
    if kafka is not None:
        assert row["kafka"] == resolve_version(kafka)
    saved = json.loads((run_dir / "scenario.json").read_text())
    assert saved["acked_lost"] == row["acked_lost"]  # the evidence stays with the run
    assert (run_dir / "postmortem" / "report.json").exists()
    return row


def minimal(**extra: object) -> dict[str, object]:
    """The least a scenario file may hold: its words, a [load] (defaults) and one expectation."""
    return {"name": "mine", "title": "t", "why": "because", "load": {},
            "expect": {"acked_lost": "== 0"}, **extra}
