"""The timeline's lanes, decided once for the PNG and the TUI (pure Python, no drawing).

As Jepsen's plots do, each kind of fact gets a lane of its own so nothing is drawn over
anything else: faults as bands (from the fault to its heal, start or resume), one row per
broker with a bar while it led a partition of the topic (hatched where the controller had
already elected another and the cut-off broker still acted as leader), log truncations as
marks, acked/s and failed/s, and the acknowledged-then-lost windows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kinspect.lab.faults import FaultKind, Lane, fault_kind, is_fault
from kinspect.lab.topology import broker_id_of
from kinspect.model.events import EventKind, JournalKind, LogKind, TimelineEvent, TimelineKind
from kinspect.postmortem.story.timeline import epoch_leaders, no_leader_windows

ENDS_BELIEF: set[TimelineKind] = {LogKind.FOLLOWER_START, LogKind.LEADER_START, LogKind.TRUNCATE}
ACTS_AS_LEADER: set[TimelineKind] = {LogKind.ISR_SHRINK, LogKind.ISR_EXPAND,
                                     EventKind.VIEWS_DISAGREE_STARTED}
# What the window widens to: the faults and elections near the run, and the truncations.
SHOWN: set[TimelineKind] = {JournalKind.FAULT, *ENDS_BELIEF, EventKind.LEADER_CHANGED,
                            LogKind.LEADER_AND_ISR, EventKind.PARTITION_OFFLINE,
                            EventKind.PARTITION_ONLINE}
_GROUPS = re.compile(r"partition ([\w.-]+(?:,[\w.-]+)*(?: \| [\w.-]+(?:,[\w.-]+)*)*)")
MIN_BELIEVED_MS = 1_000  # a clean handover takes milliseconds: shorter is no cut-off leader
# An attribution row as report.json has it (story/report.py `attribution`).
AttributionRow = Mapping[str, object]
# A per-second row: its second, acknowledged and failed sends.
SecondRow = Mapping[str, int]





@dataclass(frozen=True)
class Band:
    """A fault from `start` to `end`: its undo, or a short band when the events show none."""

    start: int
    end: int
    label: str
    action: str
    undone: bool


@dataclass(frozen=True)
class Bar:
    """`broker` led `partition` at `epoch` over [start, end). `believed`: the controller had
    elected another, and this broker, cut off, still acted as the leader."""

    broker: int
    partition: int
    epoch: int | None
    start: int
    end: int
    believed: bool = False


@dataclass(frozen=True)
class Mark:
    """A broker truncated its log (where acknowledged writes vanish)."""

    broker: int
    ts: int
    label: str


@dataclass(frozen=True)
class Lost:
    """Acknowledgements from `start` to `end` that the final log does not have."""

    start: int
    end: int
    count: int
    broker: int | None
    epoch: int | None


@dataclass
class Lanes:
    """Everything in [lo, hi] (epoch ms); the x axis counts from `zero`, `origin` in words
    (the first fault, else the start)."""

    lo: int
    hi: int
    zero: int
    origin: str = "the start"
    bands: list[Band] = field(default_factory=list)
    brokers: list[int] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    lost: list[Lost] = field(default_factory=list)
    seconds: list[int] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def x(self, ts: float) -> float:
        """Epoch ms -> seconds from the fault (the x axis of both drawings)."""
        return (ts - self.zero) / 1000

    def column(self, ts: float, width: int) -> int:
        """Epoch ms -> one of `width` columns."""
        span = max(1, self.hi - self.lo)
        return min(width - 1, max(0, int((ts - self.lo) * width / span)))


@dataclass(frozen=True)
class Placed:
    row: int
    col: int
    text: str



@dataclass(frozen=True)
class _Blamed:
    """What the lanes use of an attribution row: `count` lost acknowledgements of `partition`
    at `epoch`, from `broker`, acknowledged from `first_ack_ts` to `last_ack_ts`."""

    partition: int | None
    epoch: int | None
    broker: int | None
    count: int
    first_ack_ts: int | None
    last_ack_ts: int | None

    @classmethod
    def of(cls, row: AttributionRow) -> _Blamed:
        return cls(_int(row.get("partition")), _int(row.get("leader_epoch")),
                   _int(row.get("broker")), _int(row.get("count")) or 0,
                   _int(row.get("first_ack_ts")), _int(row.get("last_ack_ts")))


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def dense(per_second: Sequence[SecondRow]) -> tuple[list[int], list[int], list[int]]:
    """Seconds without any report are zeros, not a straight line between their neighbours."""
    if not per_second:
        return [], [], []
    by = {int(r["second"]): r for r in per_second}
    first, last = min(by), max(by)
    # A very long run (days): only the seconds there are.
    keys = sorted(by) if last - first > 200_000 else list(range(first, last + 2))
    return (keys, [int(by[k]["acked"]) if k in by else 0 for k in keys],
            [int(by[k]["failed"]) if k in by else 0 for k in keys])


def timeline_events(events: Sequence[TimelineEvent | Mapping[str, object]]) -> list[TimelineEvent]:
    """Merged events as they are, or the report's timeline entries (the TUI has only those)."""
    out = [e if isinstance(e, TimelineEvent) else TimelineEvent.from_json(e) for e in events]
    return [e for e in out if e is not None]


def build(per_second: Sequence[SecondRow], events: Sequence[TimelineEvent | Mapping[str, object]],
          attribution: Sequence[AttributionRow]) -> Lanes:
    """The lanes of a post-mortem: its per-second series, its merged events (or the report's
    timeline entries, which keep the fields used here) and its attribution."""
    timeline = sorted(timeline_events(events), key=lambda e: e.ts)
    blamed = [_Blamed.of(row) for row in attribution]
    seconds, acked, failed = dense(per_second)
    lo, hi = _window(seconds, timeline)
    faults = [e for e in timeline if e.kind is JournalKind.FAULT and lo <= e.ts <= hi]
    disruptive = [e for e in faults if (kind := fault_kind(str(e.action))) and kind.hurts]
    zero = disruptive[0].ts if disruptive else lo
    origin = f"the fault ({label(disruptive[0])})" if disruptive else "the start"
    lanes = Lanes(lo, hi, zero, origin, seconds=seconds, acked=acked, failed=failed)
    lanes.bands = bands(faults, hi, short_ms=max(500, (hi - lo) // 80))
    lanes.bars = _bars(timeline, blamed, lo, hi)
    lanes.marks = [Mark(e.broker, e.ts, f"truncated to {e.offset:,}"
                        if e.offset is not None else "truncated")
                   for e in timeline if e.kind is LogKind.TRUNCATE and e.broker is not None
                   and lo <= e.ts <= hi]
    lanes.lost = [Lost(a.first_ack_ts, a.last_ack_ts or 0, a.count, a.broker, a.epoch)
                  for a in blamed if a.first_ack_ts is not None]
    named = {broker_id_of(e.node or "") for e in faults}
    named |= {e.broker for e in timeline if e.broker is not None}
    lanes.brokers = sorted({b.broker for b in lanes.bars} | {m.broker for m in lanes.marks}
                           | {b for b in named if b is not None and b >= 0})
    return lanes


def _window(seconds: list[int], events: Sequence[TimelineEvent]) -> tuple[int, int]:
    """The run's seconds, widened to the faults and elections near them (a heal or a
    truncation often comes after the last ack), with a little room either side."""
    shown = [e.ts for e in events if e.kind in SHOWN]
    if seconds:
        lo, hi = seconds[0] * 1000, (seconds[-1] + 1) * 1000
    elif shown:
        lo, hi = min(shown), max(shown)
    else:
        return 0, 1000
    reach = max(20_000, hi - lo)
    near = [ts for ts in shown if lo - reach <= ts <= hi + reach]
    lo, hi = min([lo, *near]), max([hi, *near])
    pad = max(500, (hi - lo) // 40)
    return lo - pad, hi + pad


def bands(faults: Sequence[TimelineEvent], hi: int, short_ms: int = 1000) -> list[Band]:
    """Each fault from its start to its undo (heal, start, resume, unslow); a fault with no
    undo in the events lasts to `hi`, an instant one (a restart) is `short_ms` wide."""
    out: list[Band] = []
    open_: list[tuple[Lane, str | None, TimelineEvent]] = []  # (lane, node, fault)

    def close(at: int, ended: Sequence[tuple[Lane, str | None, TimelineEvent]]) -> None:
        for item in ended:
            open_.remove(item)
            out.append(Band(item[2].ts, max(at, item[2].ts + short_ms), label(item[2]),
                            str(item[2].action), True))

    for f in faults:
        action, node, ts = f.action or "", f.node, f.ts
        kind = fault_kind(action)
        if kind is not None and not kind.disruptive:  # a repair, or a restart: ends its lane's
            ended = [o for o in open_ if o[0] is kind.lane and (node is None or o[1] in (None, node))]
            close(ts, ended)
            if kind is FaultKind.RESTART and not ended:
                out.append(Band(ts, ts + short_ms, label(f), action, True))
        elif kind is not None:
            if kind is FaultKind.PARTITION:  # new groups replace the old ones
                close(ts, [o for o in open_ if o[0] is Lane.NET])
            open_.append((kind.lane, node, f))
        elif is_fault(action):  # an older kinspect's fault: its undo is not known
            out.append(Band(ts, ts + short_ms, label(f), action, True))
    out += [Band(f.ts, max(hi, f.ts + short_ms), label(f), str(f.action), False)
            for _, _, f in open_]
    return sorted(out, key=lambda b: (b.start, b.end))


def label(fault: TimelineEvent) -> str:
    """A fault in a few words: `kill kafka1`, `kafka2 cut off`, `kafka1 cut from zk1`."""
    action, node, groups = fault.action or "", fault.node, fault.groups
    if not action:
        return (fault.detail or "fault").removeprefix("fault: ")
    if action == FaultKind.PARTITION and not groups:  # merged events keep the groups in their words
        found = _GROUPS.search(fault.note or fault.detail or "")
        groups = tuple(tuple(g.split(",")) for g in found[1].split(" | ")) if found else None
    if action == FaultKind.PARTITION and groups:
        return _partition_words([list(g) for g in groups])
    return f"{action} {node}" if node else action


def _partition_words(groups: list[list[str]]) -> str:
    nodes = sorted({n for g in groups for n in g}, key=lambda n: (n.startswith("zk"), n))
    cut = {n: [m for m in nodes if m != n and not any(n in g and m in g for g in groups)]
           for n in nodes}
    alone = [n for n in nodes if len(cut[n]) == len(nodes) - 1]
    if len(alone) == 1:
        return f"{alone[0]} cut off"
    broken = [n for n in nodes if cut[n]]
    if len(broken) == 2:
        return f"{broken[0]} cut from {broken[1]}"
    return "partition " + " | ".join(",".join(g) for g in groups)


def _number(partition: str | None) -> int | None:
    """'topic-3' -> 3 (the attribution numbers partitions, the events name them)."""
    found = re.search(r"-(\d+)$", partition or "")
    return int(found[1]) if found else None


def bars(events: Sequence[TimelineEvent], attribution: Sequence[AttributionRow], lo: int,
         hi: int) -> list[Bar]:
    """Who led each partition when, as the controller saw it, and after each election the
    old leader's own belief while the events show it still acting as the leader."""
    return _bars(events, [_Blamed.of(row) for row in attribution], lo, hi)


def _bars(events: Sequence[TimelineEvent], blamed: Sequence[_Blamed], lo: int,
          hi: int) -> list[Bar]:
    by_partition: dict[int, list[tuple[int, int, int]]] = {}
    for (name, epoch), (broker, ts) in epoch_leaders(events).items():
        if (number := _number(name)) is not None:
            by_partition.setdefault(number, []).append((epoch, broker, ts))
    for a in blamed:  # a lost epoch names its leader even when its election came earlier
        if a.partition is not None and a.partition not in by_partition \
                and a.broker is not None and a.epoch is not None:
            by_partition[a.partition] = [(a.epoch, a.broker, lo)]
    gaps = [(_number(g.partition), g.start) for g in no_leader_windows(events, hi)]
    out: list[Bar] = []
    for partition, seq in sorted(by_partition.items()):
        seq.sort()
        first = _first_leader(partition, seq[0], events, blamed)
        if first is not None and seq[0][2] > lo:
            seq.insert(0, (first[1], first[0], lo))
        for i, (epoch, broker, elected) in enumerate(seq):
            end = seq[i + 1][2] if i + 1 < len(seq) else hi
            end = min([end, *(at for p, at in gaps if p == partition and elected < at < end)])
            start, end = max(elected, lo), min(end, hi)
            if end > start:
                out.append(Bar(broker, partition, epoch if epoch >= 0 else None, start, end))
            if end < hi:
                out += _believed(Bar(broker, partition, epoch, end, hi, True), events, blamed)
    return out


def _first_leader(partition: int, first: tuple[int, int, int], events: Sequence[TimelineEvent],
                  blamed: Sequence[_Blamed]) -> tuple[int, int] | None:
    """(broker, epoch) of the leader before the first election the events show: the 'was
    broker N' of that election or of the partition going offline before it, else an earlier
    epoch the attribution names (-1: unknown)."""
    epoch, _, elected = first
    old = next((e.old for e in events if _number(e.partition) == partition and e.ts <= elected
                and (e.epoch == epoch or e.kind is EventKind.PARTITION_OFFLINE)
                and e.old is not None and e.old >= 0), None)
    earlier = [(a.broker, a.epoch) for a in blamed if a.partition == partition
               and a.epoch is not None and a.epoch < epoch and a.broker is not None
               and old in (None, a.broker)]
    if earlier:
        return max(earlier, key=lambda a: a[1])
    return None if old is None else (old, -1)


def _believed(after: Bar, events: Sequence[TimelineEvent], blamed: Sequence[_Blamed]
              ) -> list[Bar]:
    """After `after.start` (another leader elected, or none), a broker that still acts as the
    leader (changes the ISR, is named leader by the brokers against ZooKeeper, or acknowledges
    writes that were lost) does so until its own log says it follows or truncates, the brokers
    agree with ZooKeeper again, or it goes down; `after` reaches to the end of the window."""
    broker, partition, epoch, since = after.broker, after.partition, after.epoch, after.start
    if _down_at(broker, since, events):
        return []
    end, acted = after.end, any(a.broker == broker and a.partition == partition
                                and (a.last_ack_ts or 0) > since + MIN_BELIEVED_MS
                                for a in blamed)
    for e in events:
        if e.ts <= since:
            continue
        number = _number(e.partition)
        ours = e.broker == broker and number in (partition, None)
        if (ours and e.kind in ENDS_BELIEF
                and not (e.kind is LogKind.LEADER_START and e.epoch == epoch)) \
                or (e.kind is EventKind.VIEWS_DISAGREE_STOPPED and number == partition) \
                or (_fault_on(e, broker) and e.action in _GOES_DOWN):
            end = e.ts
            break
        acted = acted or (ours and e.kind in ACTS_AS_LEADER)
    if not acted or end - since < MIN_BELIEVED_MS:
        return []
    return [Bar(broker, partition, epoch if epoch is not None and epoch >= 0 else None, since,
                min(end, after.end), True)]


_GOES_DOWN = (FaultKind.KILL, FaultKind.STOP, FaultKind.RESTART)


def _fault_on(e: TimelineEvent, broker: int) -> bool:
    return e.kind is JournalKind.FAULT and broker_id_of(e.node or "") == broker


def _down_at(broker: int, ts: int, events: Sequence[TimelineEvent]) -> bool:
    """Was the broker's process killed or stopped (and not started again) at `ts`?"""
    down = False
    for e in events:
        if e.ts > ts:
            break
        if _fault_on(e, broker):
            down = e.action in (FaultKind.KILL, FaultKind.STOP) \
                or (down and e.action not in (FaultKind.START, FaultKind.RESTART))
    return down


def pack(items: Sequence[tuple[int, str, int]], width: int, rows: int = 3, gap: int = 2,
         min_chars: int = 4) -> list[Placed]:
    """Bands (first column, label, end column) into at most `rows` rows of `width` columns, in
    the input's order. Labels never overlap: each band goes into the first row free of bands
    and labels at its column, else the first row free of labels (its band then overlaps
    another); where none is, the row whose last label began earliest cuts it short ('…') to
    make room, and failing that the band keeps no label (text '')."""
    out: list[Placed | None] = [None] * len(items)
    label_end: dict[int, int] = {}  # row -> where its last label ends
    band_end: dict[int, int] = {}  # row -> where its last band or label ends
    last: dict[int, int] = {}  # row -> the index of its last label
    for i in sorted(range(len(items)), key=lambda i: items[i][0]):
        wanted, whole, end = items[i]
        text = whole if len(whole) <= width else whole[:max(1, width - 1)] + "…"
        col = max(0, min(wanted, width - len(text)))
        row = next((r for r in range(rows) if band_end.get(r, -gap) + gap <= min(col, wanted)),
                   None)
        if row is None:
            row = next((r for r in range(rows) if label_end.get(r, -gap) + gap <= col), None)
        if row is None:
            row = min(last, key=lambda r: (out[last[r]] or Placed(0, 0, "")).col)
            before = out[last[row]] or Placed(0, 0, "")
            room = col - gap - before.col
            if room >= min_chars:
                out[last[row]] = Placed(row, before.col, before.text[:room - 1] + "…")
            else:
                row, text = min(range(rows), key=lambda r: band_end.get(r, 0)), ""
        out[i] = Placed(row, col, text)
        if text:
            label_end[row], last[row] = col + len(text), i
        band_end[row] = max(band_end.get(row, 0), end, col + len(text))
    return [p or Placed(0, 0, "") for p in out]


def fit(wanted: Sequence[Sequence[tuple[int, str]]], width: int,
        taken: Sequence[tuple[int, int]] = (), gap: int = 1) -> list[Placed | None]:
    """Labels on one row, in order of importance: each takes its first candidate (column,
    text) that lies inside the row and keeps `gap` columns from the labels placed before it
    and from the `taken` spans [start, end); None when no candidate fits."""
    spans = list(taken)
    out: list[Placed | None] = []
    for candidates in wanted:
        chosen = next((Placed(0, col, text) for col, text in candidates
                       if col >= 0 and col + len(text) <= width
                       and all(col + len(text) + gap <= a or b + gap <= col for a, b in spans)),
                      None)
        if chosen is not None:
            spans.append((chosen.col, _end(chosen)))
        out.append(chosen)
    return out


def _end(p: Placed) -> int:
    return p.col + len(p.text)


def ticks(lo_s: float, hi_s: float, most: int = 8) -> list[int]:
    """Round seconds between lo_s and hi_s, at most `most` of them, 0 among them if inside."""
    span = max(1e-9, hi_s - lo_s)
    step = next((s for s in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600)
                 if span / s <= most), int(span / most) + 1)
    first = -(-int(lo_s) // step) * step if lo_s > 0 else -(int(-lo_s) // step) * step
    return [t for t in range(first, int(hi_s) + 1, step) if lo_s <= t <= hi_s]
