"""Whole scenarios on the real lab: reset, load, fault, heal, verify, PySpark post-mortem.

Each run resets the session lab with the scenario's own settings, which is why these run after
the other lab tests (see conftest). The rest of the catalog runs in `make matrix`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kinspect
from tests.helpers.attribution import check_blame
from tests.helpers.oracles import duckdb_recount, kcat_ids
from tests.helpers.scenario_runs import run

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.spark, pytest.mark.resets_lab]




@pytest.mark.extended  # CI runs isolate-zk in lesson 3 (tests/tui/test_lesson_lab.py)
def test_acksall_isolated_from_zookeeper_loses_nothing(lab_session: Any, tmp_path: Path) -> None:
    row = run("acksall-isolate-leader-zk", tmp_path)
    assert row["acked"] > 0 and row["acked_lost"] == 0, row
    assert row["in_log"] >= row["acked"] and row["expectation_met"] is True
    assert [f["do"] for f in row["faults"]] == ["isolate-zk", "heal"]


@pytest.mark.extended  # CI runs this scenario as an unprivileged user (test_rootless_lab.py)
def test_acks1_isolated_leader_loses_acknowledged_writes(lab_session: Any,
                                                         tmp_path: Path) -> None:
    row = run("acks1-isolate-leader", tmp_path)
    assert row["acked_lost"] > 0 and row["expectation_met"] is True, row
    # the load panel's live figure, as it stood when the producers were done, was the loss
    assert row["live_lost"] == row["acked_lost"], row
    assert row["in_log"] < row["acked"]
    assert row["failover_ms"] is not None and row["failover_ms"] > 0
    check_blame(tmp_path, row, lab_session.status()["bootstrap"])


@pytest.mark.extended  # CI once saw a broker of the fresh KRaft lab exit at start; see the note
def test_acks1_isolated_leader_loses_on_kraft_too(lab_session: Any, tmp_path: Path) -> None:
    """Today's Kafka: cut off from the controller quorum and the other brokers, a KRaft leader
    also keeps acknowledging acks=1 writes it later truncates, and the quorum says so."""
    row = run("acks1-isolate-leader", tmp_path, mode="kraft")
    status = lab_session.status()
    assert status["mode"] == "kraft" and status["zookeeper"] is None
    assert row["acked_lost"] >= 1000 and row["expectation_met"] is True, row
    assert row["live_lost"] == row["acked_lost"], row
    assert row["failover_ms"] is not None and row["failover_ms"] > 0
    check_blame(tmp_path, row, status["bootstrap"])
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    kinds = {e["kind"] for e in report["timeline"]}
    assert "log_broker_fenced" in kinds  # ctl1's own line, from the evidence kept
    assert not any(e["kind"] == "controller_changed" and e.get("new") not in (None, 101)
                   for e in report["timeline"]), "a broker named controller in KRaft"


@pytest.mark.extended  # CI's KRaft scenario is the acks=1 one above; `make matrix` runs this
def test_acksall_isolated_leader_loses_nothing_on_kraft(lab_session: Any,
                                                        tmp_path: Path) -> None:
    row = run("acksall-isolate-leader", tmp_path, mode="kraft")
    assert row["acked"] > 0 and row["acked_lost"] == 0, row
    assert row["in_log"] >= row["acked"] and row["expectation_met"] is True
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    in_log = kcat_ids(lab_session.status()["bootstrap"], report["topic"], report["run_id"])
    recount = duckdb_recount(tmp_path, in_log)  # kcat's read-back, recounted in DuckDB
    assert (recount["acked"], recount["acked_lost"]) == (row["acked"], 0)
    assert recount["in_log"] == row["in_log"]


@pytest.mark.extended
def test_a_run_after_a_scenario_reports_only_its_own_faults(lab_session: Any,
                                                            tmp_path: Path) -> None:
    """The TUI's l, k, m after a scenario, by the CLI (the same finish_run): the report's
    timeline holds the kill of this run and nothing from the scenario before it."""
    row = run("acks1-isolate-leader-zk", tmp_path / "scenario")
    status = lab_session.status()
    check_blame(tmp_path / "scenario", row, status["bootstrap"])
    run_dir = tmp_path / "after"
    load = subprocess.Popen([sys.executable, "-m", "kinspect", "load", "run", "--topic", "test1",
                             "--count", "40000", "--rate", "5000", "--run-dir", str(run_dir),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    time.sleep(3)
    leader = kinspect("snapshot", "--json", "--topic", "test1").stdout
    node = f"kafka{json.loads(leader)['topics'][0]['partitions'][0]['leader']}"
    kinspect("lab", "kill", node)
    load.communicate(timeout=120)
    kinspect("lab", "start", node, timeout=120)
    kinspect("verify", "--topic", "test1", "--run-dir", str(run_dir))
    report = json.loads(kinspect("postmortem", str(run_dir), "--json", "--no-chart",
                                 timeout=400).stdout)
    faults = [e for e in report["timeline"] if e["kind"] == "fault"]
    assert [(f["action"], f["node"]) for f in faults][:2] == [("kill", node), ("start", node)]
    start, end = report["run"]["window"]
    assert all(start <= e["ts"] <= end for e in report["timeline"]), report["timeline"]
    assert report["other_runs_records"] == row["in_log"]  # the scenario's, not counted as ours
    assert report["in_log"] + report["acked_lost"] >= report["acked"]


@pytest.mark.extended
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
    dup_dir = tmp_path / f"plain-{len(plain) - 1}"
    dup = json.loads((dup_dir / "postmortem" / "report.json").read_text())
    recount = duckdb_recount(dup_dir, kcat_ids(lab_session.status()["bootstrap"], "test1",
                                               dup["run_id"]))
    assert (recount["duplicates"], recount["in_log"], recount["acked_lost"]) == \
        (dup["duplicates"], dup["in_log"], dup["acked_lost"])
    row = run("duplicates-idempotent", tmp_path / "idempotent")
    assert row["duplicates"] == 0 and row["acked_lost"] == 0, row
    assert row["acked"] > 0 and row["expectation_met"] is True


@pytest.mark.extended  # CI's slow links: test_lab_faults' slow follower; the family: make matrix
def test_slow_links_shrink_the_isr_and_an_unclean_leader_loses_what_the_old_one_had(
        lab_session: Any, tmp_path: Path) -> None:
    """The slow-network family runs on any kernel (tbf + iptables where netem is missing):
    both followers' links slowed, the ISR shrinks to the leader, the leader dies, a stale
    follower leads. kcat and DuckDB recount the loss; the report ties the shrink to the links."""
    row = run("slow-network-unclean", tmp_path)
    assert row["status"] == "ran" and row["expectation_met"] is True, row
    assert row["isr_min"] == 1 and 0 < row["slowed_left_isr_ms"] <= 25_000, row
    assert [f["do"] for f in row["faults"]][:2] == ["slow", "kill"]
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    recount = duckdb_recount(tmp_path, kcat_ids(lab_session.status()["bootstrap"], "test1",
                                                report["run_id"]))
    assert recount["acked_lost"] == report["acked_lost"] > 0
    links = report["slow_links"]
    assert len(links) == 2, links
    assert all(link["left_isr_ts"] is not None and link["unslowed_ts"] is not None
               for link in links), links
    assert any("(slowed link: broker" in e["detail"] for e in report["timeline"])
    # Kafka's own word: for each slowed broker, the leader's first server.log line that
    # dropped it from the ISR, at the time the report gives (the observer sees it later)
    shrinks = kafka_isr_shrinks(tmp_path / "broker-logs", "test1-0")
    for link in links:
        dropped = next(ts for ts, removed in shrinks if link["broker"] in removed)
        assert abs(link["left_isr_ts"] - dropped) <= 1_000, (link, shrinks)


def kafka_isr_shrinks(logs: Path, partition: str) -> list[tuple[int, set[int]]]:
    """(ms, brokers dropped) for each "Shrinking ISR from A to B" line the brokers logged."""
    found = []
    pattern = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO \[Partition "
                         + re.escape(partition) + r" broker=\d+\] Shrinking ISR from ([\d,]+) to "
                         r"([\d,]*)\.")
    for log in sorted(logs.glob("*/server.log*")):
        for line in log.read_text(errors="replace").splitlines():
            if match := pattern.match(line):
                ms = int(time.mktime(time.strptime(match[1], "%Y-%m-%d %H:%M:%S")) * 1000)
                old = {int(b) for b in match[3].split(",")}
                new = {int(b) for b in match[4].split(",") if b}
                found.append((ms + int(match[2]), old - new))
    return sorted(found, key=lambda item: item[0])
