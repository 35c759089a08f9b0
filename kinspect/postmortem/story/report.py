"""report.json, report.md and the plain-words paragraph, from the job's small results."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.lab.topology import broker_id_of, broker_node
from kinspect.model.events import EventKind, LogKind, TimelineEvent, TimelineKind
from kinspect.postmortem.story.timeline import witness
from kinspect.postmortem.story.values import (
    Attribution,
    ConsumerSide,
    Counts,
    LostRanges,
    Method,
    PartitionRow,
    PowerCutStory,
    Report,
    opt_int,
)

if TYPE_CHECKING:
    from kinspect.postmortem.matching.results import LogStats, LostEpoch, LostRun

MD_RANGES = 10  # lost ranges per producer in report.md (report.json has more)


def clock(ts: int | None) -> str:
    """Local wall clock with tenths, as the brokers' logs and the demo narration use it."""
    if ts is None:
        return "?"
    moment = datetime.fromtimestamp(ts / 1000)
    return moment.strftime("%H:%M:%S") + f".{moment.microsecond // 100_000}"


def seconds(ms: int | None) -> str:
    if ms is None:
        return "?"
    return f"{ms / 1000:+.1f} s"


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 message`, `2 messages`, `3 extra copies`."""
    if n == 1:
        return f"{n:,} {one}"
    if many is None:
        many = one + "s"
    return f"{n:,} {many}"


def agree(n: int, one: str, many: str) -> str:
    """The verb's form for `n` things: `was` or `were`."""
    if n == 1:
        return one
    return many


NOT_RECORDED = "not recorded"  # a count an older report.json lacks: never shown as 0


def count_text(value: int | None) -> str:
    """`1,234`, or "not recorded" for a count the report's version did not measure."""
    if value is None:
        return NOT_RECORDED
    return f"{value:,}"


def duration(ms: int) -> str:
    if abs(ms) < 1000:
        return f"{ms} ms"
    return f"{ms / 1000:.1f} s"


def partition_rows(groups: Mapping[int, Counts], epochs: Sequence[LostEpoch],
                   log_stats: Sequence[LogStats], partitions: Sequence[int]) -> list[PartitionRow]:
    """One row per partition seen anywhere; ids with no partition (never sent) are left out."""
    stats = {s.partition: s for s in log_stats}
    keys = sorted({p for p in groups if p >= 0} | set(stats) | set(partitions))
    in_order = sorted(epochs, key=lambda e: _epoch_order(e.epoch))
    rows = []
    for p in keys:
        in_log, foreign, other_runs, reordered = _log_numbers(stats.get(p))
        rows.append(PartitionRow(p, groups.get(p, Counts()), in_log, foreign, other_runs,
                                 reordered, p in partitions, _lost_by_epoch(in_order, p)))
    return rows


def _epoch_order(epoch: int | None) -> int:
    """An unknown epoch sorts first."""
    if epoch is None:
        return -1
    return epoch


def _log_numbers(stats: LogStats | None) -> tuple[int, int, int, int]:
    """A partition's records in the final log, foreign, of other runs and reordered (zeros for
    a partition the final log lacks)."""
    if stats is None:
        return 0, 0, 0, 0
    return stats.in_log, stats.foreign, stats.other_runs, stats.reordered


def _lost_by_epoch(epochs: Sequence[LostEpoch], partition: int) -> dict[str, int]:
    """The partition's lost messages by leader epoch ("unknown" where none is known)."""
    by_epoch: dict[str, int] = {}
    for e in epochs:
        if e.pp != partition:
            continue
        name = "unknown"
        if e.epoch is not None:
            name = str(e.epoch)
        by_epoch[name] = by_epoch.get(name, 0) + e.count
    return by_epoch


def attribution(epochs: Sequence[LostEpoch]) -> list[Attribution]:
    """Lost messages by (partition, leader epoch, broker), largest first. `method` says how we
    know: "measured" (every one found in a kept replica snapshot), "inferred" (none), or "mixed"
    (`measured` of them were: a zombie keeps acknowledging for a moment after the heal, past
    the snapshot taken before it)."""
    rows: dict[tuple[int, int | None, int | None], Attribution] = {}
    measured: dict[tuple[int, int | None, int | None], int] = {}
    for e in epochs:
        key = (e.pp, e.epoch, e.broker)
        row = rows.get(key)
        if row is None:
            row = Attribution(e.pp, e.epoch, e.broker, 0, 0, e.first_ack_ts, e.last_ack_ts,
                              e.first_offset, e.last_offset)
        measured.setdefault(key, 0)
        if e.method == "measured":
            measured[key] += e.count
        rows[key] = replace(
            row, count=row.count + e.count,
            first_ack_ts=_pick(min, row.first_ack_ts, e.first_ack_ts),
            last_ack_ts=_pick(max, row.last_ack_ts, e.last_ack_ts),
            first_offset=_pick(min, row.first_offset, e.first_offset),
            last_offset=_pick(max, row.last_offset, e.last_offset))
    out = [replace(row, measured=measured[key], method=_method(measured[key], row.count))
           for key, row in rows.items()]
    return sorted(out, key=lambda a: (-a.count, a.partition, _epoch_order(a.leader_epoch)))


def _pick(how: Callable[[int, int], int], a: int | None, b: int | None) -> int | None:
    """`how` of the two where both are known, else the one known (None: neither)."""
    if a is None:
        return b
    if b is None:
        return a
    return how(a, b)


def _method(measured: int, count: int) -> Method:
    if measured == count:
        return "measured"
    if measured == 0:
        return "inferred"
    return "mixed"


def blamed(report: Report) -> dict[int | None, int]:
    """Lost messages per acknowledging broker (None: unknown), over every partition."""
    out: dict[int | None, int] = {}
    for a in report.attribution:
        out[a.broker] = out.get(a.broker, 0) + a.count
    return out


def ranges_by_producer(rows: Sequence[LostRun]) -> tuple[LostRanges, dict[str, int]]:
    ranges: dict[str, list[tuple[int, int]]] = {}
    more: dict[str, int] = {}
    for r in rows:
        key = str(r.producer)
        ranges.setdefault(key, []).append((r.lo, r.hi))
        more[key] = r.ranges - len(ranges[key])
    return {k: tuple(v) for k, v in ranges.items()}, {k: v for k, v in more.items() if v > 0}


def explain(report: Report, events: Sequence[TimelineEvent],
            leaders: dict[tuple[str, int], tuple[int, int]]) -> str:
    """One paragraph: what was lost, who acknowledged it when, and what the cluster did."""
    acked, lost = report.acked, report.acked_lost
    zero_note = ""
    if report.acks == "0":
        zero_note = ACKS_ZERO_NOTE
    if lost == 0:
        text = (f"No acknowledged message was lost: all {plural(acked, 'acknowledged message')} "
                f"{agree(acked, 'is', 'are')} in the final log{zero_note}.")
    else:
        text = (f"{plural(lost, 'acknowledged message')} {agree(lost, 'was', 'were')} "
                f"lost{zero_note}") + _why_lost(report, events, leaders)
    extras = _extras(report)
    if extras:
        text += " " + "; ".join(extras)[0].upper() + "; ".join(extras)[1:] + "."
    return text


ACKS_ZERO_NOTE = " (with acks=0 'acknowledged' only means handed to the network)"


def _why_lost(report: Report, events: Sequence[TimelineEvent],
              leaders: dict[tuple[str, int], tuple[int, int]]) -> str:
    """The power cut when its dropped batches hold the lost (the filesystem's record says so,
    not the leadership history); else who acknowledged them."""
    cut = report.power_cut
    if cut is None or not cut.lost_dropped:
        return _who_lost(report, events, leaders)
    share = "all of them"
    if cut.lost_dropped != report.acked_lost:
        share = f"{cut.lost_dropped:,} of them"
    return (f": acknowledged from the page cache of {_cut_brokers(cut)} and never on disk. "
            f"{_cuts_said(cut)}, {share} among the batches the filesystem dropped (its own "
            "record, power-cuts/).")


def _cut_brokers(cut: PowerCutStory) -> str:
    """The brokers that lost power, each once, however often it did."""
    ids = sorted({str(broker_id_of(node)) for node in cut.nodes}, key=lambda i: (len(i), i))
    if len(ids) == 1:
        return f"broker {ids[0]}"
    return "brokers " + ", ".join(str(i) for i in ids)


def _cuts_said(cut: PowerCutStory) -> str:
    """One power failure said as one (of one broker, or of several at once); a nemesis's many
    cuts as their count and span."""
    if not cut.one_instant:
        return (f"The {len(cut.nodes)} power cuts from {clock(cut.at_ms)} to "
                f"{clock(cut.last_ms)} each dropped every write its broker had not fsynced")
    if len(set(cut.nodes)) == 1:
        return f"The power cut at {clock(cut.at_ms)} dropped every write it had not fsynced"
    return (f"The power cut at {clock(cut.at_ms)} dropped every write those brokers had not "
            "fsynced, on all at once")


def _who_lost(report: Report, events: Sequence[TimelineEvent],
              leaders: dict[tuple[str, int], tuple[int, int]]) -> str:
    """Who acknowledged most of the lost messages, how we know, and what the cluster did."""
    top = report.attribution[0]
    who = "an unknown broker"
    if top.broker is not None:
        who = f"broker {top.broker}"
    share = ""
    if top.count != report.acked_lost:
        share = f" ({top.count:,} of them)"
    text = (f": {who} acknowledged them{share} {_epoch_words(top)} between "
            f"{clock(top.first_ack_ts)} and {clock(top.last_ack_ts)}")
    text += _context(report, top, events, leaders) + "."
    if top.broker is None and top.leader_epoch is not None:
        text += (f" Nothing recorded says which broker led epoch {top.leader_epoch} "
                 "(no timeline or broker logs cover it).")
    return text


def _epoch_words(top: Attribution) -> str:
    """`at leader epoch 3 (measured: ...)`: the epoch, and how we know who acknowledged."""
    epoch = "at an unknown leader epoch"
    if top.leader_epoch is not None:
        epoch = f"at leader epoch {top.leader_epoch}"
    if top.method == "measured":
        return epoch + " (measured: found in its kept log segments)"
    if top.method == "inferred":
        return epoch + " (inferred from the brokers' leadership history)"
    if top.method == "mixed":
        return epoch + (f" (measured for {count_text(top.measured)} of them, found in its kept "
                        "log segments; the rest inferred from the brokers' leadership history)")
    return epoch


def _extras(report: Report) -> list[str]:
    """The sentences beside the verdict: what the client did, copies, order, recovery."""
    extras = []
    if report.indefinite:
        extras.append(_indefinite(report))
    if report.unacked_present:
        extras.append(_unacked_present(report))
    if report.client_lost:
        extras.append(f"{plural(report.client_lost, 'message')} handed to the client "
                      f"{agree(report.client_lost, 'was', 'were')} never delivered: the "
                      "generator died with them in librdkafka's buffer (the client's loss, not "
                      "the brokers')")
    if report.refused:
        extras.append(f"{plural(report.refused, 'send')} "
                      f"{agree(report.refused, 'was', 'were')} refused by the client "
                      "because its buffer was full (_QUEUE_FULL: never sent, not a broker's loss)")
    if report.duplicates:
        extras.append(f"{plural(report.duplicates, 'extra copy', 'extra copies')} of "
                      f"{plural(report.duplicate_ids, 'message')} were written (retries without "
                      "idempotence)")
    if report.offsets_rewritten:
        extras.append(_rewritten(report))
    if report.other_runs_records:
        extras.append(f"{plural(report.other_runs_records, 'record')} of other runs "
                      f"{agree(report.other_runs_records, 'is', 'are')} in the topic too "
                      "(not counted here)")
    if report.reordered:
        extras.append(f"{plural(report.reordered, 'message')} "
                      f"{agree(report.reordered, 'sits', 'sit')} behind a later message of "
                      "the same producer")
    if report.first_ack_after_fault_ms is not None:
        extras.append(_first_ack(report.first_ack_after_fault_ms,
                                 report.first_kept_ack_after_fault_ms))
    return extras


def _rewritten(report: Report) -> str:
    """Acked offsets that hold another record now, and who wrote it, where most of them are."""
    count = report.offsets_rewritten or 0
    text = (f"{plural(count, 'acknowledged offset')} {agree(count, 'holds', 'hold')} another "
            "record in the final log (Jepsen's inconsistent offsets: the log was truncated there "
            "and written again)")
    if not report.rewritten:
        return text
    top = max(report.rewritten, key=lambda r: r.count)
    text += f", most in partition {top.pp}, written over at leader epoch {count_text(top.held_epoch)}"
    if top.acked_epoch is not None:
        text += f" after epoch {top.acked_epoch} acknowledged them"
    return text


def _indefinite(report: Report) -> str:
    """The sends with no definite answer, apart from the acknowledged and the failed."""
    count = report.indefinite or 0
    text = (f"{plural(count, 'send')} got no definite answer (timed out, cut off or never "
            "answered: Jepsen's :info)")
    if report.indefinite_present is not None:
        text += f", and {report.indefinite_present:,} of them are in the log (not an error)"
    return text


def _unacked_present(report: Report) -> str:
    """The messages in the log the producer never saw acknowledged, by what it was told."""
    text = (f"{plural(report.unacked_present, 'message')} the producer never saw acknowledged "
            f"{agree(report.unacked_present, 'is', 'are')} in the log anyway")
    kinds = _unacked_kinds(report)
    if kinds:
        text += ": " + " and ".join(kinds)
    return text


def _unacked_kinds(report: Report) -> list[str]:
    """What the producer was told of the unacknowledged messages the log holds: nothing
    definite, or a definite failure the log contradicts."""
    if report.indefinite_present is None:  # a report from before sends had three values
        if not report.unknown_present:
            return []
        return [f"{report.unknown_present:,} of them unknown, sent by a generator that died "
                "before its ledger recorded an answer"]
    kinds = []
    if report.indefinite_present:
        kinds.append(f"the {report.indefinite_present:,} without a definite answer")
    if report.failed_present:
        kinds.append(f"{report.failed_present:,} that failed with a definite error (Jepsen's "
                     f":fail) yet {agree(report.failed_present, 'was', 'were')} written")
    return kinds


def _first_ack(after: int, kept: int | None) -> str:
    """When acknowledgements came back after the fault, and when the first that lasted did."""
    text = f"the first successful acknowledgement after the fault came {duration(after)} after it"
    if kept is not None and kept != after:
        text += f", the first one that lasted {duration(kept)} after it"
    return text


@dataclass(frozen=True)
class _Moment:
    """A moment the paragraph tells: its time, its rank among moments of the same time, and its
    words when it comes first or after another (`then`)."""

    ts: int
    rank: int
    first: str
    then: str


SEEN_BY = {"observer": "the observer", "controller log": "the controller"}
GONE_KINDS: set[TimelineKind] = {LogKind.SESSION_EXPIRED, LogKind.BROKER_GONE,
                                 EventKind.BROKER_GONE}


def _context(report: Report, top: Attribution, events: Sequence[TimelineEvent],
             leaders: dict[tuple[str, int], tuple[int, int]]) -> str:
    """What the cluster did, in time order, each moment by the clock that saw it: a broker
    logs its ZooKeeper session's expiry only once it reaches ZooKeeper again, long after
    ZooKeeper expired it (which the controller and the observer saw when it happened)."""
    broker, fault, fault_ts = top.broker, report.fault, None
    parts = []
    if fault and broker is not None and fault.get("node") == broker_node(broker):
        fault_ts = opt_int(fault, "ts")
        parts.append(f", after the fault ({fault['action']} {fault['node']} at "
                     f"{clock(fault_ts)})")
    since = _pick(min, top.first_ack_ts, fault_ts)
    moments = _session_moments(broker, events, since) + _election(report, top, leaders) \
        + _truncation(broker, f"{report.topic}-{top.partition}", top.first_ack_ts, events)
    told = sorted(moments, key=lambda m: (m.ts, m.rank))
    if told:
        parts.append(f"; {told[0].first}")
        parts += [f"; {m.then}" for m in told[1:]]
    return "".join(parts)


def _first_of(events: Sequence[TimelineEvent], kinds: set[TimelineKind], broker: int,
              since: int | None) -> TimelineEvent | None:
    return next((e for e in events if e.kind in kinds and e.broker == broker
                 and (since is None or e.ts >= since)), None)


def _session_moments(broker: int | None, events: Sequence[TimelineEvent],
                     since: int | None) -> list[_Moment]:
    """When ZooKeeper ended the broker's session (its own log, the controller's line, the
    observer's sighting), when the broker itself learned it (its own late line), or in KRaft
    when the quorum fenced it."""
    if broker is None:
        return []
    gone = _first_of(events, GONE_KINDS, broker, since)
    learned_since = since
    if gone is not None:
        learned_since = gone.ts
    learned = _first_of(events, {LogKind.ZK_EXPIRED}, broker, learned_since)
    out = []
    if gone is not None:
        words = _gone_words(broker, gone, learned is not None)
        out.append(_Moment(gone.ts, 0, words, words))
    if learned is not None:
        words = _learned_words(broker, learned, gone is not None)
        out.append(_Moment(learned.ts, 3, words, words))
    fenced = _first_of(events, {LogKind.BROKER_FENCED, EventKind.BROKER_FENCED}, broker, since)
    if fenced is not None and gone is None and learned is None:
        words = f"the controller quorum fenced it at {clock(fenced.ts)}"
        out.append(_Moment(fenced.ts, 1, words, words))
    return out


def _learned_words(broker: int, learned: TimelineEvent, gone: bool) -> str:
    """The broker's own late line that ZooKeeper had expired its session."""
    if gone:
        return (f"broker {broker} itself learned of it only at {clock(learned.ts)}, when it "
                "reached ZooKeeper again")
    return (f"broker {broker} learned at {clock(learned.ts)}, on reaching ZooKeeper again, that "
            "ZooKeeper had expired its session")


def _gone_words(broker: int, gone: TimelineEvent, learned: bool) -> str:
    """ZooKeeper's own line, or the broker learning it later, says the session expired; the
    controller and the observer saw only the registration go (a clean shutdown does that too)."""
    sources = gone.sources or (witness(gone),)
    others = " and ".join(SEEN_BY[s] for s in sources if s in SEEN_BY)
    by_zookeeper = "zookeeper log" in sources
    what = f"broker {broker} was gone from ZooKeeper"
    if by_zookeeper or learned:
        what = f"ZooKeeper expired broker {broker}'s session"
    seen = f"as {others} saw it"
    if by_zookeeper:
        seen = "ZooKeeper's own log"
    if by_zookeeper and others:
        seen += f"; {others} saw it too"
    return f"{what} at {clock(gone.ts)} ({seen})"


def _election(report: Report, top: Attribution,
              leaders: dict[tuple[str, int], tuple[int, int]]) -> list[_Moment]:
    """The next leader the controller made. Made while the broker still acknowledged: first
    in the story it "had already" made it; after another moment it "then" made it while the
    broker still acknowledged."""
    epoch, partition, last = top.leader_epoch, f"{report.topic}-{top.partition}", top.last_ack_ts
    if epoch is None:
        return []
    later = sorted((e, b, ts) for (p, e), (b, ts) in leaders.items() if p == partition and e > epoch)
    if not later:
        return []
    e2, b2, ts2 = later[0]
    made = f"broker {b2} leader at {clock(ts2)} (epoch {e2})"
    if last is None or ts2 > last:  # made once the broker had stopped acknowledging
        return [_Moment(ts2, 2, f"the controller then made {made}",
                        f"the controller then made {made}")]
    who = "the old leader"
    if top.broker is not None:
        who = f"broker {top.broker}"
    return [_Moment(ts2, 2, f"the controller had already made {made}",
                    f"the controller then made {made}, while {who} still acknowledged writes "
                    f"until {clock(last)}")]


def _truncation(broker: int | None, partition: str, since: int | None,
                events: Sequence[TimelineEvent]) -> list[_Moment]:
    truncs = [e for e in events if e.kind is LogKind.TRUNCATE and e.broker == broker
              and e.partition in {partition, None} and e.ts >= (since or 0)]
    if broker is None or not truncs:
        return []
    words = (f"when broker {broker} came back it truncated its log to offset "
             f"{truncs[0].offset:,}")
    return [_Moment(truncs[0].ts, 4, words, words)]


MD_NUMBERS = ("sent", "acked", "failed", "refused", "unknown", "indefinite", "client_lost",
              "in_log", "acked_lost", "unacked_present", "indefinite_present", "failed_present",
              "duplicates", "reordered", "offsets_rewritten")


def markdown(report: Report) -> str:
    lines = [f"# Post-mortem: {report.run_dir}", "",
             f"Run `{report.run_id or '(no id)'}`, topic `{report.topic}`, "
             f"acks={report.acks}, {report.engine}, {report.seconds:.1f} s.", "",
             report.explanation, "", "| | messages |", "|---|---:|"]
    for key in MD_NUMBERS:
        lines.append(f"| {key.replace('_', ' ')} | {count_text(getattr(report, key))} |")
    if report.live_lost is not None:
        lines.append(f"| acked lost, as judged live | {report.live_lost:,} |")
    lines += consumer_markdown(report.consumers)
    lines += partition_markdown(report.partitions)
    lines += attribution_markdown(report)
    lines += slow_link_markdown(report.slow_links)
    lines += ["", "## Unavailability", ""]
    if report.unavailable:
        lines += [f"- {w.partition}: {clock(w.start)} → {clock(w.end)} ({w.ms / 1000:.1f} s, "
                  f"{w.reason})" for w in report.unavailable]
    else:
        lines.append("No window without a leader or without successful acknowledgements.")
    lines += timeline_markdown(report)
    if report.notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in report.notes]]
    return "\n".join(lines) + "\n"


def partition_markdown(partitions: Sequence[PartitionRow]) -> list[str]:
    lines = ["", "## Per partition", "", "| partition | acked | in log | acked lost | unacked present "
             "| duplicates | reordered | lost by epoch |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in partitions:
        epochs = ", ".join(f"{k}: {v:,}" for k, v in p.lost_by_epoch.items()) or "-"
        log = "no final log"
        if p.final_log:
            log = f"{p.in_log:,}"
        c = p.counts
        lines.append(f"| {p.partition} | {c.acked:,} | {log} | {c.acked_lost:,} | "
                     f"{c.unacked_present:,} | {c.duplicates:,} | {p.reordered:,} | {epochs} |")
    return lines


def attribution_markdown(report: Report) -> list[str]:
    """Who acknowledged the lost messages, and the lost ids by producer."""
    if not report.attribution:
        return []
    lines = ["", "## Lost, by who acknowledged them", "", "| partition | epoch | broker | lost | "
             "acked from | to | how we know |", "|---:|---:|---:|---:|---|---|---|"]
    for a in report.attribution:
        broker = "unknown"
        if a.broker is not None:
            broker = str(a.broker)
        lines.append(f"| {a.partition} | {a.leader_epoch} | {broker} | "
                     f"{a.count:,} | {clock(a.first_ack_ts)} | {clock(a.last_ack_ts)} | "
                     f"{_how_we_know(a)} |")
    lines += ["", "Lost ids (producer: seq ranges):", ""]
    for producer, ranges in report.lost_ranges.items():
        shown = ", ".join(_seq_range(lo, hi) for lo, hi in ranges[:MD_RANGES])
        more = report.lost_ranges_more.get(producer, 0) + max(0, len(ranges) - MD_RANGES)
        line = f"- {producer}: {shown}"
        if more:
            line += f" and {more:,} more ranges"
        lines.append(line)
    return lines


def _how_we_know(a: Attribution) -> str:
    if a.method is None:
        return NOT_RECORDED
    if a.method == "mixed":
        return f"{count_text(a.measured)} measured, rest inferred"
    return a.method


def _seq_range(lo: int, hi: int) -> str:
    """`7-9`, or `7` for a range of one."""
    if lo == hi:
        return str(lo)
    return f"{lo}-{hi}"


def timeline_markdown(report: Report) -> list[str]:
    lines = ["", "## Timeline", ""]
    if not report.timeline:
        lines.append("No timeline was recorded (no timeline.jsonl, faults.jsonl or broker logs).")
    for e in report.timeline:
        lines.append(f"- {clock(opt_int(e, 'ts'))} ({seconds(opt_int(e, 'delta_ms'))}) "
                     f"{e['detail']}{_seen_by(e.get('sources'))}")
    if report.timeline_more:
        lines.append(f"- … and {report.timeline_more:,} more events")
    return lines


def _seen_by(sources: object) -> str:
    """` [observer, controller log]` for an event more than one source saw."""
    if not isinstance(sources, list) or len(sources) < 2:
        return ""
    return f" [{', '.join(map(str, sources))}]"


def slow_link_markdown(links: Sequence[Mapping[str, object]]) -> list[str]:
    """One line per slowed link (story/timeline.py SlowLink.to_json): the shape, and what the
    ISR did about it."""
    if not links:
        return []
    lines = ["", "## Slow links", ""]
    for link in links:
        text = (f"- {link['node']}: {link.get('shape') or 'slowed'} from "
                f"{clock(opt_int(link, 'slowed_ts'))}")
        left_ms = opt_int(link, "left_isr_ms")
        if link["left_isr_ts"] is not None and left_ms is not None:
            text += (f"; left the ISR at {clock(opt_int(link, 'left_isr_ts'))}, "
                     f"{left_ms / 1000:.1f} s later")
        else:
            text += "; never left the ISR"
        if link["unslowed_ts"] is not None:
            text += f"; full speed again at {clock(opt_int(link, 'unslowed_ts'))}"
        if link["rejoined_ts"] is not None:
            text += f"; back in the ISR at {clock(opt_int(link, 'rejoined_ts'))}"
        lines.append(text)
    return lines


CONSUMER_NUMBERS = ("answered_for", "processed", "never_processed", "committed_unprocessed",
                    "processed_twice", "redelivered_records", "unconsumed_at_end")


def consumer_markdown(side: ConsumerSide | None) -> list[str]:
    """The consumer group's section: counts, causes, Jepsen's names with their definitions."""
    if not side:
        return []
    lines = ["", f"## Consumer group `{side.group}` (commit {side.commit})", "",
             "| | records |", "|---|---:|"]
    for key in CONSUMER_NUMBERS:
        lines.append(f"| {key.replace('_', ' ')} | {getattr(side, key):,} |")
    output = side.output_counts
    if output:
        lines.append(f"| output, read_committed | {output.committed_records:,} |")
        lines.append(f"| output, read_uncommitted | {output.all_records:,} |")
        lines.append(f"| aborted, visible to read_uncommitted | {output.aborted_visible:,} |")
    causes = [(c, n) for c, n in side.never_processed_by_cause.items() if n]
    if causes:
        lines += ["", "Never processed, by cause:", ""]
        lines += [f"- {side.cause_definitions[c]}: {n:,}" for c, n in causes]
    lines += ["", "Jepsen's names:", ""]
    lines += [f"- {name}: {side.jepsen[name]:,} ({definition})"
              for name, definition in side.jepsen_definitions.items()]
    return lines


def summary(report: Report) -> str:
    """The compact human summary for stdout."""
    return "\n".join([
        f"sent {report.sent:,}  acked {report.acked:,}  failed {report.failed:,}  "
        f"unknown {report.unknown:,}  in log {report.in_log:,}",
        f"acked but lost {report.acked_lost:,}  unacked present {report.unacked_present:,}  "
        f"duplicates {report.duplicates:,}  reordered {report.reordered:,}",
        report.explanation, f"report: {report.out}"])


def write(report: Report, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))
