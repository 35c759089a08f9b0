"""Rendering: the model and the lab's state → cells and lines (Rich text).

Pure functions of their arguments: no Textual, no I/O, nothing of the lab imported (its state
is only a type here), so they are cheap to test and reuse.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from rich.filesize import decimal
from rich.style import Style
from rich.text import Text

from kinspect.lab.faults import FaultKind
from kinspect.lab.journal import cut_text
from kinspect.model import (
    ClusterSnapshot,
    Event,
    PartitionInfo,
    QuorumInfo,
    ReplicaLog,
    Severity,
    Unknown,
)
from kinspect.model.assessment import (
    STALLED_AFTER_MS,
    HealthReport,
    Unchecked,
    Verdict,
    duration,
    unchecked,
)
from kinspect.model.lag import LagTrend
from kinspect.model.partition_words import ids
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterFinding,
    GroupInfo,
    GroupPartition,
    Throttle,
)
from kinspect.tui.partition_rows import BrokerCounts, broker_counts

if TYPE_CHECKING:
    from kinspect.lab.journal import JournalEntry
    from kinspect.lab.state import LabState, NodeRecord
    from kinspect.tui.partition_rows import TopicSummary

STALE_AFTER_MS = 5000
BROKER_COLUMNS = ("id", "address", "lab", "zk", "leads", "not in ISR", "disk")
# The labels in KRaft, by column key: "zk" says whether the broker is in the cluster metadata.
KRAFT_BROKER_LABELS = {"zk": "metadata"}
UNKNOWN_STYLE = "bold yellow"
SEVERITY_STYLE = {"offline": "bold white on red", "under_min_isr": "bold red",
                  "unknown": UNKNOWN_STYLE, "warn": "yellow", "moving": "cyan", "ok": ""}
# Each severity's colour, for an event and a cluster finding alike (a finding's severity is its
# kind's in the check registry, health_checks.KINDS).
SEVERITY_COLOURS: dict[Severity, str] = {Severity.INFO: "green", Severity.WARN: "yellow",
                                         Severity.ERROR: "bold red", Severity.CRITICAL: "bold red"}
# Separators get a colour of their own: an SVG export draws each run of one style as one text
# element and viewers drop its leading spaces, which glued "connected" to "admin". A run that
# starts with the separator's own style keeps the words apart on screen and in screenshots.
SEP_STYLE = Style.parse("#707070")
# Spaces between words, in a run of their own: italic, which no glyph of a space shows.
PAD_STYLE = Style(italic=True)


def sep(text: Text, mark: str = "│") -> Text:
    """` │ ` between two facts: the spaces and the mark each in a style of their own."""
    return text.append(" ", PAD_STYLE).append(mark, SEP_STYLE).append(" ", PAD_STYLE)

DIVERGED_STYLE = "bold magenta"
ENGINE_STYLES = {"starting": "yellow", "ready": "green", "busy": "bold cyan", "failed": "red"}
VERDICT_STYLES = {Verdict.HEALTHY: "green", Verdict.WARNING: "bold yellow",
                  Verdict.CRITICAL: "bold white on red", Verdict.UNKNOWN: "bold magenta",
                  Verdict.UNREACHABLE: "bold white on red"}


def clock_text(ts_ms: int) -> str:
    local = time.localtime(ts_ms / 1000)
    return time.strftime("%H:%M:%S", local) + f".{ts_ms % 1000:03d}"


def header_text(snapshot: ClusterSnapshot | None, now_ms: int, title: str,
                problems: tuple[str, ...] = (), engine: str = "",
                health: Verdict | None = None) -> Text:
    """One line: where we are, who controls it, the health verdict (`kinspect health`'s, from
    the same assessment), how fresh the picture is, what is failing (and, beside a lab, whether
    the warm Spark engine for m is ready). In KRaft the controller is the quorum leader, and a
    second line shows the quorum."""
    text = Text.assemble(("kinspect ", "bold"), (title, "bold cyan"))
    if snapshot is None:
        text.append("  connecting…", "yellow")
        return _failing(text, problems)
    sep(text)
    if snapshot.kraft:
        _kraft_controller(text, snapshot.quorum, snapshot.controller_unknown)
    else:
        _zk_controller(text, snapshot)
    sep(text)
    text.append("admin ")
    text.append(snapshot.admin_state, "green" if snapshot.admin_state == "ok" else "bold red")
    if health is not None:
        sep(text)
        text.append("health ")
        text.append(health.value, VERDICT_STYLES[health])
    sep(text)
    age = max(0, now_ms - snapshot.taken_at)
    if age > STALE_AFTER_MS:
        text.append(f"STALE {age / 1000:.0f} s", "bold white on red")
    else:
        text.append(f"{age / 1000:.1f} s ago", "dim")
    if engine:
        sep(text)
        text.append("spark ", "dim")
        text.append(engine, ENGINE_STYLES.get(engine, "dim"))
    _failing(text, problems)
    if snapshot.kraft:
        text.append("\n").append_text(quorum_text(snapshot.quorum))
    return text


def _zk_controller(text: Text, snapshot: ClusterSnapshot) -> None:
    controller = snapshot.controller
    if controller.id is None:
        text.append("NO CONTROLLER", "bold white on red")
    else:
        text.append(f"controller {controller.id} ")
        if controller.epoch is not None:  # ZooKeeper's /controller_epoch; unknown without it
            text.append(f"(epoch {controller.epoch})", "dim")
    sep(text)
    session = snapshot.zookeeper_state
    if session is None:
        text.append("ZooKeeper: not watched", "dim")
    else:
        text.append("ZK ")
        text.append(session, "green" if session == "connected" else "bold red")


def _kraft_controller(text: Text, quorum: QuorumInfo | None, unknown: Unknown | None) -> None:
    """The quorum leader: the broker Metadata names as controller is a random one in KRaft."""
    if quorum is None and unknown is not None:
        text.append(f"controller ? ({unknown.reason})", "bold yellow")
    elif quorum is None:
        text.append("controller ? (the quorum does not answer)", "bold red")
    elif quorum.leader_id is None:
        text.append("NO QUORUM LEADER", "bold white on red")
        text.append(f" (epoch {quorum.leader_epoch})", "dim")
    else:
        text.append(f"controller {quorum.leader_id} ")
        text.append(f"(quorum leader, epoch {quorum.leader_epoch})", "dim")
    sep(text)
    text.append("KRaft")


def _member_text(node: int, lag: int | None, leader: bool) -> Text:
    if leader:
        return Text(f"{node}*", "bold")
    if lag is None:
        return Text(f"{node}:?", "dim")
    if lag <= 0:
        return Text(f"{node}:✓", "dim")
    return Text(f"{node}:-{lag:,}", "yellow")


def quorum_text(quorum: QuorumInfo | None) -> Text:
    """`quorum hw 1,234 │ voters 101* 102:✓ 103:-12 │ observers 1:✓ 2:-3`: the leader starred,
    each member's lag behind its log end; controllers asked directly that do not answer, or
    still answer as leader at an older epoch, are named."""
    text = Text("quorum ", "bold")
    if quorum is None:
        return text.append("no answer to DescribeQuorum", "bold red")
    text.append(f"hw {quorum.high_watermark:,}", "dim")
    for label, members in (("voters", quorum.voters), ("observers", quorum.observers)):
        if not members:
            continue
        sep(text).append(f"{label} ", "dim")
        for i, m in enumerate(members):
            if i:
                text.append(" ", PAD_STYLE)
            text.append_text(_member_text(m.id, m.lag, m.id == quorum.leader_id))
    unreachable = [c.node_id for c in quorum.controllers if c.state in ("unreachable", "error")]
    if unreachable:
        sep(text).append(f"no answer from {ids(tuple(unreachable))}", "bold red")
    for stale in quorum.stale_leaders:
        sep(text).append(f"{stale.node_id} still leads at epoch {stale.leader_epoch}",
                         "bold magenta")
    return text


def _failing(text: Text, problems: tuple[str, ...]) -> Text:
    """Last on the line, so a long error never hides the controller or the staleness."""
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        text.append(f"  FAILING: {problems[0]}{more}", "bold white on red")
    return text


@dataclass(frozen=True)
class BrokerRow:
    broker_id: int
    cells: tuple[Text, ...]


# Every node state's colour (tests/tui: one for each NodeState)
# (by value: the lab's state module is not imported at the screen's start)
STATE_STYLES = {"running": "green", "paused": "bold yellow", "stopped": "yellow",
                "killed": "bold red", "exited": "bold red", "powered-off": "bold red"}


def lab_state_text(node: NodeRecord | None, lab: LabState | None) -> Text:
    if node is None or lab is None:
        return Text("—", "dim")
    style = STATE_STYLES.get(node.state, "")
    text = Text().append(node.state, style)  # styled as a span: padding stays plain
    blocked = lab.cut_off_from(node.name) if lab.groups else []
    if blocked:
        sep(text, "·").append("cut off from " + ",".join(blocked), "bold magenta")
    slowed = lab.slowed_links().get(node.name)
    if slowed:
        sep(text, "·").append(f"slow link: {slowed.get('words', '')}",
                                             "bold yellow")
    return text


def _span(text: str, style: str) -> Text:
    """Styled as a span, not as the cell's base style: a table pads a cell with its base
    style, and a padded run starting with spaces loses them in SVG viewers."""
    return Text().append(text, style)


def broker_rows(snapshot: ClusterSnapshot | None, lab: LabState | None,
                counts: BrokerCounts | None = None) -> list[BrokerRow]:
    """Brokers the cluster knows, plus lab brokers it does not (those are the news). `counts`:
    the snapshot's, when the feed's thread made them (partition_rows.Prepared)."""
    lab_nodes: dict[int | None, NodeRecord] = {}
    if lab:
        lab_nodes = {n.broker_id: n for n in lab.brokers}
    known: dict[int, BrokerInfo] = {}
    if snapshot:
        known = {b.id: b for b in snapshot.brokers}
    if counts is None:
        counts = broker_counts(snapshot)
    leading, out_of_isr = counts
    broker_ids = sorted(set(known) | {i for i in lab_nodes if i is not None})
    return [_broker_row(i, known.get(i), lab_nodes.get(i), lab, leading.get(i, 0),
                        out_of_isr.get(i, 0)) for i in broker_ids]


def _broker_row(broker_id: int, info: BrokerInfo | None, node: NodeRecord | None,
                lab: LabState | None, leads: int, missing: int) -> BrokerRow:
    """One broker's cells: id, address, its lab node's state, whether the cluster has it, the
    partitions it leads, the ISRs it is missing from, its disks."""
    missing_style = "dim"
    if missing:
        missing_style = "bold yellow"
    return BrokerRow(broker_id, (
        _span(str(broker_id), "bold"), Text(_address(info, node)), lab_state_text(node, lab),
        _membership(info), Text(str(leads)), _span(str(missing), missing_style),
        disk_text(info)))


def _address(info: BrokerInfo | None, node: NodeRecord | None) -> str:
    """Where the cluster says the broker is, else where the lab started it."""
    if info is not None and info.address:
        return info.address
    if node is not None:
        return node.address
    return "?"


def _membership(info: BrokerInfo | None) -> Text:
    """The `zk` cell: registered in ZooKeeper, or in KRaft unfenced in the cluster metadata."""
    if info is not None and info.fenced is not None:
        if info.fenced:
            return _span("FENCED", "bold red")
        return _span("yes", "green")
    if info is None or info.registered is None:
        return _span("?", "dim")
    if info.registered:
        return _span("yes", "green")
    return _span("NO", "bold red")


def disk_text(info: BrokerInfo | None) -> Text:
    """What a broker's replicas hold on disk, the least room left in one of its log dirs (the
    first to fill), and any offline dir in red ("—": not asked, "?": not told)."""
    dirs = info.log_dirs if info is not None else None
    if dirs is None:
        return _span("—", "dim")
    if isinstance(dirs, Unknown):
        return _span("?", UNKNOWN_STYLE)
    text = Text(decimal(sum(d.size for d in dirs)))
    free = [d.usable_bytes for d in dirs if d.usable_bytes is not None and not d.offline]
    if free:
        text.append(f" · {decimal(min(free))} free", "dim")
    for d in dirs:
        if d.offline:  # the dir's name: the whole path is in the warning beside
            sep(text, "·").append(f"{PurePath(d.path).name} OFFLINE", "bold red")
    return text


def throttle_words(throttle: Throttle) -> str:
    """`leader 97.7 KiB/s, follower 97.7 KiB/s`: the rates kafka-reassign-partitions set."""
    rates = (("leader", throttle.leader_rate), ("follower", throttle.follower_rate))
    return ", ".join(f"{role} {rate / 1024:,.1f} KiB/s" for role, rate in rates
                     if rate is not None)


def moving_text(p: PartitionInfo) -> Text:
    """`moving +4 -3 (4:-1,203)`: a reassignment adding 4 and removing 3, and how far each
    replica being added trails the leader's log; `STALLED 75 s` when none moved for a while."""
    parts = [("moving", "cyan")]
    if p.adding:
        parts.append((f"+{ids(p.adding)}", "cyan"))
    if p.removing:
        parts.append((f"-{ids(p.removing)}", "cyan"))
    behind = [f"{r.broker}:{'?' if r.lag is None else f'-{max(0, r.lag):,}'}"
              for r in p.replica_logs if r.broker in p.adding]
    if behind:
        parts.append((f"({' '.join(behind)})", "dim"))
    if p.stalled_ms is not None and p.stalled_ms >= STALLED_AFTER_MS:
        parts.append((f"STALLED {p.stalled_ms / 1000:.0f} s", "bold yellow"))
    text = Text()
    for i, (words, style) in enumerate(parts):
        if i:
            text.append(" ", PAD_STYLE)
        text.append(words, style)
    return text


def isr_text(p: PartitionInfo) -> Text:
    """`1,2 -3`: the ISR and the replicas missing from it; `+4` a replica a reassignment is
    adding, still catching up (not missing)."""
    text = Text(ids(p.isr), "")
    if p.missing:
        text.append(" ", PAD_STYLE).append("-" + ids(p.missing), "bold red")
    joining = tuple(r for r in p.adding if r not in p.isr)
    if joining:
        text.append(" ", PAD_STYLE).append("+" + ids(joining), "cyan")
    return text


def replica_log_text(p: PartitionInfo, log: ReplicaLog) -> Text:
    """`1:12,403` for the leader's log end, `2:-3` for a follower 3 messages behind (`2:✓`
    caught up), and
    `⚠ 2 +8,120 past e5` for a replica holding records the leader's log does not (a cut-off
    old leader: they go when it rejoins)."""
    broker = log.broker
    if log.diverged > 0:
        epoch = "?" if log.epoch is None else str(log.epoch)
        return Text(f"⚠ {broker} +{log.diverged:,} past e{epoch}", DIVERGED_STYLE)
    if log.log_end is None:
        return Text(f"{broker}:?", "dim")
    if broker == p.leader:
        return Text(f"{broker}:{log.log_end:,}", "bold")
    if log.lag is None:
        return Text(f"{broker}:?", "dim")
    stale = log.epoch is not None and p.leader_epoch is not None and log.epoch < p.leader_epoch
    if log.lag < 0 and stale:  # ahead of the leader at an older epoch: a cut-off old leader
        return Text(f"{broker}:+{-log.lag:,}", DIVERGED_STYLE)
    if log.lag <= 0:  # caught up (a follower asked a moment after the leader may read ahead)
        return Text(f"{broker}:✓", "dim")
    return Text(f"{broker}:-{log.lag:,}", "yellow")


def replica_logs_text(p: PartitionInfo) -> Text:
    """Every replica's log, in replica order (empty when the brokers were not asked)."""
    text = Text()
    order = {b: i for i, b in enumerate(p.replicas)}
    for i, log in enumerate(sorted(p.replica_logs, key=lambda r: order.get(r.broker, 99))):
        if i:
            text.append(" ", PAD_STYLE)
        text.append_text(replica_log_text(p, log))
    return text


def healthy(p: PartitionInfo) -> bool:
    return p.state == "ok" and not p.views_disagree


def event_line(event: Event) -> Text:
    text = Text(clock_text(event.ts) + " ", "dim")
    text.append(f"{event.kind:<24}", SEVERITY_COLOURS.get(event.severity, ""))
    if event.partition:
        text.append(f"{event.partition} ", "bold")
    return text.append(event.detail)


def fault_line(entry: JournalEntry) -> Text:
    """A journaled fault in the event log: `fault: isolate  kafka1 from zk (kafka1 | …)`."""
    text = Text(clock_text(entry.ts) + " ", "dim")
    text.append(f"{'fault: ' + entry.action:<24}", "bold magenta")
    return text.append(fault_detail(entry))


def fault_detail(entry: JournalEntry) -> str:
    """The node and what was done to it; an isolation says from what, then the cut it made."""
    detail = entry.detail
    if entry.groups:
        detail = cut_text(entry.groups)
    if entry.action == FaultKind.ISOLATE and entry.scope is not None:
        detail = f"from {entry.scope} ({detail})"
    return f"{entry.node or ''} {detail}".strip()


def warnings_text(snapshot: ClusterSnapshot | None, health: HealthReport | None = None) -> Text:
    """Findings, then each check kinspect could not make (`?`, with the reason: a refused
    request is said, never taken as healthy), then what this view cannot show. `health`: the
    snapshot's assessment when already made (the TUI's, in the feed's thread); without it the
    unmade checks are worked out here (~6 ms at 10,000 partitions)."""
    if snapshot is None:
        return Text("no cluster warnings", "dim")
    missing = _unmade(snapshot, health)
    throttled = _throttling(snapshot)
    if not (snapshot.findings or snapshot.limitations or missing or throttled):
        return Text("no cluster warnings", "dim")
    text = Text()
    for finding in snapshot.findings:
        _finding_line(text, finding)
    for check in missing:
        text.append("? ", UNKNOWN_STYLE).append(check.text + "\n")
    for broker_id, throttle in throttled:
        text.append("▾ ", "cyan").append(f"broker {broker_id} throttles replication: "
                                         f"{throttle_words(throttle)}\n")
    for limitation in snapshot.limitations:
        text.append("· " + limitation + "\n", "dim")
    text.rstrip()
    return text


def _unmade(snapshot: ClusterSnapshot, health: HealthReport | None) -> tuple[Unchecked, ...]:
    """The assessment's unmade checks, or the snapshot's worked out here without one."""
    if health is not None:
        return health.unchecked
    return unchecked(snapshot)


def _throttling(snapshot: ClusterSnapshot) -> list[tuple[int, Throttle]]:
    """The brokers whose replication throttle is on, with it."""
    return [(b.id, b.throttle) for b in snapshot.brokers
            if isinstance(b.throttle, Throttle) and b.throttle.active]


def _finding_line(text: Text, finding: ClusterFinding) -> None:
    """`▲ warn broker 3 is expected but not registered`: the mark and the severity's word in
    its colour."""
    style = SEVERITY_COLOURS[finding.severity]
    text.append(f"▲ {finding.severity}", style).append(" ", PAD_STYLE)
    text.append(finding.message + "\n")


def groups_text(snapshot: ClusterSnapshot | None, trend: LagTrend, width: int = 160,
                limit: int = 6) -> Text:
    """One line per consumer group: state, members, lag and its trend, and the partitions
    that lag most (on-call's question beside ISR health: is anyone falling behind?)."""
    if snapshot is None or not (snapshot.groups or snapshot.groups_unknown):
        return Text("no consumer groups (ListGroups shows those this user may describe)", "dim")
    groups = snapshot.groups
    text = Text()
    for name, why in snapshot.groups_unknown[:limit]:
        text.append(f"{name[:28]:<28} ", "bold").append("? ", UNKNOWN_STYLE)
        text.append(why.reason + "\n", "dim")
    for group in sorted(groups, key=_most_behind_first)[:limit]:
        _group_line(text, group, trend.per_second(group.group_id), snapshot.taken_at)
    if len(groups) > limit:
        text.append(f"… {len(groups) - limit} more groups (kinspect snapshot --json)", "dim")
    text.rstrip()
    text.truncate(width * (limit + 1))
    return text


def _most_behind_first(lagging: GroupInfo | GroupPartition) -> int:
    """A sort key: the most records behind first, an unknown lag as none."""
    lag = lagging.lag
    if lag is None:
        return 0
    return -lag


def _group_line(text: Text, group: GroupInfo, rate: float | None, taken_at: int) -> None:
    """`billing  stable  2 members  lag 1,234 ↑ +50/s · 90.0 s behind   orders-0 900 (at 10)`."""
    state_style = "yellow"
    if group.state == "stable":
        state_style = "green"
    text.append(f"{group.group_id[:28]:<28} ", "bold").append(f"{group.state:<10} ",
                                                                state_style)
    text.append(f"{group.members:>2} members  ")
    _lag_cell(text, group.lag)
    if rate is not None:
        arrow, style = _trend_arrow(rate)
        text.append(f" {arrow} {rate:+,.0f}/s", style)
    _behind(text, group, taken_at)
    text.append("\n")


def _lag_cell(text: Text, lag: int | None) -> None:
    style = ""
    if lag:
        style = "bold red"
    if lag is None:
        text.append("lag         ?", style)
    else:
        text.append(f"lag {lag:>9,}", style)


def _trend_arrow(rate: float) -> tuple[str, str]:
    """Growing (red), shrinking (green) or flat, by more than half a record a second."""
    if rate > 0.5:
        return "↑", "red"
    if rate < -0.5:
        return "↓", "green"
    return "→", "dim"


def _behind(text: Text, group: GroupInfo, taken_at: int) -> None:
    """How old its next record is, what retention deleted unconsumed, its worst partitions."""
    behind_ms = group.lag_ms(taken_at)
    if behind_ms:
        text.append(f" · {duration(behind_ms)} behind", "bold yellow")
    lost = sum(p.deleted_unconsumed for p in group.partitions)
    if lost:
        text.append(f" · {lost:,} deleted unconsumed", "bold red")
    worst = sorted((p for p in group.partitions if p.lag), key=_most_behind_first)[:3]
    if worst:
        text.append("   " + "  ".join(f"{p.topic}-{p.partition} {p.lag:,} (at {p.committed:,})"
                                      for p in worst), "dim")


def topic_summary_text(summary: TopicSummary) -> Text:
    """The rest of a topic's row after its name: partitions, what is wrong, total watermark."""
    text = Text()
    noun = "partition" if summary.partitions == 1 else "partitions"
    count = f"{summary.partitions:,} {noun}"
    if summary.shown != summary.partitions and summary.shown:
        count = f"{summary.shown:,} of {summary.partitions:,} {noun}"
    text.append(count, "bold")
    for n, label, style in ((summary.offline, "offline", "bold white on red"),
                            (summary.under_min_isr, "under min-ISR", "bold red"),
                            (summary.under_replicated, "under-replicated", "yellow"),
                            (summary.moving, "moving", "cyan"),
                            (summary.diverged, "diverged", DIVERGED_STYLE)):
        if label == "under min-ISR" and summary.unknown:  # never "0" where it was not told
            sep(text, "·").append(f"{n:,}+{summary.unknown:,}? under min-ISR", UNKNOWN_STYLE)
        elif n or label in ("offline", "under min-ISR", "under-replicated"):
            sep(text, "·").append(f"{n:,} {label}", style if n else "dim")
    sep(text, "·").append(f"hw Σ {summary.high_watermark:,}")
    if not summary.open:
        sep(text, "·").append("Enter opens", "dim")
    return text
