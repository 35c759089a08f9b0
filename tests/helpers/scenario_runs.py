"""`kinspect scenario run NAME --json` as a user runs it, and what every result must carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import kinspect

KEYS = {"scenario", "acked", "in_log", "acked_lost", "unacked_present", "duplicates",
        "expectation_met"}


def run(name: str, run_dir: Path, mode: str = "zookeeper") -> dict[str, Any]:
    proc = kinspect("scenario", "run", name, "--json", "--keep-lab", "--run-dir", str(run_dir),
                    "--mode", mode, timeout=600)
    row = dict(json.loads(proc.stdout))
    assert set(row) >= KEYS, row
    assert row["mode"] == mode
    saved = json.loads((run_dir / "scenario.json").read_text())
    assert saved["acked_lost"] == row["acked_lost"]  # the evidence stays with the run
    assert (run_dir / "postmortem" / "report.json").exists()
    return row


