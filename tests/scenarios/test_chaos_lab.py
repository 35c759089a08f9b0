"""The seeded nemesis on a real lab, for two minutes (CI's; `make matrix` runs ten): the faults
carried out are the ones the seed draws, in order, each repaired; the invariants hold; and the
verdict is recounted by kcat and DuckDB over the ledger, not by kinspect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.cli.scenario import duration as parse_duration
from kinspect.lab.faults import UNDO
from kinspect.scenarios.chaos import ChaosPlan, chaos_scenario, fault_words
from kinspect.scenarios.spec import STEP_FAULTS
from tests.helpers import kinspect
from tests.helpers.oracles import (
    duckdb_answers,
    duckdb_recount,
    duckdb_rewritten,
    kcat_ids,
    kcat_records,
)

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.spark, pytest.mark.resets_lab]


def chaos_run(lab_session: Any, backend: str, run_dir: Path, seed: int, duration: str,
              faults: str) -> dict[str, Any]:
    lab_session.down()  # the nemesis makes its own lab
    proc = kinspect("scenario", "chaos", "--seed", str(seed), "--duration", duration,
                    "--faults", faults, "--json", "--keep-lab", "--run-dir", str(run_dir),
                    timeout=1800, check=False, env={"KINSPECT_BACKEND": backend})
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return dict(json.loads(proc.stdout))


def check_chaos(lab_session: Any, lab_backend: str, tmp_path: Path, seed: int,
                duration: str, faults: str) -> None:
    row = chaos_run(lab_session, lab_backend, tmp_path, seed, duration, faults)
    steps = chaos_scenario(ChaosPlan(seed, parse_duration(duration), fault_words(faults))).steps
    # What was carried out is the drawn schedule: each fault, then its repair.
    expected = []
    for step in steps:
        expected += [step.do, UNDO[STEP_FAULTS[step.do][0]].value]
    assert [f["do"] for f in row["faults"]] == expected, row["faults"]
    assert row["expectation_met"] is True, row["expectation_failed"]
    assert row["faults_applied"] == len(steps)
    windows = row["loss_by_window"]
    assert windows is not None and sum(w["lost"] for w in windows) == row["acked_lost"]
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    status = lab_session.status()
    in_log = kcat_ids(status["bootstrap"], report["topic"], report["run_id"])
    recount = duckdb_recount(tmp_path, in_log)
    assert (recount["acked"], recount["acked_lost"]) == (row["acked"], row["acked_lost"])
    answers = duckdb_answers(tmp_path, in_log)  # ok, failed, indefinite (Jepsen's :info)
    assert (answers["ok"], answers["indefinite"], answers["indefinite_present"],
            answers["failed_present"]) == (row["acked"], report["indefinite"],
                                           report["indefinite_present"], report["failed_present"])
    records = kcat_records(status["bootstrap"], report["topic"])  # Jepsen's inconsistent offsets
    assert duckdb_rewritten(tmp_path, records) == report["offsets_rewritten"]
    assert json.loads((tmp_path / "chaos.json").read_text())["faults"] == row["faults"]


def test_two_minutes_of_the_seeded_nemesis(lab_session: Any, lab_backend: str,
                                           tmp_path: Path) -> None:
    """Seed 30 draws every kind asked for (kill the controller, isolate the leader, kill a
    follower, pause the leader, slow a follower); seed 7 had drawn only kills and a slow link."""
    check_chaos(lab_session, lab_backend, tmp_path, 30, "2m", "kill,pause,isolate,slow")


@pytest.mark.extended  # make matrix: ten minutes, power cuts among the faults
@pytest.mark.timeout(1800)  # ten minutes of load, then the drain, verify and post-mortem
def test_ten_minutes_of_the_seeded_nemesis_with_power_cuts(lab_session: Any, lab_backend: str,
                                                           tmp_path: Path) -> None:
    check_chaos(lab_session, lab_backend, tmp_path, 11, "10m", "kill,pause,isolate,slow,power")
