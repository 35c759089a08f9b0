"""Each broker's own history of leading a partition, from the run's timeline (pure Python).

Attribution needs more than "who led epoch E": an isolated leader keeps believing it leads
(and keeps acknowledging) long after the controller elected another, so an acknowledgement
that arrives after the election may still come from the old leader. What settles it is the
broker's own history: it began leading epoch E at offset O at time T, stopped believing so
when it logged becoming a follower, and truncated its log to offset X when it came back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kinspect.model.events import EventKind, LogKind, TimelineEvent, TimelineKind

ENDS_LEADERSHIP = {LogKind.FOLLOWER_START, LogKind.LEADER_START, LogKind.TRUNCATE}
# Who names the leader of an epoch, best first: its own line, the controller's, the observer's.
LEADER_RANK: dict[TimelineKind, int] = {LogKind.LEADER_START: 0, LogKind.LEADER_AND_ISR: 1,
                                        EventKind.LEADER_CHANGED: 2, EventKind.PARTITION_ONLINE: 2}


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


def _number(partition: str | None, topic: str) -> int | None:
    found = re.fullmatch(rf"{re.escape(topic)}-(\d+)", partition or "")
    return int(found[1]) if found else None


def _starts(events: Sequence[TimelineEvent], topic: str
            ) -> dict[tuple[int, int], tuple[int, int, int]]:
    """(partition, epoch) -> (broker, start offset, ts): the broker's own line first, then the
    controller's, then the observer's (no offset)."""
    best: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for e in events:
        rank = LEADER_RANK.get(e.kind)
        partition = _number(e.partition, topic)
        if rank is None or partition is None or e.epoch is None:
            continue
        broker = e.new if e.kind in (EventKind.LEADER_CHANGED, EventKind.PARTITION_ONLINE) \
            else e.broker
        if broker is None or broker < 0:
            continue
        offset = e.offset if e.kind is LogKind.LEADER_START and e.offset is not None else -1
        key, value = (partition, e.epoch), (rank, broker, offset, e.ts)
        if key not in best or value[0] < best[key][0]:
            best[key] = value
    return {k: (v[1], v[2], v[3]) for k, v in best.items()}


def leaderships(events: Sequence[TimelineEvent], topic: str) -> list[Leadership]:
    """Every leadership of the topic's partitions that the timeline shows."""
    out = []
    for (partition, epoch), (broker, offset, start) in sorted(_starts(events, topic).items()):
        own = [e for e in events if e.kind in ENDS_LEADERSHIP and e.broker == broker
               and e.ts > start and _number(e.partition, topic) in (partition, None)
               and not (e.kind is LogKind.LEADER_START and e.epoch == epoch)]
        end = min((e.ts for e in own), default=None)
        truncs = [e for e in own if e.kind is LogKind.TRUNCATE and e.offset is not None]
        first = min(truncs, key=lambda e: e.ts, default=None)
        out.append(Leadership(partition, broker, epoch, offset, start, end,
                              first.offset if first else None, first.ts if first else None))
    return out
