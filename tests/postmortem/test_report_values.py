"""The report as typed values: report.json's keys in their order, older files still readable,
and the check that the reported loss is the match's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.postmortem.story import report as rep
from kinspect.postmortem.story.values import (
    SCHEMA_VERSION,
    Attribution,
    ConsumerSide,
    Counts,
    InconsistentReport,
    Report,
)
from kinspect.tui.report_screen import numbers_text
from tests.helpers.isolation import isolation_report

# report.json's keys before schema_version existed (version 1), in their order.
V1_KEYS = [
    "engine", "run_dir", "run_id", "topic", "acks", "sent", "acked", "failed", "unknown",
    "in_log", "in_log_ids", "foreign_records", "other_runs_records", "acked_lost",
    "unacked_present", "live_lost", "unknown_present", "not_in_ledger", "client_lost", "refused",
    "duplicates", "duplicate_ids", "reordered", "partitions", "lost_ranges", "lost_ranges_more",
    "attribution", "fault", "timeline", "timeline_more", "unavailable", "unavailable_ms",
    "unavailable_total_ms", "no_leader_ms", "slow_links", "slowed_left_isr_ms", "isr_min",
    "first_ack_after_fault_ms", "first_kept_ack_after_fault_ms", "run", "inputs", "notes",
    "explanation", "out", "seconds", "per_second"]


# Keys added since, each after the key it follows: a version 1 key keeps its place.
ADDED_AFTER = {"unknown": ["indefinite"],
               "unknown_present": ["indefinite_present", "failed_present"],
               "reordered": ["offsets_rewritten", "rewritten"]}


def test_report_json_keeps_the_keys_and_their_order_with_the_version_first() -> None:
    keys = list(Report().to_json())
    expected = [k for v1 in V1_KEYS for k in (v1, *ADDED_AFTER.get(v1, []))]
    assert keys == ["schema_version", *expected] and SCHEMA_VERSION == 2
    side = ConsumerSide("g", "after")
    with_group = list(Report(consumers=side).to_json())
    assert with_group[with_group.index("explanation") + 1] == "consumers"  # as before
    assert list(side.to_json())[-1] == "explanation" and "output_counts" not in side.to_json()


def test_a_report_reads_back_what_it_wrote() -> None:
    report = isolation_report()
    text = json.dumps(report.to_json())
    assert Report.from_json(json.loads(text)) == report
    assert Report.from_json(json.loads(text)).attribution[0].epoch_inferred is False


def test_an_older_report_json_is_read_with_defaults() -> None:
    """Version 1 (no schema_version), and keys a still older file never had: a count it did
    not record is None, not 0."""
    old = Report.from_json({"acked": 10, "acked_lost": 2, "topic": "t",
                            "attribution": [{"partition": 0, "leader_epoch": 3, "broker": None,
                                             "count": 2}],
                            "timeline": [{"ts": 5, "kind": "fault", "detail": "kill"}]})
    assert (old.acked, old.acked_lost, old.refused, old.live_lost, old.consumers) == (
        10, 2, None, None, None)
    assert old.attribution == (Attribution(0, 3, None, 2),)
    assert old.attribution[0].measured is None and old.attribution[0].method is None
    assert old.per_second == ()
    assert old.run.window == (None, None) and old.inputs.broker_logs == ()
    assert Report.from_json({}) == Report()


# The first report.json (commit 384cddb, PySpark post-mortem): run A's numbers, without the
# keys later code added. What it lacks was not measured then.
FIRST_KEYS = {"refused", "client_lost", "unknown_present", "other_runs_records", "run_id",
              "unavailable_total_ms", "slow_links", "slowed_left_isr_ms", "isr_min", "live_lost",
              "indefinite", "indefinite_present", "failed_present", "offsets_rewritten",
              "rewritten"}
NOT_MEASURED = ("refused", "client_lost", "unknown_present", "other_runs_records",
                "unavailable_total_ms", "indefinite", "indefinite_present", "failed_present",
                "offsets_rewritten")
PARTITION_LATER = ("unknown_present", "other_runs", "indefinite_failed",
                   "indefinite_failed_present")


def first_report_json() -> dict[str, Any]:
    golden = json.loads((Path(__file__).parent / "data" / "scenario_a_report.json").read_text())
    old = {k: v for k, v in golden.items() if k not in FIRST_KEYS}
    old["partitions"] = [{k: v for k, v in p.items() if k not in PARTITION_LATER}
                         for p in golden["partitions"]]
    old["attribution"] = [{k: v for k, v in a.items() if k not in ("measured", "method")}
                          for a in golden["attribution"]]
    old["run"] = {k: v for k, v in golden["run"].items() if k != "window"}
    old["inputs"] = {k: v for k, v in golden["inputs"].items() if k != "replica_snapshots"}
    return old


def test_the_first_report_json_shows_what_it_did_not_measure_as_not_recorded() -> None:
    data = first_report_json()
    old = Report.from_json(data)
    # what it recorded reads as written ...
    assert (old.sent, old.acked, old.failed, old.unknown, old.acked_lost, old.duplicates) == (
        43, 31, 2, 10, 9, 1)
    assert [p.counts.acked for p in old.partitions] == [p["acked"] for p in data["partitions"]]
    # ... what it did not is unknown, never a 0 that reads as measured
    assert [getattr(old, name) for name in NOT_MEASURED] == [None] * len(NOT_MEASURED)
    assert {p.other_runs for p in old.partitions} == {None}
    assert {p.counts.unknown_present for p in old.partitions} == {None}
    assert {p.counts.indefinite for p in old.partitions} == {None}
    assert Counts.total(p.counts for p in old.partitions).client_lost is None
    assert {(a.measured, a.method) for a in old.attribution} == {(None, None)}
    assert old.to_json()["refused"] is None and old.partitions[0].to_json()["other_runs"] is None
    md = rep.markdown(old)
    for name in ("refused", "client lost", "indefinite", "failed present", "offsets rewritten"):
        assert f"| {name} | not recorded |" in md
    assert "| sent | 43 |" in md and "| acked | 31 |" in md
    assert "| not recorded |" in md.split("## Lost, by who acknowledged them")[1].splitlines()[4]
    text = numbers_text(old).plain
    assert "other runs' records  not recorded" in text and "sent  43" in text


def test_a_new_report_json_still_says_zero_where_it_counted_zero() -> None:
    """The counterpart: run A as written today has refused 0 and other runs' records 0, and
    they read back as 0, not as 'not recorded'."""
    data = json.loads((Path(__file__).parent / "data" / "scenario_a_report.json").read_text())
    now = Report.from_json(data)
    assert (now.refused, now.other_runs_records, now.unknown_present, now.client_lost) == (
        0, 0, 2, 8)
    assert "| refused | 0 |" in rep.markdown(now)
    assert "not recorded" not in rep.markdown(now) + numbers_text(now).plain


def test_the_reported_loss_must_be_the_matchs() -> None:
    report = Report(acked_lost=9)
    report.check_lost(9)
    with pytest.raises(InconsistentReport, match=r"acked_lost \(9\) is not .* \(10\)"):
        report.check_lost(10)


def test_blame_adds_up_per_broker() -> None:
    report = Report(attribution=(Attribution(0, 1, 2, 5), Attribution(1, 1, 2, 3),
                                 Attribution(0, 2, None, 1)))
    assert rep.blamed(report) == {2: 8, None: 1}
