"""Checks of a loss scenario's verdict against evidence kinspect did not interpret itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.oracles import duckdb_recount, held_by, kcat_ids


def isolated_broker(row: dict[str, Any]) -> int:
    node = row["faults"][0]["nodes"][0]
    assert node.startswith("kafka"), row["faults"]
    return int(node[len("kafka"):])


def check_blame(run_dir: Path, row: dict[str, Any], bootstrap: str,
                via: tuple[str, ...] = ()) -> float:
    """≥ 99 % of the lost messages blamed on the isolated broker, confirmed by its kept
    segments as Kafka's DumpLogSegments reads them; counts recounted by kcat + DuckDB.
    Returns the share blamed on the isolated broker."""
    report = json.loads((run_dir / "postmortem" / "report.json").read_text())
    lost = report["acked_lost"]
    victim = isolated_broker(row)
    blamed = sum(a["count"] for a in report["attribution"] if a["broker"] == victim)
    share = blamed / lost
    assert share >= 0.99, report["attribution"]
    assert f"broker {victim} acknowledged them" in report["explanation"]
    # The segment evidence: the isolated broker's snapshot holds the lost messages, in batches
    # stamped with the epoch the report gives.
    held = held_by(run_dir, victim, report["run_id"])
    assert held, "no replica snapshot of the isolated broker was kept"
    in_log = kcat_ids(bootstrap, report["topic"], report["run_id"], via)
    recount = duckdb_recount(run_dir, in_log)
    assert recount["acked"] == report["acked"] and recount["acked_lost"] == lost
    assert recount["in_log"] == report["in_log"] and recount["duplicates"] == report["duplicates"]
    import duckdb

    ledger = str(run_dir / "ledger" / "p*.parquet")
    lost_ids = [r[0] for r in duckdb.connect().execute(f"SELECT id FROM read_parquet('{ledger}') "
                                         "WHERE status = 'acked'").fetchall() if r[0] not in in_log]
    epochs = {a["leader_epoch"] for a in report["attribution"] if a["broker"] == victim}
    confirmed = sum(1 for i in lost_ids if held.get(i) in epochs)
    assert confirmed >= 0.99 * lost, (confirmed, lost, epochs)
    return share
