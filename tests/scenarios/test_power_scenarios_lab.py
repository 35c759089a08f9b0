"""The power-loss scenarios on every column (ZooKeeper 3.9, KRaft 3.9, KRaft 4.x), each verdict
recounted by what is not kinspect: kcat reads what survived, DuckDB recounts the ledger against
it, and DumpLogSegments reads the batches the filesystem dropped — every acknowledged message
lost lies among them. `make matrix` runs them; CI runs tests/lab/test_power_lab.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab import power
from tests.helpers.oracles import IDENT, dump_segments, group_offsets, kcat_ids, kcat_records
from tests.helpers.scenario_runs import run

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.spark, pytest.mark.resets_lab,
              pytest.mark.extended,
              pytest.mark.skipif(power.problem() is not None,
                                 reason=f"no power loss here: {power.problem()}")]

COLUMNS = [("zookeeper", None), ("kraft", None), ("kraft", "4.x")]


def lost_ids(run_dir: Path, in_log: set[str]) -> set[str]:
    """Acknowledged in the ledger (DuckDB over its Parquet), and not in the log kcat read."""
    import duckdb

    ledger = str(run_dir / "ledger" / "p*.parquet")
    acked = {row[0] for row in duckdb.connect().execute(
        f"SELECT id FROM read_parquet('{ledger}') WHERE status = 'acked'").fetchall()}
    return acked - in_log


def dropped_ids(run_dir: Path, run_id: str) -> set[str]:
    """The run's ids in the batches the power cuts dropped, as DumpLogSegments reads them."""
    files = sorted((run_dir / "power-cuts").glob("*/*/*/*.log"))
    found = set()
    for record in dump_segments(files) if files else []:
        ident = IDENT.match(record["payload"])
        if ident and ident[1] == run_id:
            found.add(f"{ident[1]}-{ident[2]}-{ident[3]}")
    return found


@pytest.mark.parametrize(("mode", "kafka"), COLUMNS, ids=["zk-3.9", "kraft-3.9", "kraft-4.x"])
def test_a_power_cut_of_every_broker_loses_only_what_the_filesystem_dropped(
        lab_session: Any, lab_backend: str, tmp_path: Path, mode: str, kafka: str | None
        ) -> None:
    lab_session.down()  # the scenario makes its own lab, with --power
    row = run("power-loss-all-brokers", tmp_path, mode=mode, kafka=kafka, backend=lab_backend)
    assert row["expectation_met"] is True, row
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    status = lab_session.status()
    assert status["power"] is True
    in_log = kcat_ids(status["bootstrap"], report["topic"], report["run_id"])
    lost = lost_ids(tmp_path, set(in_log))
    assert len(lost) == row["acked_lost"] >= 1000
    assert lost <= dropped_ids(tmp_path, report["run_id"])
    assert report["power_cut"]["nodes"] == ["kafka1", "kafka2", "kafka3"]
    assert "never on disk" in report["explanation"]


@pytest.mark.parametrize(("mode", "kafka"), COLUMNS, ids=["zk-3.9", "kraft-3.9", "kraft-4.x"])
def test_fsyncing_every_message_loses_nothing_to_the_same_power_cut(
        lab_session: Any, lab_backend: str, tmp_path: Path, mode: str, kafka: str | None
        ) -> None:
    lab_session.down()
    row = run("power-loss-flush-every-message", tmp_path, mode=mode, kafka=kafka,
              backend=lab_backend)
    assert row["expectation_met"] is True, row
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    status = lab_session.status()
    in_log = kcat_ids(status["bootstrap"], report["topic"], report["run_id"])
    assert lost_ids(tmp_path, set(in_log)) == set()


def read_by_group(run_dir: Path, run_id: str) -> list[tuple[int, int, str]]:
    """(partition, offset, id) of each record the group was handed, from its ledger's CSV
    files as written (DuckDB)."""
    import duckdb

    records = str(run_dir / "consumer" / "ledger" / "c*-i*.records.csv")
    return [(int(p), int(o), str(i)) for p, o, i in duckdb.connect().execute(
        f"SELECT DISTINCT \"partition\", \"offset\", id FROM read_csv('{records}', header = true) "
        f"WHERE run = '{run_id}'").fetchall()]


@pytest.mark.parametrize(("mode", "kafka"), COLUMNS, ids=["zk-3.9", "kraft-3.9", "kraft-4.x"])
def test_a_power_cut_under_a_committing_group_hands_its_offsets_out_again(
        lab_session: Any, lab_backend: str, tmp_path: Path, mode: str, kafka: str | None
        ) -> None:
    """Jepsen's inconsistent offsets, by kcat and the group's own ledger: an offset the group
    read before the cut holds another record after it; and the commits Kafka keeps
    (kafka-consumer-groups) point into the log that survived, not past it."""
    lab_session.down()
    row = run("power-loss-group-commits", tmp_path, mode=mode, kafka=kafka, backend=lab_backend)
    assert row["expectation_met"] is True, row
    assert row["never_processed"] is not None and row["processed_twice"] is not None
    report = json.loads((tmp_path / "postmortem" / "report.json").read_text())
    status = lab_session.status()
    now = {(p, o): ident for p, o, ident in kcat_records(status["bootstrap"], report["topic"])}
    read = read_by_group(tmp_path, report["run_id"])
    reused = [(p, o) for p, o, ident in read if (p, o) in now and now[(p, o)] != ident]
    assert reused, "no offset the group read holds another record after the power cut"
    group = json.loads((tmp_path / "consumer" / "settings.json").read_text())["group"]
    log_end: dict[int, int] = {}
    for partition, offset in now:
        log_end[partition] = max(log_end.get(partition, 0), offset + 1)
    for partition, committed in group_offsets(status["bootstrap"], group).items():
        assert committed <= log_end.get(partition, 0), (partition, committed, log_end)
