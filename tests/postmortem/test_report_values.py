"""The report as typed values: report.json's keys in their order, older files still readable,
and the check that the reported loss is the match's."""

from __future__ import annotations

import json

import pytest

from kinspect.postmortem.story import report as rep
from kinspect.postmortem.story.values import (
    SCHEMA_VERSION,
    Attribution,
    ConsumerSide,
    InconsistentReport,
    Report,
)
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


def test_report_json_keeps_the_keys_and_their_order_with_the_version_first() -> None:
    keys = list(Report().to_json())
    assert keys == ["schema_version", *V1_KEYS] and SCHEMA_VERSION == 2
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
    """Version 1 (no schema_version), and keys a still older file never had."""
    old = Report.from_json({"acked": 10, "acked_lost": 2, "topic": "t",
                            "attribution": [{"partition": 0, "leader_epoch": 3, "broker": None,
                                             "count": 2}],
                            "timeline": [{"ts": 5, "kind": "fault", "detail": "kill"}]})
    assert (old.acked, old.acked_lost, old.refused, old.live_lost, old.consumers) == (
        10, 2, 0, None, None)
    assert old.attribution == (Attribution(0, 3, None, 2),)
    assert old.attribution[0].method is None and old.per_second == ()
    assert old.run.window == (None, None) and old.inputs.broker_logs == ()
    assert Report.from_json({}) == Report()


def test_the_reported_loss_must_be_the_matchs() -> None:
    report = Report(acked_lost=9)
    report.check_lost(9)
    with pytest.raises(InconsistentReport, match=r"acked_lost \(9\) is not .* \(10\)"):
        report.check_lost(10)


def test_blame_adds_up_per_broker() -> None:
    report = Report(attribution=(Attribution(0, 1, 2, 5), Attribution(1, 1, 2, 3),
                                 Attribution(0, 2, None, 1)))
    assert rep.blamed(report) == {2: 8, None: 1}
