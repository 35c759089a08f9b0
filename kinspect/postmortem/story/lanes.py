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
# A cut's groups in a report entry's words: `partition a | b,c`, or an isolation's note
# `isolate a from zk (a,b | c,b)`.
_GROUPS = re.compile(r"(?:partition |\()([\w.-]+(?:,[\w.-]+)*(?: \| [\w.-]+(?:,[\w.-]+)*)*)")
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
    if value is None:
        return None
    return int(str(value))


def _known_epoch(epoch: int | None) -> int | None:
    """An epoch as a bar shows it: None where the events did not say (-1)."""
    if epoch is None or epoch < 0:
        return None
    return epoch


def dense(per_second: Sequence[SecondRow]) -> tuple[list[int], list[int], list[int]]:
    """Seconds without any report are zeros, not a straight line between their neighbours."""
    if not per_second:
        return [], [], []
    by = {int(r["second"]): r for r in per_second}
    keys = _seconds(by)
    return (keys, [int(by.get(k, _NO_SENDS)["acked"]) for k in keys],
            [int(by.get(k, _NO_SENDS)["failed"]) for k in keys])


_NO_SENDS: SecondRow = {"second": 0, "acked": 0, "failed": 0}  # a second without a report


def _seconds(by: Mapping[int, SecondRow]) -> list[int]:
    """Every second from the first to one past the last; for a very long run (days) only the
    seconds there are."""
    first, last = min(by), max(by)
    if last - first > 200_000:
        return sorted(by)
    return list(range(first, last + 2))


def timeline_events(events: Sequence[TimelineEvent | Mapping[str, object]]) -> list[TimelineEvent]:
    """Merged events as they are, or the report's timeline entries (the TUI has only those)."""
    out = [_timeline_event(e) for e in events]
    return [e for e in out if e is not None]


def _timeline_event(event: TimelineEvent | Mapping[str, object]) -> TimelineEvent | None:
    if isinstance(event, TimelineEvent):
        return event
    return TimelineEvent.from_json(event)


def build(per_second: Sequence[SecondRow], events: Sequence[TimelineEvent | Mapping[str, object]],
          attribution: Sequence[AttributionRow]) -> Lanes:
    """The lanes of a post-mortem: its per-second series, its merged events (or the report's
    timeline entries, which keep the fields used here) and its attribution."""
    timeline = sorted(timeline_events(events), key=lambda e: e.ts)
    blamed = [_Blamed.of(row) for row in attribution]
    seconds, acked, failed = dense(per_second)
    lo, hi = _window(seconds, timeline)
    faults = [e for e in timeline if e.kind is JournalKind.FAULT and lo <= e.ts <= hi]
    zero, origin = _origin(faults, lo)
    lanes = Lanes(lo, hi, zero, origin, seconds=seconds, acked=acked, failed=failed)
    lanes.bands = bands(faults, hi, short_ms=max(500, (hi - lo) // 80))
    lanes.bars = _bars(timeline, blamed, lo, hi)
    lanes.marks = _marks(timeline, lo, hi)
    lanes.lost = [Lost(a.first_ack_ts, a.last_ack_ts or 0, a.count, a.broker, a.epoch)
                  for a in blamed if a.first_ack_ts is not None]
    lanes.brokers = _brokers(lanes, faults, timeline)
    return lanes


def _origin(faults: Sequence[TimelineEvent], lo: int) -> tuple[int, str]:
    """The x axis's zero and its words: the first fault the cluster felt, else the start."""
    for fault in faults:
        kind = fault_kind(str(fault.action))
        if kind is not None and kind.hurts:
            return fault.ts, f"the fault ({label(fault)})"
    return lo, "the start"


def _marks(timeline: Sequence[TimelineEvent], lo: int, hi: int) -> list[Mark]:
    """The truncations inside the window, each on its broker's row."""
    out = []
    for e in timeline:
        if e.kind is not LogKind.TRUNCATE or e.broker is None or not lo <= e.ts <= hi:
            continue
        words = "truncated"
        if e.offset is not None:
            words = f"truncated to {e.offset:,}"
        out.append(Mark(e.broker, e.ts, words))
    return out


def _brokers(lanes: Lanes, faults: Sequence[TimelineEvent],
             timeline: Sequence[TimelineEvent]) -> list[int]:
    """A row for every broker that led, truncated, was hurt by a fault or is named in an event."""
    named = {broker_id_of(e.node or "") for e in faults}
    named |= {e.broker for e in timeline if e.broker is not None}
    shown = {b for b in named if b is not None and b >= 0}
    return sorted({b.broker for b in lanes.bars} | {m.broker for m in lanes.marks} | shown)


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


CUTS = (FaultKind.PARTITION, FaultKind.ISOLATE)  # the faults that cut the network in groups


def bands(faults: Sequence[TimelineEvent], hi: int, short_ms: int = 1000) -> list[Band]:
    """Each fault from its start to its undo (heal, start, resume, unslow); a fault with no
    undo in the events lasts to `hi`, an instant one (a restart) is `short_ms` wide."""
    out: list[Band] = []
    open_: list[_Open] = []
    for f in faults:
        action = f.action or ""
        kind = fault_kind(action)
        if kind is None:
            if is_fault(action):  # an older kinspect's fault: its undo is not known
                out.append(_instant(f, short_ms))
            continue
        if kind.disruptive:
            if kind in CUTS:  # new groups replace the old ones
                out += _close(open_, _undone(open_, Lane.NET, None), f.ts, short_ms)
            open_.append((kind.lane, f.node, f))
            continue
        ended = _undone(open_, kind.lane, f.node)  # a repair, or a restart: ends its lane's
        out += _close(open_, ended, f.ts, short_ms)
        if kind is FaultKind.RESTART and not ended:
            out.append(_instant(f, short_ms))
    out += [Band(f.ts, max(hi, f.ts + short_ms), label(f), str(f.action), False)
            for _, _, f in open_]
    return sorted(out, key=lambda b: (b.start, b.end))


_Open = tuple[Lane, str | None, TimelineEvent]  # a fault not undone yet: its lane, node, event


def _undone(open_: Sequence[_Open], lane: Lane, node: str | None) -> list[_Open]:
    """The open faults a repair of `lane` on `node` undoes (on no node: all of the lane's)."""
    if node is None:
        return [o for o in open_ if o[0] is lane]
    return [o for o in open_ if o[0] is lane and o[1] in (None, node)]


def _close(open_: list[_Open], ended: Sequence[_Open], at: int, short_ms: int) -> list[Band]:
    """The ended faults' bands, to `at`; they leave `open_`."""
    closed = []
    for item in ended:
        open_.remove(item)
        fault = item[2]
        closed.append(Band(fault.ts, max(at, fault.ts + short_ms), label(fault),
                           str(fault.action), True))
    return closed


def _instant(fault: TimelineEvent, short_ms: int) -> Band:
    """A fault over as it happened (a restart), or whose undo is not known: `short_ms` wide."""
    return Band(fault.ts, fault.ts + short_ms, label(fault), fault.action or "", True)


def label(fault: TimelineEvent) -> str:
    """A fault in a few words: `kill kafka1`, `kafka2 cut off`, `kafka1 cut from zk1`."""
    action = fault.action or ""
    if not action:
        return (fault.detail or "fault").removeprefix("fault: ")
    if action in CUTS:  # an isolation is journaled with its groups too
        groups = fault.groups or _groups_in_words(fault)
        if groups:
            return _partition_words([list(g) for g in groups])
    if fault.node:
        return f"{action} {fault.node}"
    return action


def _groups_in_words(fault: TimelineEvent) -> tuple[tuple[str, ...], ...] | None:
    """A cut's groups as a report's entries keep them: in their words (_GROUPS)."""
    found = _GROUPS.search(fault.note or fault.detail or "")
    if found is None:
        return None
    return tuple(tuple(g.split(",")) for g in found[1].split(" | "))


def _partition_words(groups: list[list[str]]) -> str:
    nodes = sorted({n for g in groups for n in g}, key=lambda n: (n.startswith("zk"), n))
    cut = {n: _cut_from(n, nodes, groups) for n in nodes}
    alone = [n for n in nodes if len(cut[n]) == len(nodes) - 1]
    if len(alone) == 1:
        return f"{alone[0]} cut off"
    broken = [n for n in nodes if cut[n]]
    if len(broken) == 2:
        return f"{broken[0]} cut from {broken[1]}"
    return "partition " + " | ".join(",".join(g) for g in groups)


def _cut_from(node: str, nodes: Sequence[str], groups: list[list[str]]) -> list[str]:
    """The nodes that share no group with `node`."""
    reached = {m for g in groups if node in g for m in g}
    return [m for m in nodes if m != node and m not in reached]


def _number(partition: str | None) -> int | None:
    """'topic-3' -> 3 (the attribution numbers partitions, the events name them)."""
    found = re.search(r"-(\d+)$", partition or "")
    if found is None:
        return None
    return int(found[1])


def bars(events: Sequence[TimelineEvent], attribution: Sequence[AttributionRow], lo: int,
         hi: int) -> list[Bar]:
    """Who led each partition when, as the controller saw it, and after each election the
    old leader's own belief while the events show it still acting as the leader."""
    return _bars(events, [_Blamed.of(row) for row in attribution], lo, hi)


def _bars(events: Sequence[TimelineEvent], blamed: Sequence[_Blamed], lo: int,
          hi: int) -> list[Bar]:
    gaps: dict[int | None, list[int]] = {}  # partition -> when it was left without a leader
    for window in no_leader_windows(events, hi):
        gaps.setdefault(_number(window.partition), []).append(window.start)
    out: list[Bar] = []
    for partition, seq in sorted(_elections(events, blamed, lo).items()):
        seq.sort()
        first = _first_leader(partition, seq[0], events, blamed)
        if first is not None and seq[0][2] > lo:
            seq.insert(0, (first[1], first[0], lo))
        leaderless = gaps.get(partition, [])
        next_elections = [*(when for _, _, when in seq[1:]), hi]
        for (epoch, broker, elected), next_elected in zip(seq, next_elections, strict=True):
            end = min([next_elected, *(at for at in leaderless if elected < at < next_elected)])
            start, end = max(elected, lo), min(end, hi)
            if end > start:
                out.append(Bar(broker, partition, _known_epoch(epoch), start, end))
            if end < hi:
                out += _believed(Bar(broker, partition, epoch, end, hi, True), events, blamed)
    return out


_Election = tuple[int, int, int]  # (epoch, broker, when)


def _elections(events: Sequence[TimelineEvent], blamed: Sequence[_Blamed],
               lo: int) -> dict[int, list[_Election]]:
    """partition -> its elections the events show; a lost epoch names its leader even when
    its election came earlier (then it led from `lo`)."""
    by_partition: dict[int, list[_Election]] = {}
    for (name, epoch), (broker, ts) in epoch_leaders(events).items():
        number = _number(name)
        if number is not None:
            by_partition.setdefault(number, []).append((epoch, broker, ts))
    for a in blamed:
        if a.partition is None or a.broker is None or a.epoch is None:
            continue
        if a.partition not in by_partition:
            by_partition[a.partition] = [(a.epoch, a.broker, lo)]
    return by_partition


def _first_leader(partition: int, first: tuple[int, int, int], events: Sequence[TimelineEvent],
                  blamed: Sequence[_Blamed]) -> tuple[int, int] | None:
    """(broker, epoch) of the leader before the first election the events show: the 'was
    broker N' of that election or of the partition going offline before it, else an earlier
    epoch the attribution names (-1: unknown)."""
    epoch, _, elected = first
    old = _was_leader(partition, epoch, elected, events)
    earlier: list[tuple[int, int]] = []
    for a in blamed:
        if a.partition != partition or a.broker is None or a.epoch is None:
            continue
        if a.epoch < epoch and old in (None, a.broker):
            earlier.append((a.broker, a.epoch))
    if earlier:
        return max(earlier, key=lambda a: a[1])
    if old is None:
        return None
    return old, -1


def _was_leader(partition: int, epoch: int, elected: int,
                events: Sequence[TimelineEvent]) -> int | None:
    """The 'was broker N' of the partition's election at `epoch`, or of its going offline,
    by `elected`."""
    for e in events:
        if e.old is None or e.old < 0 or e.ts > elected or _number(e.partition) != partition:
            continue
        if e.epoch == epoch or e.kind is EventKind.PARTITION_OFFLINE:
            return e.old
    return None


def _believed(after: Bar, events: Sequence[TimelineEvent], blamed: Sequence[_Blamed]
              ) -> list[Bar]:
    """After `after.start` (another leader elected, or none), a broker that still acts as the
    leader (changes the ISR, is named leader by the brokers against ZooKeeper, or acknowledges
    writes that were lost) does so until its own log says it follows or truncates, the brokers
    agree with ZooKeeper again, or it goes down; `after` reaches to the end of the window."""
    since = after.start
    if _down_at(after.broker, since, events):
        return []
    end, acted = after.end, _acked_late(after, blamed)
    for e in events:
        if e.ts <= since:
            continue
        if _ends_belief(e, after):
            end = e.ts
            break
        if not acted:
            acted = e.kind in ACTS_AS_LEADER and _ours(e, after)
    if not acted or end - since < MIN_BELIEVED_MS:
        return []
    return [Bar(after.broker, after.partition, _known_epoch(after.epoch), since,
                min(end, after.end), True)]


def _acked_late(after: Bar, blamed: Sequence[_Blamed]) -> bool:
    """Did the broker acknowledge writes of the partition, lost, well after `after.start`?"""
    late = after.start + MIN_BELIEVED_MS
    for a in blamed:
        if a.broker == after.broker and a.partition == after.partition \
                and (a.last_ack_ts or 0) > late:
            return True
    return False


def _ours(e: TimelineEvent, bar: Bar) -> bool:
    """The event is the bar's broker's own, about the bar's partition or none in particular."""
    return e.broker == bar.broker and _number(e.partition) in (bar.partition, None)


def _ends_belief(e: TimelineEvent, bar: Bar) -> bool:
    """The broker's log says it follows or truncates (or leads again, at another epoch), the
    brokers agree with ZooKeeper about the partition again, or the broker goes down."""
    if e.kind is EventKind.VIEWS_DISAGREE_STOPPED:
        return _number(e.partition) == bar.partition
    if e.kind is JournalKind.FAULT:
        return _fault_on(e, bar.broker) and e.action in _GOES_DOWN
    if e.kind not in ENDS_BELIEF or not _ours(e, bar):
        return False
    return not (e.kind is LogKind.LEADER_START and e.epoch == bar.epoch)


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
    packed = _Rows(rows, gap, [None] * len(items))
    for i in sorted(range(len(items)), key=lambda i: items[i][0]):
        wanted, whole, end = items[i]
        text = _shortened(whole, width)
        col = max(0, min(wanted, width - len(text)))
        row = packed.free(packed.band_end, min(col, wanted))
        if row is None:
            row = packed.free(packed.label_end, col)
        if row is None:
            row = packed.cut_short(col, min_chars)
        if row is None:
            row, text = packed.emptiest(), ""
        packed.place(i, Placed(row, col, text), end)
    return [p or Placed(0, 0, "") for p in packed.placed]


def _shortened(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[:max(1, width - 1)] + "…"


@dataclass
class _Rows:
    """pack's rows as it fills them: where each row's last label and band end, and which of
    the placed labels is each row's last."""

    count: int
    gap: int
    placed: list[Placed | None]
    label_end: dict[int, int] = field(default_factory=dict)  # row -> where its last label ends
    band_end: dict[int, int] = field(default_factory=dict)  # ... its last band or label ends
    last: dict[int, int] = field(default_factory=dict)  # row -> the index of its last label

    def free(self, ends: dict[int, int], col: int) -> int | None:
        """The first row whose `ends` leave `gap` columns before `col`."""
        for row in range(self.count):
            if ends.get(row, -self.gap) + self.gap <= col:
                return row
        return None

    def cut_short(self, col: int, min_chars: int) -> int | None:
        """The row whose last label began earliest, that label cut short ('…') to end before
        `col`; None when it would keep fewer than `min_chars`."""
        row = min(self.last, key=lambda r: self._last_label(r).col)
        before = self._last_label(row)
        room = col - self.gap - before.col
        if room < min_chars:
            return None
        self.placed[self.last[row]] = Placed(row, before.col, before.text[:room - 1] + "…")
        return row

    def emptiest(self) -> int:
        """The row whose bands end first (a band without a label goes there)."""
        return min(range(self.count), key=lambda r: self.band_end.get(r, 0))

    def place(self, i: int, placed: Placed, end: int) -> None:
        self.placed[i] = placed
        if placed.text:
            self.label_end[placed.row], self.last[placed.row] = _end(placed), i
        self.band_end[placed.row] = max(self.band_end.get(placed.row, 0), end, _end(placed))

    def _last_label(self, row: int) -> Placed:
        return self.placed[self.last[row]] or Placed(0, 0, "")


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
    first = _first_tick(lo_s, step)
    return [t for t in range(first, int(hi_s) + 1, step) if lo_s <= t <= hi_s]


def _first_tick(lo_s: float, step: int) -> int:
    """The first multiple of `step` at or after lo_s (its integer part)."""
    if lo_s > 0:
        return -(-int(lo_s) // step) * step
    return -(int(-lo_s) // step) * step
