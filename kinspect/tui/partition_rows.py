"""The partition view's rows, from a snapshot: topic summaries and the partitions under them.

Pure and cheap: one pass over the partitions per snapshot (summaries), one list per filter or
open/close change (rows). Nothing is rendered here; the view draws only the rows on screen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from operator import attrgetter

from kinspect.model import ClusterSnapshot, PartitionInfo, TopicInfo, Unknown

_BY_PARTITION = attrgetter("partition")


@dataclass(frozen=True)
class TopicSummary:
    """One line per topic: how many partitions and how many of them are in trouble."""

    topic: str
    partitions: int
    offline: int
    under_min_isr: int
    under_replicated: int
    diverged: int
    high_watermark: int  # the sum of the known ones
    unknown: int = 0  # partitions whose under-min-ISR or URP flag was not told (a refusal)
    moving: int = 0  # partitions a reassignment is moving
    shown: int = 0  # partitions passing the filter (the row counts those when filtering)
    open: bool = True

    @property
    def internal(self) -> bool:
        return self.topic.startswith("__")


Row = TopicSummary | PartitionInfo
RowKey = tuple[str, int]  # (topic, partition); partition -1 is the topic's summary row


def row_key(row: Row) -> RowKey:
    return (row.topic, -1) if isinstance(row, TopicSummary) else (row.topic, row.partition)


def summarize(topic: TopicInfo) -> TopicSummary:
    """The counts behind a topic row: PartitionInfo's flags (Kafka's definitions), the common
    case inlined because this runs over every partition of every snapshot."""
    offline = under_min = urp = diverged = hw = unknown = moving = 0
    for p in topic.partitions:
        isr = len(p.isr)
        if p.leader is None:
            offline += 1
        if isinstance(p.min_isr, int):
            under_min += p.leader is None or isr < p.min_isr
        elif p.leader is None:
            under_min += 1
        else:
            unknown += 1
        if p.reassignment is not None:
            moving += p.moving
            urp += p.under_replicated is True
            unknown += isinstance(p.under_replicated, Unknown) and isinstance(p.min_isr, int)
        elif isr < len(p.replicas):
            urp += 1
        for log in p.replica_logs:
            if log.diverged > 0:
                diverged += 1
                break
        if p.high_watermark is not None:
            hw += p.high_watermark
    return TopicSummary(topic.name, len(topic.partitions), offline, under_min, urp, diverged, hw,
                        unknown, moving)


def topic_rank(name: str, pinned: Collection[str]) -> tuple[bool, bool, str]:
    """Topics a load runs on first, then user topics, then internal ones (__consumer_offsets)."""
    return name not in pinned, name.startswith("__"), name


def unhealthy(p: PartitionInfo) -> bool:
    """What the `u` filter keeps: anything but ok (an unknown flag included) or moving."""
    return (p.state not in ("ok", "moving") or p.views_disagree
            or bool(p.replica_logs and p.diverged))


def matches(needle: str) -> Callable[[PartitionInfo], bool]:
    """The filter: a topic or topic-N, case-insensitive, anywhere in the name."""
    return lambda p: needle in f"{p.topic}-{p.partition}".lower()


@dataclass
class PartitionTable:
    """What one snapshot gives the view: topics in display order, each sorted and summed.

    No per-partition dict: building 10,000 keys cost more than the rest of a snapshot."""

    topics: list[tuple[TopicSummary, Sequence[PartitionInfo]]]

    @classmethod
    def of(cls, snapshot: ClusterSnapshot, pinned: Collection[str] = ()) -> PartitionTable:
        topics = sorted(snapshot.topics, key=lambda t: topic_rank(t.name, pinned))
        out: list[tuple[TopicSummary, Sequence[PartitionInfo]]] = []
        for topic in topics:
            parts: Sequence[PartitionInfo] = topic.partitions
            if any(a.partition > b.partition for a, b in pairwise(parts)):
                parts = sorted(parts, key=_BY_PARTITION)
            out.append((summarize(topic), parts))
        return cls(out)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        for summary, parts in self.topics:
            if summary.topic == topic:
                if partition < len(parts) and parts[partition].partition == partition:
                    return parts[partition]
                return next((p for p in parts if p.partition == partition), None)
        return None

    def same_topics(self, other: PartitionTable) -> bool:
        """The same topics in the same order with the same partition counts (summaries equal):
        with no partition changed, the same rows."""
        return (len(self.topics) == len(other.topics)
                and all(a == b for (a, _), (b, _) in zip(self.topics, other.topics, strict=True)))

    def changed(self, old: PartitionTable, limit: int) -> list[tuple[PartitionInfo, PartitionInfo]]:
        """(was, now) for partitions that differ, topic by topic in step; stops past limit."""
        before = {s.topic: parts for s, parts in old.topics}
        out: list[tuple[PartitionInfo, PartitionInfo]] = []
        for summary, parts in self.topics:
            was = before.get(summary.topic)
            if was is None:
                continue
            if len(was) != len(parts):  # partitions added: compare the ones both have
                known = {p.partition: p for p in was}
                was = [known.get(p.partition) for p in parts]  # type: ignore[misc]
            for q, p in zip(was, parts, strict=True):
                if q is not None and q is not p and q != p:
                    out.append((q, p))
                    if len(out) > limit:
                        return out
        return out

    def rows(self, is_open: Callable[[TopicSummary, bool], bool], needle: str = "",
             unhealthy_only: bool = False) -> list[Row]:
        """Summary rows and the partitions of open topics; a filter keeps the topics with a
        match (and shows those partitions only)."""
        rows: list[Row] = []
        filtered = bool(needle) or unhealthy_only
        keep = matches(needle.lower()) if needle else None
        for summary, parts in self.topics:
            shown: Sequence[PartitionInfo] = parts
            if keep is not None:
                shown = [p for p in shown if keep(p)]
            if unhealthy_only:
                shown = [p for p in shown if unhealthy(p)]
            if filtered and not shown:
                continue
            opened = is_open(summary, filtered)
            rows.append(_with(summary, len(shown), opened))
            if opened:
                rows.extend(shown)
        return rows


def _with(summary: TopicSummary, shown: int, opened: bool) -> TopicSummary:
    if summary.shown == shown and summary.open == opened:
        return summary
    return TopicSummary(summary.topic, summary.partitions, summary.offline,
                        summary.under_min_isr, summary.under_replicated, summary.diverged,
                        summary.high_watermark, summary.unknown, summary.moving, shown, opened)


MARK_LIMIT = 300  # more partitions changed than this in one snapshot: no highlight
Change = tuple[PartitionInfo, PartitionInfo]  # (was, now)
BrokerCounts = tuple[Mapping[int | None, int], Mapping[int, int]]  # leads, out of the ISRs of


@dataclass(frozen=True)
class Prepared:
    """What drawing a snapshot costs in passes over every partition, made in the feed's thread:
    at 100,000 partitions the model, the comparison with the last one and the brokers' counts
    took ~0.9 s of the event loop per snapshot, every second, keys waiting."""

    model: PartitionTable
    pinned: tuple[str, ...]  # the topics shown first that the model was sorted with
    changes: tuple[Change, ...]  # since the last one prepared; past MARK_LIMIT: a failover
    counts: BrokerCounts  # partitions each broker leads, ISRs each is missing from

    def after(self, earlier: Prepared) -> Prepared:
        """This one, drawn in place of `earlier` (never drawn): their changes together."""
        changes = (earlier.changes + self.changes)[:MARK_LIMIT + 1]
        return replace(self, changes=changes)


class Preparer:
    """Kept by a feed: prepares each snapshot against the one before. `pinned` is set by the
    app (the topics a load runs on); a model sorted with other pins is made again on the loop."""

    def __init__(self) -> None:
        self.pinned: tuple[str, ...] = ()
        self._last: PartitionTable | None = None

    def prepare(self, snapshot: ClusterSnapshot) -> Prepared:
        pinned = self.pinned
        model, last = PartitionTable.of(snapshot, pinned), self._last
        changes = tuple(model.changed(last, MARK_LIMIT)) if last else ()
        if last is not None and not changes and model.same_topics(last):
            model = last  # the very model drawn last: the view sees by identity it has nothing to do
        self._last = model
        return Prepared(model, pinned, changes, broker_counts(snapshot))


def broker_counts(snapshot: ClusterSnapshot | None) -> BrokerCounts:
    """Partitions each broker leads, ISRs each is missing from: one pass for every broker (at
    10,000 partitions a pass per broker cost 90 ms a draw)."""
    partitions = snapshot.partitions() if snapshot else []
    leading = Counter(p.leader for p in partitions)
    out_of_isr = Counter(r for p in partitions if len(p.isr) < len(p.replicas)
                         for r in p.missing)
    return leading, out_of_isr
