"""Observer events, fault journal and broker log lines merged into one timeline (pure Python).

It answers the questions the counts raise: which broker led a given leader epoch, when the
next epoch began, when a partition had no leader, and what the fault was. One fact is one line:
an election the observer saw, the controller logged and the new leader logged is one entry with
three `sources` (see `fold`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from kinspect.lab.faults import FaultKind, hurts
from kinspect.lab.topology import broker_id_of
from kinspect.model.controller_moves import ControllerMove, ControllerMoves, ControllerState
from kinspect.model.events import (
    EventKind,
    JournalKind,
    JsonObject,
    LogKind,
    Source,
    TimelineEvent,
    TimelineKind,
    controller_event,
)
from kinspect.postmortem.matching.leadership import LEADER_RANK, named_leader
from kinspect.postmortem.story.values import Unavailable

T = TypeVar("T")
TIMELINE_CAP = 400
BEFORE_MS = 60_000  # timeline kept from a minute before the first send ...
AFTER_MS = 600_000  # ... to ten minutes after the last ack (truncation comes after the heal)
FOLD_MS = 5_000  # sightings of one fact this close together are one line

# Each fact's kinds, best first: the first one present is the folded entry's kind and detail.
# For an election that is also epoch_leaders' order: the leader's own line, the controller's, ours.
ELECTION: tuple[TimelineKind, ...] = (LogKind.LEADER_START, LogKind.LEADER_AND_ISR,
                                      EventKind.LEADER_CHANGED, EventKind.PARTITION_ONLINE,
                                      LogKind.FOLLOWER_START)
SHRANK: tuple[TimelineKind, ...] = (LogKind.ISR_SHRINK, EventKind.ISR_SHRANK)
EXPANDED: tuple[TimelineKind, ...] = (LogKind.ISR_EXPAND, EventKind.ISR_EXPANDED)
ISR = (*SHRANK, *EXPANDED)
CONTROLLER: tuple[TimelineKind, ...] = (EventKind.CONTROLLER_CHANGED, LogKind.CONTROLLER_ELECTED)
REGISTERED: tuple[TimelineKind, ...] = (LogKind.BROKER_REGISTERED, EventKind.BROKER_REGISTERED)
# ZooKeeper ended a broker's session: ZooKeeper's own line, the controller's, the observer's
GONE: tuple[TimelineKind, ...] = (LogKind.SESSION_EXPIRED, LogKind.BROKER_GONE,
                                  EventKind.BROKER_GONE)
# KRaft: the quorum stopped counting on it
FENCED: tuple[TimelineKind, ...] = (LogKind.BROKER_FENCED, EventKind.BROKER_FENCED)
PREFERENCE: dict[TimelineKind, int] = {
    kind: i for family in (ELECTION, (LogKind.ISR_SHRINK, LogKind.ISR_EXPAND, EventKind.ISR_SHRANK,
                                      EventKind.ISR_EXPANDED),
                           CONTROLLER, REGISTERED, GONE, FENCED, (LogKind.TRUNCATE,),
                           (LogKind.ELR_CHANGED,))
    for i, kind in enumerate(family)}
SOURCE_ORDER = ("faults", "zookeeper log", "observer", "controller log", "broker log")


def _ours(partition: str | None, topic: str) -> bool:
    return partition is None or not topic or bool(re.fullmatch(rf"{re.escape(topic)}-\d+", partition))


def merge(observer: Sequence[TimelineEvent] | None, faults: Sequence[TimelineEvent] | None,
          logs: Sequence[TimelineEvent], topic: str, start: int | None = None,
          end: int | None = None) -> list[TimelineEvent]:
    """Everything in [start, end], in time order, restricted to the run's topic (cluster-wide
    events stay): a lab's journal and logs also hold earlier runs."""
    events = controller_moves([e for e in observer or [] if _ours(e.partition, topic)])
    events += faults or []
    events += [e for e in logs if _ours(e.partition, topic)]
    return fold(_within(events, start, end))


def _within(events: list[TimelineEvent], start: int | None, end: int | None
            ) -> list[TimelineEvent]:
    """The events in [start, end] (None: open on that side)."""
    if start is not None:
        events = [e for e in events if e.ts >= start]
    if end is not None:
        events = [e for e in events if e.ts <= end]
    return events


def controller_moves(observed: Sequence[TimelineEvent]) -> list[TimelineEvent]:
    """The observer's controller changes, one line per move: a timeline recorded before the
    observer told each move once holds it in steps (none, the new one, its epoch). They are
    replayed through the model's ControllerMoves, as the observer does live now; a timeline
    already told move by move comes out as it went in."""
    changes = sorted((e for e in observed if e.kind is EventKind.CONTROLLER_CHANGED),
                     key=lambda e: e.ts)
    if not changes:
        return list(observed)
    first = changes[0]
    kraft = first.detail.startswith("quorum leader")
    # the first change's epoch is the one before it when it only emptied the seat
    moves = ControllerMoves()
    moves.see(first.ts, ControllerState(first.old, _emptied_epoch(first)))
    told: list[ControllerMove] = []
    for e in changes:
        told += moves.see(e.ts, ControllerState(e.new, e.epoch), kraft)
    told += moves.flush()
    rest = [e for e in observed if e.kind is not EventKind.CONTROLLER_CHANGED]
    return sorted(rest + [_move_event(m, kraft) for m in told], key=lambda e: e.ts)


def _emptied_epoch(change: TimelineEvent) -> int | None:
    """The epoch before a change that only emptied the controller's seat (None: it named
    a new controller, whose epoch is not the old one's)."""
    if change.new is None:
        return change.epoch
    return None


def _move_event(move: ControllerMove, kraft: bool) -> TimelineEvent:
    event = controller_event(move, kraft)
    return TimelineEvent(event.ts, event.kind, event.detail, broker=event.broker,
                         severity=event.severity, epoch=move.epoch, old=move.old, new=move.new)


def witness(e: TimelineEvent) -> str:
    """Who saw it, in words: ZooKeeper's and the controller's lines are told apart from a
    broker's own."""
    if e.kind is LogKind.SESSION_EXPIRED:
        return "zookeeper log"
    if e.source is not Source.BROKER_LOG:
        return e.source.value
    if isinstance(e.kind, LogKind) and e.kind.by_controller:
        return "controller log"
    return "broker log"


def _fact(e: TimelineEvent) -> tuple[object, ...] | None:
    """What an event says, as a key shared by every sighting of the same fact (None: unique)."""
    kind, partition = e.kind, e.partition
    if kind in ELECTION:
        return _election_fact(e)
    if kind in ISR:
        if e.new_isr is None:
            return None
        return ("isr", partition, kind in EXPANDED, tuple(sorted(e.new_isr)))
    if kind in CONTROLLER:
        if e.broker is None or e.epoch is None:
            return None
        return ("controller", e.broker, e.epoch)
    about_broker = _BROKER_FACTS.get(kind)
    if about_broker is not None:
        if e.broker is None:
            return None
        return (about_broker, e.broker)
    if kind is LogKind.TRUNCATE:  # the fetcher and the log itself both say it
        return ("truncate", e.broker, partition, e.offset)
    if kind is LogKind.ELR_CHANGED:  # every controller of the quorum logs the record it replays
        return ("elr", partition, e.elr, e.new_isr)
    return None


# The facts about one broker: each family's kinds -> the fact's name.
_BROKER_FACTS: dict[TimelineKind, str] = {
    kind: name for name, family in (("registered", REGISTERED), ("gone", GONE),
                                    ("fenced", FENCED))
    for kind in family}


def _election_fact(e: TimelineEvent) -> tuple[object, ...] | None:
    """An election at its epoch; a controller's decision of no leader (each KRaft voter logs
    it) is a fact of its own."""
    if e.epoch is None:
        return None
    if _leader(e) is not None:
        return ("election", e.partition, e.epoch)
    if e.kind is LogKind.LEADER_AND_ISR:
        return ("leaderless", e.partition, e.epoch)
    return None


def fold(events: Sequence[TimelineEvent]) -> list[TimelineEvent]:
    """Sightings of one fact within FOLD_MS of its first become one entry: the earliest ts, the
    best sighting's kind and detail, `sources` and `seen` (source -> first ts). Distinct facts
    (another epoch, another ISR) stay apart, and so does a sighting FOLD_MS later."""
    out: list[TimelineEvent] = []
    open_groups: dict[tuple[object, ...], list[TimelineEvent]] = {}
    groups: list[list[TimelineEvent]] = []
    for e in sorted(events, key=lambda e: e.ts):
        key = _fact(e)
        if key is None:
            out.append(e)
            continue
        group = open_groups.get(key)
        if group is None or e.ts - group[0].ts > FOLD_MS:
            group = open_groups[key] = []
            groups.append(group)
        group.append(e)
    out += [_folded(g) for g in groups]
    out.sort(key=lambda e: (e.ts, e.source is not Source.FAULTS))
    return out


def _folded(group: list[TimelineEvent]) -> TimelineEvent:
    """A fact seen once stays the event it was."""
    if len(group) == 1:
        return group[0]
    return _one(group)


def _one(group: list[TimelineEvent]) -> TimelineEvent:
    best = min(group, key=lambda e: PREFERENCE[e.kind])
    seen: dict[str, int] = {}
    for e in group:  # in time order, so the first ts per source
        seen.setdefault(witness(e), e.ts)
    entry = replace(best, ts=group[0].ts, sources=tuple(sorted(seen, key=SOURCE_ORDER.index)),
                    seen=tuple(seen.items()))
    for e in group:
        if e.kind is not LogKind.FOLLOWER_START:  # a follower's offset is its own, not the leader's
            entry = replace(entry, old=_first(entry.old, e.old), new=_first(entry.new, e.new),
                            old_isr=_first(entry.old_isr, e.old_isr),
                            new_isr=_first(entry.new_isr, e.new_isr),
                            offset=_first(entry.offset, e.offset),
                            election=_first(entry.election, e.election))
    if best.kind in ELECTION:
        entry = replace(entry, detail=_election_detail(entry))
    return entry


def _first(known: T | None, other: T | None) -> T | None:
    if known is None:
        return other
    return known


def _leader(e: TimelineEvent) -> int | None:
    """The leader an election sighting names (None: not an election, or no leader)."""
    if e.kind not in ELECTION:
        return None
    leader = named_leader(e)
    if e.kind is LogKind.FOLLOWER_START:
        leader = e.leader
    if leader is None or leader < 0:
        return None
    return leader


def _election_detail(e: TimelineEvent) -> str:
    leader = _leader(e)
    if leader is None:  # the controller left it without a leader (each voter logged it)
        return f"{e.partition}: no leader at epoch {e.epoch} (the controller's decision)"
    text = f"{e.partition}: broker {leader} leads at epoch {e.epoch}"
    if e.offset is not None:
        text += f" from offset {e.offset:,}"
    if e.old is not None and e.old != leader:
        text += f" (was broker {e.old})"
    if e.election is not None:
        text += f", {e.election.words}"
    return text


def main_fault(faults: Sequence[TimelineEvent] | None, start: int | None,
               end: int | None) -> TimelineEvent | None:
    """The first disruptive fault inside the run (a lab journal holds earlier runs too)."""
    for f in sorted(faults or [], key=lambda f: f.ts):
        if not hurts(str(f.action)):
            continue
        if start is not None and f.ts < start - 5000:
            continue
        if end is not None and f.ts > end:
            continue
        return replace(f, node=f.node or isolated_node(f.groups))
    return None


def isolated_node(groups: Sequence[Sequence[str]] | None) -> str | None:
    """A partition that puts one node alone (`lab isolate X --from all`) is a fault against X."""
    alone = [g[0] for g in groups or [] if len(g) == 1]
    if len(alone) != 1:
        return None
    return alone[0]


def epoch_leaders(events: Sequence[TimelineEvent]) -> dict[tuple[str, int], tuple[int, int]]:
    """(partition, leader epoch) -> (broker, first ts seen). A broker's own 'starts at leader
    epoch' line beats the controller's state-change line, which beats the observer's view."""
    best: dict[tuple[str, int], tuple[int, int, int]] = {}
    for e in events:
        rank = LEADER_RANK.get(e.kind)
        if rank is None or e.partition is None or e.epoch is None:
            continue
        broker = named_leader(e)
        if broker is None or broker < 0:
            continue
        key = (e.partition, e.epoch)
        old = best.get(key)
        if old is None:
            best[key] = (rank, broker, e.ts)
        elif rank < old[0]:
            best[key] = (rank, broker, min(e.ts, old[2]))
        else:
            best[key] = (old[0], old[1], min(e.ts, old[2]))
    return {k: (v[1], v[2]) for k, v in best.items()}


def no_leader_windows(events: Sequence[TimelineEvent], end_ts: int | None) -> list[Unavailable]:
    """The observer's partition_offline until that partition has a leader again. The end is the
    observer's own sighting when it has one (its polling lag then cancels out), else the first."""
    open_at: dict[str, int] = {}
    out = []
    for e in events:
        partition = e.partition
        if partition is None:
            continue
        if e.kind is EventKind.PARTITION_OFFLINE and e.source is Source.OBSERVER:
            open_at.setdefault(partition, e.ts)
        elif partition in open_at and _leader(e) is not None \
                and e.kind is not LogKind.FOLLOWER_START:
            start = open_at.pop(partition)
            end = max(start, dict(e.seen).get(Source.OBSERVER.value, e.ts))
            out.append(Unavailable(partition, start, end, "no leader"))
    for partition, start in open_at.items():
        if end_ts is not None and end_ts > start:
            out.append(Unavailable(partition, start, end_ts, "no leader (until the end of the run)"))
    return sorted(out, key=lambda w: w.start)


def report_entries(events: Sequence[TimelineEvent], fault_ts: int | None,
                   cap: int = TIMELINE_CAP) -> tuple[list[JsonObject], int]:
    """The report's timeline: compact entries with deltas from the fault; the rest counted."""
    out = []
    for e in events[:cap]:
        entry = e.to_json()
        entry["delta_ms"] = None
        if fault_ts is not None:
            entry["delta_ms"] = e.ts - fault_ts
        out.append(entry)
    return out, max(0, len(events) - cap)


def _moved(e: TimelineEvent) -> set[int]:
    """The replicas an ISR entry removed or added."""
    if e.old_isr is not None and e.new_isr is not None:
        return set(e.old_isr) ^ set(e.new_isr)
    if e.replica is None:
        return set()
    return {e.replica}


@dataclass(frozen=True)
class SlowLink:
    """A slowed broker's link: when slowed (`shape`: how), when the broker left an ISR, when
    the link was restored and when the broker rejoined (None: not seen)."""

    node: str
    broker: int
    slowed_ts: int
    shape: str
    left_isr_ts: int | None = None
    unslowed_ts: int | None = None
    rejoined_ts: int | None = None

    @property
    def left_isr_ms(self) -> int | None:
        """From the link slowed to the broker leaving an ISR."""
        if self.left_isr_ts is None:
            return None
        return self.left_isr_ts - self.slowed_ts

    def to_json(self) -> JsonObject:
        """As report.json's `slow_links` lists it."""
        return {"node": self.node, "broker": self.broker, "slowed_ts": self.slowed_ts,
                "left_isr_ts": self.left_isr_ts, "left_isr_ms": self.left_isr_ms,
                "unslowed_ts": self.unslowed_ts, "rejoined_ts": self.rejoined_ts,
                "shape": self.shape}


class _SlowLinks:
    """The lines of slow_links as its events come: each broker's newest line is open."""

    def __init__(self) -> None:
        self.lines: list[SlowLink] = []
        self.latest: dict[int, int] = {}  # broker -> the index of its newest line

    def slowing(self, broker: int) -> SlowLink | None:
        """The broker's line while its link is slowed, else None."""
        at = self.latest.get(broker)
        if at is None or self.lines[at].unslowed_ts is not None:
            return None
        return self.lines[at]

    def line(self, broker: int) -> SlowLink:
        return self.lines[self.latest[broker]]

    def put(self, broker: int, line: SlowLink) -> None:
        """`line` replaces the broker's newest one."""
        self.lines[self.latest[broker]] = line

    def slow(self, e: TimelineEvent, broker: int) -> None:
        """Slowed again without a repair keeps its line (the new shape); else a new line."""
        shape = (e.note or "").partition(": ")[2]
        line = self.slowing(broker)
        if line is not None:
            self.put(broker, replace(line, shape=shape))
        else:
            self.latest[broker] = len(self.lines)
            self.lines.append(SlowLink(str(e.node), broker, e.ts, shape))

    def unslow(self, e: TimelineEvent) -> None:
        for broker in self.latest:
            if e.node in (None, self.line(broker).node):
                self.put(broker, replace(self.line(broker), unslowed_ts=e.ts))

    def shrank(self, e: TimelineEvent) -> TimelineEvent:
        """The shrink, saying so when it dropped a slowed broker (whose line it times)."""
        hit = [b for b in sorted(_moved(e)) if self.slowing(b) is not None]
        if not hit:
            return e
        for broker in hit:
            if self.line(broker).left_isr_ts is None:
                self.put(broker, replace(self.line(broker), left_isr_ts=e.ts))
        return replace(e, slowed=tuple(hit), detail=e.detail + " (slowed link: " + ", ".join(
            f"broker {b} for {(e.ts - self.line(b).slowed_ts) / 1000:.1f} s" for b in hit) + ")")

    def expanded(self, e: TimelineEvent) -> None:
        for broker in _moved(e) & set(self.latest):
            line = self.line(broker)
            if line.left_isr_ts is not None and line.rejoined_ts is None:
                self.put(broker, replace(line, rejoined_ts=e.ts))


def slow_links(events: Sequence[TimelineEvent]) -> tuple[list[TimelineEvent], list[SlowLink]]:
    """Tie the ISR to the slowed links: each shrink that dropped a broker whose link was slowed
    says so in its detail, and each slowed broker gets one line: when its link was slowed,
    when it left an ISR (and how long that took), when the link was restored and when it
    rejoined. Returns the events (those shrinks' words added) and the lines (time order)."""
    links = _SlowLinks()
    out = []
    for e in events:
        if e.kind is JournalKind.FAULT and e.action == FaultKind.SLOW:
            broker = broker_id_of(e.node)
            if broker is not None:
                links.slow(e, broker)
        elif e.kind is JournalKind.FAULT and e.action == FaultKind.UNSLOW:
            links.unslow(e)
        elif e.kind in SHRANK:
            out.append(links.shrank(e))
            continue
        elif e.kind in EXPANDED:
            links.expanded(e)
        out.append(e)
    return out, links.lines


def smallest_isr(events: Sequence[TimelineEvent]) -> int | None:
    """The fewest in-sync replicas any ISR change of the run left (None: no change seen)."""
    return min((len(e.new_isr) for e in events if e.kind in ISR and e.new_isr is not None),
               default=None)
