"""A real acks1-isolate-leader run's events and report fields, shaped as merge() gives them."""

from __future__ import annotations

from typing import Any

from kinspect.model.events import TimelineEvent
from kinspect.postmortem.story.timeline import report_entries
from kinspect.postmortem.story.values import Report
from tests.helpers.rundirs import T0

F = T0  # the fault


def isolation_events() -> list[TimelineEvent]:
    def e(dt: int, kind: str, **fields: Any) -> TimelineEvent:
        event = TimelineEvent.from_json({"ts": F + dt, "kind": kind, "partition": None,
                                         "broker": None, "detail": kind, "source": "observer",
                                         **fields})
        assert event is not None
        return event

    return [
        e(0, "fault", action="partition", node=None, source="faults",
          detail="fault: partition kafka2 | zk1,kafka1,kafka3"),
        e(5_967, "broker_gone", broker=2),
        e(6_031, "log_leader_start", partition="test1-0", broker=1, epoch=1, offset=35_857, old=2,
          new=1, source="broker-log"),
        e(6_031, "isr_shrank", partition="test1-0", broker=2),
        e(7_546, "views_disagree_started", partition="test1-0", broker=2),
        e(14_842, "log_isr_shrink", partition="test1-0", broker=2, source="broker-log"),
        e(15_069, "fault", action="heal", node=None, source="faults",
          detail="fault: heal (all partitions removed)"),
        e(15_873, "log_follower_start", partition="test1-0", broker=2, epoch=1, offset=100_000,
          source="broker-log"),
        e(15_945, "log_truncate", partition="test1-0", broker=2, offset=35_857,
          source="broker-log"),
        e(16_015, "views_disagree_stopped", partition="test1-0", broker=1),
        e(16_015, "isr_expanded", partition="test1-0", broker=2),
    ]


def per_second() -> list[dict[str, Any]]:
    first = F // 1000 - 8
    rows = [{"second": first + i, "acked": 5_000 if i else 639, "failed": 0} for i in range(21)]
    del rows[3]  # a second without any report is a zero, not a line to its neighbours
    rows[5]["failed"] = 120
    return rows


ATTRIBUTION = [{"partition": 0, "leader_epoch": 0, "broker": 2, "count": 64_143,
                "measured": 64_143, "first_ack_ts": F - 32, "last_ack_ts": F + 12_789,
                "first_offset": 35_857, "last_offset": 99_999, "method": "measured",
                "epoch_inferred": False}]


def isolation_report() -> Report:
    """The report.json fields the TUI's report screen reads, for this run."""
    entries, _ = report_entries(isolation_events(), F)
    return Report.from_json({"run_id": "7dae37cc", "run_dir": "/tmp/run", "topic": "test1", "acks": "1",
            "engine": "pyspark", "sent": 100_000, "acked": 100_000, "failed": 0, "unknown": 0,
            "in_log": 35_857, "acked_lost": 64_143, "unacked_present": 0, "duplicates": 0,
            "reordered": 0, "other_runs_records": 0, "unavailable_ms": 0,
            "first_ack_after_fault_ms": 2,
            "explanation": "64,143 acknowledged messages were lost: broker 2 acknowledged them "
                           "at leader epoch 0 after it was cut off.",
            "per_second": per_second(), "timeline": entries, "attribution": ATTRIBUTION})


