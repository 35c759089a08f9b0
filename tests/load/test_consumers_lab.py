"""Consumer groups with a ledger, on the real lab, judged by the post-mortem and recounted by
tools that are not kinspect: kcat reads the topics, Kafka's kafka-consumer-groups reads the
group's offsets, DuckDB counts over the consumer ledger's files as written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab.topics import create_topics
from tests.helpers import kinspect
from tests.helpers.oracles import duckdb_consumer_recount, group_offsets, kcat_records

pytestmark = [pytest.mark.lab, pytest.mark.spark, pytest.mark.slow]
COUNTS = ("answered_for", "processed", "never_processed", "processed_twice")


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One Spark session for the module's post-mortems (each would start its own: 16 s)."""
    from kinspect.postmortem.spark.job import start_spark

    session = start_spark("local[2]")
    yield session
    session.stop()


def produce_then_consume(lab: dict[str, Any], spark: Any, run_dir: Path, topic: str,
                         group: str, *consume: str) -> dict[str, Any]:
    """A load, then a group reading it (with the given mode), verify, the post-mortem."""
    kinspect("load", "run", "--topic", topic, "--count", "12000", "--rate", "20000", "--acks",
             "all", "--run-dir", str(run_dir), "--json", "--no-timeline", timeout=300)
    summary = json.loads(kinspect("consume", "run", "--topic", topic, "--group", group,
                                  "--run-dir", str(run_dir), "--idle-stop", "8", "--json",
                                  *consume, timeout=300).stdout)
    assert summary["lag_at_end"] == 0, summary
    kinspect("verify", "--topic", topic, "--run-dir", str(run_dir), timeout=300)
    from kinspect.postmortem import run_postmortem

    return run_postmortem(run_dir, spark=spark, chart=False).to_json()


def recount(lab: dict[str, Any], run_dir: Path, topic: str, group: str,
            output: str | None = None) -> dict[str, int]:
    ends = group_offsets(lab["bootstrap"], group)
    offsets = json.loads((run_dir / "consumer" / "offsets.json").read_text())
    assert {p["partition"]: p["committed"] for p in offsets["end"]["partitions"]} == ends
    starts = {p: 0 for p in ends}  # a new group on a new topic starts at the log start
    committed = (kcat_records(lab["bootstrap"], output, "read_committed")
                 if output else None)
    return duckdb_consumer_recount(run_dir, kcat_records(lab["bootstrap"], topic), starts, ends,
                                   committed)


@pytest.mark.extended  # CI keeps transactions; make matrix runs this too
def test_auto_commit_and_a_crash_lose_records_and_say_why(lab: dict[str, Any], spark: Any,
                                                          tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"c-auto": 2})
    report = produce_then_consume(lab, spark, tmp_path, "c-auto", "g-auto", "--commit", "auto",
                                  "--auto-commit-ms", "100", "--batch", "500", "--process-ms",
                                  "1", "--crash-after", "2250")
    side = report["consumers"]
    assert side["never_processed"] > 0 and side["crashes"] == 1, side
    assert side["never_processed_by_cause"]["crash"] == side["never_processed"]
    assert side["committed_unprocessed"] == side["never_processed"]
    assert {k: side[k] for k in COUNTS} == recount(lab, tmp_path, "c-auto", "g-auto")
    assert side["answered_for"] == 12000 and report["acked_lost"] == 0
    assert "auto-committed at" in report["explanation"]
    assert "consumer 0 crashed at" in report["explanation"]


@pytest.mark.extended  # CI keeps transactions; make matrix runs this too
def test_commit_after_processing_loses_nothing_and_processes_some_twice(
        lab: dict[str, Any], spark: Any, tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"c-after": 2})
    report = produce_then_consume(lab, spark, tmp_path, "c-after", "g-after", "--commit", "after",
                                  "--batch", "500", "--process-ms", "1", "--crash-after", "2250",
                                  "--fail-rate", "0.01", "--consumers", "2")
    side = report["consumers"]
    assert side["never_processed"] == 0 and side["processed_twice"] > 0, side
    assert side["jepsen"]["nonmonotonic-poll"] > 0 and side["jepsen"]["poll-skip"] == 0
    assert {k: side[k] for k in COUNTS} == recount(lab, tmp_path, "c-after", "g-after")


def test_transactions_with_offsets_inside_lose_and_duplicate_nothing(
        lab: dict[str, Any], spark: Any, tmp_path: Path) -> None:
    create_topics(lab["bootstrap"], {"t-in": 2, "t-out": 2})
    report = produce_then_consume(lab, spark, tmp_path, "t-in", "g-txn", "--commit", "transaction",
                                  "--output", "t-out", "--batch", "200", "--fail-rate", "0.2")
    side = report["consumers"]
    assert side["never_processed"] == 0 and side["processed_twice"] == 0, side
    everything = kcat_records(lab["bootstrap"], "t-out", "read_uncommitted")
    committed = kcat_records(lab["bootstrap"], "t-out", "read_committed")
    assert side["output_counts"] == {"committed_records": len(committed),
                                     "all_records": len(everything),
                                     "aborted_visible": len(everything) - len(committed)}
    assert side["output_counts"]["aborted_visible"] > 0
    assert {k: side[k] for k in COUNTS} == recount(lab, tmp_path, "t-in", "g-txn", "t-out")
