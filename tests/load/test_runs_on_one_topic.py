"""A topic used by several runs: each run's verdict counts its own messages only, and agrees with
kcat (what the topic holds) and DuckDB (a recount of the ledger)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab.topics import create_topics
from tests.helpers import kinspect
from tests.helpers.oracles import duckdb_recount, kcat_ids

pytestmark = [pytest.mark.lab, pytest.mark.spark, pytest.mark.slow]


def finish(run_dir: Path, topic: str) -> dict[str, Any]:
    kinspect("verify", "--topic", topic, "--run-dir", str(run_dir), "--json")
    return dict(json.loads(kinspect("postmortem", str(run_dir), "--json", "--no-chart",
                                    timeout=400).stdout))


def test_two_runs_on_one_topic_each_report_their_own(lab: dict[str, Any], tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"reused": 1})
    reports = []
    for name in ("first", "second"):
        run_dir = tmp_path / name
        kinspect("load", "run", "--topic", "reused", "--count", "3000", "--rate", "3000",
                 "--acks", "all", "--run-dir", str(run_dir), "--json", timeout=300)
        reports.append((run_dir, finish(run_dir, "reused")))
    (first_dir, first), (second_dir, second) = reports
    assert first["run_id"] != second["run_id"]
    for run_dir, report in reports:
        assert (report["acked"], report["in_log"], report["acked_lost"]) == (3000, 3000, 0), report
        assert report["duplicates"] == 0 and report["unacked_present"] == 0
        assert report["not_in_ledger"] == 0
        # the oracles: kcat's ids of this run, and DuckDB's recount of its ledger
        ids = kcat_ids(lab["bootstrap"], "reused", report["run_id"])
        recount = duckdb_recount(run_dir, ids)
        assert recount == {"acked": report["acked"], "acked_lost": report["acked_lost"],
                           "unacked_or_unknown_present": report["unacked_present"],
                           "duplicates": report["duplicates"], "in_log": report["in_log"]}
    assert first["other_runs_records"] == 0
    assert second["other_runs_records"] == 3000  # the first run's records, counted apart
    # Verifying the first run again, after the second wrote, still gives its own verdict.
    again = finish(first_dir, "reused")
    assert (again["in_log"], again["duplicates"], again["other_runs_records"]) == (3000, 0, 3000)
    assert second["run"]["window"][0] > first["run"]["window"][1] - 1  # windows do not overlap
    assert second_dir != first_dir
