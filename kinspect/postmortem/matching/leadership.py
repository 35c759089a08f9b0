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
    if found is None:
        return None
    return int(found[1])


def named_leader(e: TimelineEvent) -> int | None:
    """The broker a leader sighting names: the observer's new leader, else the line's own
    broker (story/timeline.py reads the sightings the same way)."""
    if e.kind in (EventKind.LEADER_CHANGED, EventKind.PARTITION_ONLINE):
        return e.new
    return e.broker


def _start_offset(e: TimelineEvent) -> int:
    """Where the leader's log stood as it began leading: only its own line says (-1)."""
    if e.kind is LogKind.LEADER_START and e.offset is not None:
        return e.offset
    return -1


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
        broker = named_leader(e)
        if broker is None or broker < 0:
            continue
        key, value = (partition, e.epoch), (rank, broker, _start_offset(e), e.ts)
        if key not in best or value[0] < best[key][0]:
            best[key] = value
    return {k: (v[1], v[2], v[3]) for k, v in best.items()}


def leaderships(events: Sequence[TimelineEvent], topic: str) -> list[Leadership]:
    """Every leadership of the topic's partitions that the timeline shows."""
    out = []
    for (partition, epoch), (broker, offset, start) in sorted(_starts(events, topic).items()):
        own = [e for e in events if e.broker == broker and e.ts > start
               and _ends_leadership(e, partition, epoch, topic)]
        end = min((e.ts for e in own), default=None)
        truncated_to, truncated_ts = _first_truncation(own)
        out.append(Leadership(partition, broker, epoch, offset, start, end, truncated_to,
                              truncated_ts))
    return out


def _ends_leadership(e: TimelineEvent, partition: int, epoch: int, topic: str) -> bool:
    """Does the (leader's own) line end its leading `partition` at `epoch`: it follows,
    truncates, or leads at another epoch?"""
    if e.kind not in ENDS_LEADERSHIP or _number(e.partition, topic) not in (partition, None):
        return False
    return not (e.kind is LogKind.LEADER_START and e.epoch == epoch)


def _first_truncation(own: Sequence[TimelineEvent]) -> tuple[int | None, int | None]:
    """The offset the broker's log was first truncated to, and when (None, None: never)."""
    truncs = [e for e in own if e.kind is LogKind.TRUNCATE and e.offset is not None]
    first = min(truncs, key=lambda e: e.ts, default=None)
    if first is None:
        return None, None
    return first.offset, first.ts
