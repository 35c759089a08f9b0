"""Today's Kafka in CI: one Kafka 4.x scenario on each backend. On processes ELR, its verdict
recounted by kcat and DuckDB and its election by Kafka's own decoder of the controller's
metadata log; on docker KRaft's zombie leader, its loss blamed by the kept segments as Kafka's
DumpLogSegments reads them. The rest of the 4.x column runs in `make matrix`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab.dist import DEFAULT_KAFKA_4
from tests.helpers.attribution import check_blame
from tests.helpers.oracles import duckdb_recount, kcat_ids, metadata_elections
from tests.helpers.scenario_runs import run

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.spark, pytest.mark.resets_lab]


@pytest.mark.extended  # scenario round trips on 4.x: make matrix (CI: wire answers on 4.x)
@pytest.mark.backends("process")
def test_eligible_leader_replicas_bring_a_replica_out_of_the_isr_back_as_leader(
        lab_session: Any, lab_backend: str, tmp_path: Path) -> None:
    lab_session.down()  # the scenario makes its own lab, on this backend
    row = run("elr-last-replica-returns", tmp_path, mode="kraft", kafka="4.x", backend=lab_backend)
    status = lab_session.status()
    assert (status["backend"], status["kafka_version"]) == (lab_backend, DEFAULT_KAFKA_4)
    assert status["features"] == {"eligible.leader.replicas.version": 1}
    assert row["expectation_met"] is True, row
    assert row["acked_lost"] == 0 and row["elr_elections"] >= 1, row
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    in_log = kcat_ids(status["bootstrap"], report["topic"], report["run_id"])
    recount = duckdb_recount(tmp_path, in_log)
    assert (recount["acked"], recount["acked_lost"]) == (row["acked"], 0)
    # Kafka's own decoder of the quorum's log (ctl1's data dir, on this machine with either
    # backend) agrees on how the new leader was chosen
    metadata = lab_session.home / "lab" / "nodes" / "ctl1" / "data" / "__cluster_metadata-0"
    elected = metadata_elections(metadata, report["topic"])
    assert elected["from_elr"] == row["elr_elections"], (elected, row)
    told = [e for e in report["timeline"] if e.get("election") == "elr"]
    assert told and "from the eligible leader replicas" in told[0]["detail"]


@pytest.mark.extended
@pytest.mark.backends("docker")
def test_a_leader_the_quorum_fenced_loses_what_it_acknowledged_on_the_docker_lab(
        lab_session: Any, lab_backend: str, tmp_path: Path) -> None:
    """KRaft's zombie: cut off from the controllers only, fenced and replaced, the old leader
    keeps acknowledging acks=1 writes it later truncates; ctl1's own log is kept from its
    container with the brokers', and says it fenced the broker."""
    lab_session.down()
    row = run("kraft-fenced-leader", tmp_path, mode="kraft", kafka="4.x", backend=lab_backend)
    status = lab_session.status()
    assert (status["backend"], status["kafka_version"]) == ("docker", DEFAULT_KAFKA_4)
    assert row["expectation_met"] is True and row["acked_lost"] >= 1000, row
    assert sorted(p.name for p in (tmp_path / "broker-logs").iterdir()) == [
        "ctl1", "kafka1", "kafka2", "kafka3"]
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    fenced = [e for e in report["timeline"] if e["kind"] == "log_broker_fenced"]
    assert any(f"kafka{e['broker']}" == row["faults"][0]["nodes"][0] for e in fenced), fenced
    check_blame(tmp_path, row, status["bootstrap"])
