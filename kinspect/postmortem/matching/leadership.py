"""Each broker's own history of leading a partition, from the run's timeline (pure Python).

Attribution needs more than "who led epoch E": an isolated leader keeps believing it leads
(and keeps acknowledging) long after the controller elected another, so an acknowledgement
that arrives after the election may still come from the old leader. What settles it is the
broker's own history: it began leading epoch E at offset O at time T, stopped believing so
when it logged becoming a follower, and truncated its log to offset X when it came back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ENDS_LEADERSHIP = {"log_follower_start", "log_leader_start", "log_truncate"}


@dataclass(frozen=True)
class Leadership:
    """Broker `broker` led `partition` at `epoch` from `start_offset` (-1: unknown) and
    `start_ts` until `end_ts` (None: to the end of the evidence); `truncated_to` is the first
    truncation of its log at or after it stopped leading, with its time."""

    partition: int
    broker: int
    epoch: int
    start_offset: int
    start_ts: int
    end_ts: int | None
    truncated_to: int | None
    truncated_ts: int | None

    def row(self) -> tuple[int, int, int, int, int, int | None, int | None, int | None]:
        return (self.partition, self.broker, self.epoch, self.start_offset, self.start_ts,
                self.end_ts, self.truncated_to, self.truncated_ts)


ROW_SCHEMA = ("pp int, i_broker int, i_epoch int, s_offset long, start_ts long, end_ts long, "
              "trunc_offset long, trunc_ts long")


def _number(partition: Any, topic: str) -> int | None:
    found = re.fullmatch(rf"{re.escape(topic)}-(\d+)", str(partition or ""))
    return int(found[1]) if found else None


def _starts(events: list[dict[str, Any]], topic: str) -> dict[tuple[int, int], tuple[int, int, int]]:
    """(partition, epoch) -> (broker, start offset, ts): the broker's own line first, then the
    controller's, then the observer's (no offset)."""
    rank = {"log_leader_start": 0, "log_leader_and_isr": 1, "leader_changed": 2, "partition_online": 2}
    best: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for e in events:
        kind = e.get("kind")
        partition = _number(e.get("partition"), topic)
        if kind not in rank or partition is None or e.get("epoch") is None:
            continue
        broker = e.get("new") if kind in {"leader_changed", "partition_online"} else e.get("broker")
        if broker is None or int(broker) < 0:
            continue
        offset = int(e["offset"]) if kind == "log_leader_start" and e.get("offset") is not None else -1
        key, value = (partition, int(e["epoch"])), (rank[kind], int(broker), offset, int(e["ts"]))
        if key not in best or value[0] < best[key][0]:
            best[key] = value
    return {k: (v[1], v[2], v[3]) for k, v in best.items()}


def leaderships(events: list[dict[str, Any]], topic: str) -> list[Leadership]:
    """Every leadership of the topic's partitions that the timeline shows."""
    out = []
    for (partition, epoch), (broker, offset, start) in sorted(_starts(events, topic).items()):
        own = [e for e in events if e.get("kind") in ENDS_LEADERSHIP and e.get("broker") == broker
               and int(e["ts"]) > start and _number(e.get("partition"), topic) in (partition, None)
               and not (e["kind"] == "log_leader_start" and e.get("epoch") == epoch)]
        end = min((int(e["ts"]) for e in own), default=None)
        truncs = [e for e in own if e["kind"] == "log_truncate" and e.get("offset") is not None]
        first = min(truncs, key=lambda e: int(e["ts"]), default=None)
        out.append(Leadership(partition, broker, epoch, offset, start, end,
                              int(first["offset"]) if first else None,
                              int(first["ts"]) if first else None))
    return out
