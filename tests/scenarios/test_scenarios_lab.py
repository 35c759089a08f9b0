"""Whole scenarios on the real lab: reset, load, fault, heal, verify, PySpark post-mortem.

Each run resets the session lab with the scenario's own settings, which is why these run after
the other lab tests (see conftest). The rest of the catalog runs in `make matrix`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kinspect

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.spark, pytest.mark.resets_lab]
KEYS = {"scenario", "acked", "in_log", "acked_lost", "unacked_present", "duplicates",
        "expectation_met"}


def run(name: str, run_dir: Path) -> dict[str, Any]:
    proc = kinspect("scenario", "run", name, "--json", "--keep-lab", "--run-dir", str(run_dir),
                    timeout=600)
    row = dict(json.loads(proc.stdout))
    assert set(row) >= KEYS, row
    saved = json.loads((run_dir / "scenario.json").read_text())
    assert saved["acked_lost"] == row["acked_lost"]  # the evidence stays with the run
    assert (run_dir / "postmortem" / "report.json").exists()
    return row


def test_acksall_isolated_from_zookeeper_loses_nothing(lab_session: Any, tmp_path: Path) -> None:
    row = run("acksall-isolate-leader-zk", tmp_path)
    assert row["acked"] > 0 and row["acked_lost"] == 0, row
    assert row["in_log"] >= row["acked"] and row["expectation_met"] is True
    assert [f["do"] for f in row["faults"]] == ["isolate-zk", "heal"]


def test_acks1_isolated_leader_loses_acknowledged_writes(lab_session: Any,
                                                         tmp_path: Path) -> None:
    row = run("acks1-isolate-leader", tmp_path)
    assert row["acked_lost"] > 0 and row["expectation_met"] is True, row
    assert row["in_log"] < row["acked"]
    assert row["failover_ms"] is not None and row["failover_ms"] > 0


def test_idempotence_removes_the_duplicates_retries_make(lab_session: Any,
                                                        tmp_path: Path) -> None:
    # Without idempotence a leader kill duplicates the batches in flight, unless the kill fell
    # between batches: try a few times. With it there must never be a copy.
    plain: list[int] = []
    for attempt in range(3):
        row = run("duplicates", tmp_path / f"plain-{attempt}")
        assert row["acked_lost"] == 0, row
        plain.append(row["duplicates"])
        if row["duplicates"] > 0:
            break
    assert max(plain) > 0, f"no duplicates in {len(plain)} leader kills: {plain}"
    row = run("duplicates-idempotent", tmp_path / "idempotent")
    assert row["duplicates"] == 0 and row["acked_lost"] == 0, row
    assert row["acked"] > 0 and row["expectation_met"] is True
