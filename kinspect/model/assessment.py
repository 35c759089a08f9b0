"""The health verdict: healthy, warning, critical, unknown or unreachable (pure).

One assessment for every reader: `kinspect health` renders it, `snapshot --json` lists its
unmade checks, the TUI header shows it. `assess` first takes Kafka's own lists (TopicCommand's
definitions), then says what they mean: each problem a line, critical or a warning.

A verdict is never better than what was seen. Each check a refused or unsupported request kept
kinspect from making is an `Unchecked`, with the severity its failure would have had: when one
could be worse than what was seen, the verdict is "unknown" (exit 3, Nagios' UNKNOWN) and
`seen` keeps the verdict of what could be checked ("at least warning").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from kinspect.model.exits import VERDICT_CODES
from kinspect.model.facts import Fact, Unknown, unanswered
from kinspect.model.health_checks import CHECKS, Area, area_of
from kinspect.model.partition_words import ids
from kinspect.model.severity import Severity
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterFinding,
    ClusterSnapshot,
    PartitionInfo,
    TopicInfo,
)
from kinspect.model.views import EligibleLeaders

# A reassignment whose replicas being added have not moved for this long is flagged.
STALLED_AFTER_MS = 60_000


class Verdict(StrEnum):
    """The cluster's health; its exit code is Nagios' (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)."""

    HEALTHY = "healthy"
    WARNING = "warning"
    CRITICAL = "critical"
    UNKNOWN = "unknown"  # a check that was not made could have made it worse than what was seen
    UNREACHABLE = "unreachable"  # nothing answered: nothing was seen

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self]


# Each verdict's exit code, from the one table of exit codes (exits.py).
EXIT_CODES = {verdict: VERDICT_CODES[verdict] for verdict in Verdict}
RANK = {Verdict.HEALTHY: 0, Verdict.WARNING: 1, Verdict.CRITICAL: 2}
SEVERITY_VERDICT = {Severity.INFO: Verdict.HEALTHY, Severity.WARN: Verdict.WARNING,
                    Severity.ERROR: Verdict.CRITICAL, Severity.CRITICAL: Verdict.CRITICAL}

Check = str  # a key of health_checks.CHECKS


@dataclass(frozen=True)
class Unchecked:
    """A check that could not be made: which, what its failure would mean, why, and where."""

    check: Check
    severity: Severity  # info: said, never a verdict of its own (lag, when it is not judged)
    reason: str
    subjects: tuple[str, ...] = ()  # the partitions, topics or brokers it could not judge

    @property
    def text(self) -> str:
        shown = ", ".join(self.subjects[:5])
        if len(self.subjects) > 5:
            shown += f" and {len(self.subjects) - 5} more"
        if self.check == "hidden_topics" and self.subjects:
            return (f"{len(self.subjects)} topic{'s' * (len(self.subjects) != 1)} hidden from "
                    f"this user, nothing checked on them: {shown} ({self.reason})")
        where = ""
        if self.subjects:
            where = f" for {len(self.subjects)}: {shown}"
        return f"{CHECK_NAMES.get(self.check, self.check)} unknown{where} ({self.reason})"


CHECK_NAMES: dict[Check, str] = {c.key: c.unknown for c in CHECKS.values()}


def unmade(check: Check, reason: str, subjects: tuple[str, ...] = (),
           judged: bool = True) -> Unchecked:
    """A registered check left unmade, with its registry's severity (info when it is not
    judged: lag without --max-lag is said, never a verdict)."""
    severity = CHECKS[check].severity
    if not judged:
        severity = Severity.INFO
    return Unchecked(check, severity, reason, subjects)


@dataclass(frozen=True)
class HealthReport:
    """The cluster's health: what is wrong (`critical`, `warnings`: one line each), what could
    not be checked (`unchecked`), Kafka's partition lists behind them, and the verdict."""

    critical: tuple[str, ...] = ()  # problems that page: writes refused, no leader, ...
    warnings: tuple[str, ...] = ()  # one more failure away from trouble
    unchecked: tuple[Unchecked, ...] = ()
    reachable: bool = True  # False: no broker answered and ZooKeeper is not watched
    offline: tuple[str, ...] = ()
    under_min_isr: tuple[str, ...] = ()
    at_min_isr: tuple[str, ...] = ()
    under_replicated: tuple[str, ...] = ()
    unavailable: tuple[str, ...] = ()
    reassigning: tuple[str, ...] = ()
    stalled: tuple[str, ...] = ()  # no progress for STALLED_AFTER_MS, as the observer saw it
    controller_ok: bool = True
    brokers_registered: tuple[int, ...] = ()
    brokers_expected: tuple[int, ...] = ()
    risky_settings: tuple[str, ...] = ()  # the settings check's findings
    findings: tuple[ClusterFinding, ...] = ()  # the snapshot's cluster findings, each its severity
    offline_log_dirs: tuple[str, ...] = ()  # "broker 2: /data/b (KafkaStorageError (56))"

    @property
    def problems(self) -> tuple[str, ...]:
        """Every problem, the critical ones first."""
        return self.critical + self.warnings

    @property
    def seen(self) -> Verdict:
        """The verdict of what could be checked (UNREACHABLE: nothing could)."""
        return self._verdicts[1]

    @property
    def verdict(self) -> Verdict:
        return self._verdicts[0]

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def _verdicts(self) -> tuple[Verdict, Verdict]:
        if not self.reachable:
            return Verdict.UNREACHABLE, Verdict.UNREACHABLE
        return verdict_of(bool(self.critical), bool(self.warnings), self.unchecked)


def _flagged(parts: Iterable[PartitionInfo], flag: Callable[[PartitionInfo], Fact[bool]]
             ) -> tuple[str, ...]:
    return tuple(p.name for p in parts if flag(p) is True)


def _partitions_unknown(parts: Iterable[PartitionInfo]) -> list[Unchecked]:
    """The partition checks a missing fact left unmade, one Unchecked per check and distinct
    reason, naming the partitions: under min ISR (critical) and under-replicated (warning), in
    one pass. At min ISR rests on the same min.insync.replicas as under min ISR, so its
    unknowns are said there, once."""
    under_min: dict[str, list[str]] = defaultdict(list)
    under_replicated: dict[str, list[str]] = defaultdict(list)
    for p in parts:
        if isinstance(value := p.under_min_isr, Unknown):
            under_min[value.reason].append(p.name)
        if isinstance(value := p.under_replicated, Unknown):
            under_replicated[value.reason].append(p.name)
    return ([unmade("under_min_isr", why, tuple(names)) for why, names in under_min.items()]
            + [unmade("under_replicated", why, tuple(names))
               for why, names in under_replicated.items()])


def _hidden(s: ClusterSnapshot) -> list[Unchecked]:
    if isinstance(s.hidden_topics, Unknown):
        return [unmade("hidden_topics", "cannot tell whether some topics are hidden from this "
                       f"user: {s.hidden_topics.reason}")]
    if s.hidden_topics:
        return [unmade("hidden_topics", "no Describe permission on them: the brokers hold them, "
                       "the metadata does not list them", s.hidden_topics)]
    return []


def _by_reason(check: Check, unknown: Iterable[tuple[str, Unknown]], judged: bool = True
               ) -> list[Unchecked]:
    """One Unchecked per distinct reason, naming the subjects (topics, groups) it left unjudged."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for subject, why in unknown:
        by_reason[why.reason].append(subject)
    return [unmade(check, reason, tuple(names), judged) for reason, names in by_reason.items()]


def unchecked(s: ClusterSnapshot, judge_lag: bool = False) -> tuple[Unchecked, ...]:
    """Every check a refused, failed or unsupported request left unmade (the groups' lag
    counts as one only when lag is judged: health --max-lag)."""
    parts = s.partitions()
    out = _partitions_unknown(parts)
    out += _by_reason("settings",
                      ((t.name, t.config) for t in s.topics if isinstance(t.config, Unknown)))
    out += _hidden(s)
    if s.controller_unknown is not None:
        out.append(unmade("controller", s.controller_unknown.reason))
    out += _by_reason("group_lag", s.groups_unknown, judged=judge_lag)
    out += _by_reason("log_dirs", _disks_unknown(s))
    out += _by_reason("flush", _flush_refused(s), judged=False)  # advice: no verdict of its own
    # said, never a verdict of its own: a cluster before Kafka 3.3 cannot tell it at all
    out += _by_reason("log_dir_space", _space_unknown(s), judged=False)
    return tuple(out)


def _disks_unknown(s: ClusterSnapshot) -> list[tuple[str, Unknown]]:
    """Live brokers that answered and did not say their log dirs (refused, failed)."""
    out = []
    for b in s.brokers:
        told = b.log_dirs
        if _live(b) and isinstance(told, Unknown) and not unanswered(told):
            out.append((f"broker {b.id}", told))
    return out


def _flush_refused(s: ClusterSnapshot) -> list[tuple[str, Unknown]]:
    """Topics whose settings, and live brokers whose configs, were refused or failed: whether
    anything fsyncs them is not known."""
    out = [(t.name, t.config) for t in s.topics if isinstance(t.config, Unknown)]
    for b in s.brokers:
        if _live(b) and isinstance(b.flush, Unknown) and not unanswered(b.flush):
            out.append((f"broker {b.id}", b.flush))
    return out


SIZES_UNTOLD = Unknown("the broker did not tell its volume's size (it needs DescribeLogDirs v4, "
                       "Kafka 3.3, and a volume it can measure): free space not judged")


def _space_unknown(s: ClusterSnapshot) -> list[tuple[str, Unknown]]:
    """Online log dirs of live brokers whose volume's size was not told (before Kafka 3.3)."""
    out = []
    for b in s.brokers:
        if not _live(b) or not isinstance(b.log_dirs, tuple):
            continue
        for d in b.log_dirs:
            if not d.offline and d.total_bytes is None:
                out.append((f"broker {b.id}: {d.path}", SIZES_UNTOLD))
    return out


def _live(b: BrokerInfo) -> bool:
    """Registered (ZooKeeper), unfenced (KRaft), or answering where neither is known: a broker
    whose disks matter now (a dead one's are moot until it returns). One that did not answer at
    all is not an unmade disk check: a killed broker stays listed in KRaft until fenced, and
    its absence shows in the ISRs it left and the probes' limitations."""
    if b.registered is not None or b.fenced is not None:
        return bool(b.registered) or b.fenced is False
    return b.address is not None


def verdict_of(critical: bool, warning: bool, missing: Iterable[Unchecked]
               ) -> tuple[Verdict, Verdict]:
    """(verdict, seen): the verdict is "unknown" when a check that was not made could have
    made it worse than what was seen."""
    seen = Verdict.CRITICAL if critical else Verdict.WARNING if warning else Verdict.HEALTHY
    worst = max((RANK[SEVERITY_VERDICT[u.severity]] for u in missing), default=0)
    return (Verdict.UNKNOWN if worst > RANK[seen] else seen), seen


def kafka_lists(s: ClusterSnapshot) -> HealthReport:
    """Kafka's own lists (TopicCommand's definitions), the brokers and the risky settings:
    the findings, before `assess` says what they mean."""
    parts = s.partitions()
    return HealthReport(
        offline=_flagged(parts, lambda p: p.offline),
        under_min_isr=_flagged(parts, lambda p: p.under_min_isr),
        at_min_isr=_flagged(parts, lambda p: p.at_min_isr),
        under_replicated=_flagged(parts, lambda p: p.under_replicated),
        unavailable=_flagged(parts, lambda p: p.unavailable),
        reassigning=_flagged(parts, lambda p: p.moving),
        stalled=_flagged(parts, lambda p: p.stalled_ms is not None
                         and p.stalled_ms >= STALLED_AFTER_MS),
        controller_ok=s.controller.id is not None or s.controller_unknown is not None,
        # registered: in ZooKeeper, or in KRaft in the metadata (unfenced)
        brokers_registered=tuple(b.id for b in s.brokers if b.registered or b.fenced is False),
        brokers_expected=tuple(b.id for b in s.brokers if b.expected),
        risky_settings=tuple(w.message for w in s.findings if area_of(w.kind) is Area.SETTINGS),
        findings=s.findings,
        offline_log_dirs=tuple(f"broker {b.id}: {d.path} ({d.error})" for b in s.brokers
                               for d in b.offline_log_dirs))


def _listed(label: str, names: tuple[str, ...]) -> list[str]:
    """`3 partitions offline: a-0, b-1, c-2` (none: no line)."""
    if not names:
        return []
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return [f"{len(names)} partition{'s' * (len(names) != 1)} {label}: {shown}"]


def _critical(s: ClusterSnapshot, found: HealthReport, zk_error: str | None) -> tuple[str, ...]:
    """What pages: nothing elects a leader, no broker answers, writes refused or no leader."""
    out = []
    if zk_error:
        out.append(f"{zk_error}: no controller election or ISR change can happen")
    if s.admin_state != "ok":
        out.append(f"no broker answered the AdminClient ({s.admin_error or 'timeout'})")
    out += _listed("offline", found.offline)
    offline = set(found.offline)  # a set: a dead broker's 11,000 partitions are in both
    out += _listed("unavailable", tuple(n for n in found.unavailable if n not in offline))
    out += _listed("under min ISR", found.under_min_isr)
    out += [f"log dir offline on {where}: its replicas are offline until the broker restarts "
            "with it working" for where in found.offline_log_dirs]
    if not found.controller_ok and not zk_error:
        out.append("no controller: no leader can be elected")
    out += _findings_of(found, Verdict.CRITICAL)
    return tuple(out)


# Kinds of finding health says in its own words above (the controller, the offline log dirs),
# from what the report lists; every other finding is said as itself, by its severity.
SAID_APART = frozenset({"no_controller", "log_dir_offline"})


def _findings_of(found: HealthReport, verdict: Verdict) -> list[str]:
    """The findings whose severity makes this verdict, each as its message."""
    return [w.message for w in found.findings
            if SEVERITY_VERDICT[w.severity] is verdict and w.kind not in SAID_APART]


def _warnings(s: ClusterSnapshot, found: HealthReport, max_lag: int | None,
              watched: tuple[str, ...], max_lag_s: float | None = None) -> tuple[str, ...]:
    """One more failure away from trouble; a group's lag only when judged (`max_lag`)."""
    out = _listed("at min ISR", found.at_min_isr) + _listed("under-replicated",
                                                            found.under_replicated)
    out += _listed("in a reassignment that made no progress for a minute", found.stalled)
    out += _listed("in a reassignment that made no progress while health watched it",
                   tuple(n for n in watched if n not in found.stalled))
    out += _controller_disagrees(s)
    out += _findings_of(found, Verdict.WARNING)
    out += _lagging(s, max_lag, max_lag_s)
    return tuple(out)


def _controller_disagrees(s: ClusterSnapshot) -> list[str]:
    """ZooKeeper mode: the brokers name a controller other than ZooKeeper's."""
    c = s.controller
    if not s.sees_zookeeper or c.id is None or c.broker_reported_id is None:
        return []
    if c.broker_reported_id == c.id:
        return []
    return [f"the brokers report controller {c.broker_reported_id}, ZooKeeper says {c.id}"]


def _lagging(s: ClusterSnapshot, max_lag: int | None, max_lag_s: float | None) -> list[str]:
    """Groups over the lag limits, and retention's deadline on them (only when judged)."""
    out = []
    for g in s.groups:
        if max_lag is not None and g.lag is not None and g.lag > max_lag:
            out.append(f"consumer group {g.group_id} lags {g.lag:,} records (over {max_lag:,})")
    if max_lag_s is not None:
        out += _lagging_in_time(s, max_lag_s)
    if max_lag is not None or max_lag_s is not None:
        out += retention_risks(s)
    return out


def _lagging_in_time(s: ClusterSnapshot, max_lag_s: float) -> list[str]:
    out = []
    for g in s.groups:
        ms = g.lag_ms(s.taken_at)
        if ms is not None and ms > max_lag_s * 1000:
            out.append(f"consumer group {g.group_id} is {duration(ms)} behind (over "
                       f"{max_lag_s:,g} s): its oldest unconsumed record is that old")
    return out


RETENTION_RISK = 0.8  # a group's next record this far into its topic's retention: at risk


def retention_ms(topic: TopicInfo) -> int | None:
    """How long the topic keeps records (None: not told, forever, or compacted only)."""
    policy, value = topic.setting("cleanup.policy"), topic.setting("retention.ms")
    if not isinstance(value, str) or not value.lstrip("-").isdigit() or int(value) < 0:
        return None
    return int(value) if isinstance(policy, str) and "delete" in policy else None


def retention_unknown(s: ClusterSnapshot) -> list[tuple[str, Unknown]]:
    """Lagging groups on topics whose settings were refused: retention's deadline on them is
    not judged (no retention.ms is not "keeps forever")."""
    refused = {t.name: t.config for t in s.topics if isinstance(t.config, Unknown)}
    return [(f"{g.group_id} on {p.topic}", refused[p.topic]) for g in s.groups
            for p in g.partitions if p.topic in refused and p.lag]


def retention_risks(s: ClusterSnapshot) -> list[str]:
    """Groups that lost records to retention (their offset is below the log's start), or
    whose next record is near its topic's retention: they lose records unless they catch up."""
    keeps = {t.name: retention_ms(t) for t in s.topics}
    out = []
    for g in s.groups:
        for p in g.partitions:
            where = f"consumer group {g.group_id} on {p.topic}-{p.partition}"
            keep, age = keeps.get(p.topic), p.lag_ms(s.taken_at)
            if p.deleted_unconsumed:
                out.append(f"{where}: retention deleted {p.deleted_unconsumed:,} records it had "
                           "not consumed")
            elif keep and age is not None and age >= RETENTION_RISK * keep:
                out.append(f"{where}: its next record is {duration(age)} old, retention "
                           f"{duration(keep)}: it loses records unless it catches up within "
                           f"{duration(max(0, keep - age))}")
    return out


def duration(ms: int) -> str:
    """90.0 s, 12.5 min, 6.0 h, 6.0 d: a lag or a deadline as on-call reads it."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000)):
        if ms >= 2 * size:
            return f"{ms / size:,.1f} {unit}"
    return f"{ms / 1000:,.1f} s"


def _no_answer(s: ClusterSnapshot, zk_error: str | None) -> str:
    return (f"no broker answered{': ' + s.admin_error if s.admin_error else ''}"
            + (f"; {zk_error}" if zk_error else ""))


def assess(s: ClusterSnapshot, zk_error: str | None = None, max_lag: int | None = None,
           watched: tuple[str, ...] = (), max_lag_s: float | None = None) -> HealthReport:
    """The cluster's health from one snapshot. `zk_error`: ZooKeeper was to be watched and did
    not answer (critical: no election can happen). A group's lag is judged only against
    `max_lag` (health is about ISR health first). `watched`: the partitions whose reassignment
    did not grow while `kinspect health` watched it (`stalled_between`). `max_lag_s`: a
    group's lag in time (the age of its oldest unconsumed record) judged; with either lag
    limit, retention's deadline on a lagging group is judged too."""
    missing = unchecked(s, judge_lag=max_lag is not None or max_lag_s is not None)
    if max_lag_s is not None:
        missing += tuple(_by_reason("group_lag", (
            (g.group_id, Unknown("the next record's timestamp was not read (no Read on the "
                                 "topic, or not yet): its lag in seconds is a lower bound"))
            for g in s.groups if not g.lag_ms_complete(s.taken_at))))
    if max_lag is not None or max_lag_s is not None:
        missing += tuple(_by_reason("retention", retention_unknown(s)))
    if s.admin_state != "ok" and not s.sees_zookeeper:
        return HealthReport(critical=(_no_answer(s, zk_error),), unchecked=missing,
                            reachable=False, controller_ok=False)
    found = kafka_lists(s)
    return replace(found, critical=_critical(s, found, zk_error),
                   warnings=_warnings(s, found, max_lag, watched, max_lag_s), unchecked=missing)


def elr_explained(p: PartitionInfo) -> str | None:
    """Why an under-min-ISR partition can or cannot recover cleanly, from its eligible leader
    replicas (KIP-966: replicas that left the ISR while it was below min.insync.replicas yet
    hold every committed record). None without ELR or when the partition is not under min ISR."""
    if p.under_min_isr is not True or not isinstance(p.elr, EligibleLeaders):
        return None
    head = "no leader" if p.offline else f"ISR {ids(p.isr) or '-'}"
    if isinstance(p.min_isr, int) and not p.offline:
        head = f"ISR {len(p.isr)} < min {p.min_isr} ({ids(p.isr)})"
    if p.elr.eligible:
        return f"{head}; ELR {ids(p.elr.eligible)} can still be elected cleanly"
    if p.elr.last_known:
        return (f"{head}; ELR empty, last known ELR {ids(p.elr.last_known)}: only an unclean "
                "election elects anyone else")
    return f"{head}; ELR empty: no other replica is known to hold every committed record"


def _behind(p: PartitionInfo) -> dict[int, int]:
    """Each replica being added that trails the leader's log: its own log end."""
    return {r.broker: r.log_end for r in p.replica_logs
            if r.broker in p.adding and r.log_end is not None and (r.lag or 0) > 0}


def copying(s: ClusterSnapshot) -> bool:
    """A reassignment is still copying: some replica being added trails the leader."""
    return any(p.moving and _behind(p) for p in s.partitions())


def stalled_between(before: ClusterSnapshot, after: ClusterSnapshot) -> tuple[str, ...]:
    """Partitions still being moved whose replicas being added, behind in both snapshots, did
    not grow at all between them (a throttled copy grows; a stuck one does not)."""
    out = []
    for p in after.partitions():
        was = before.partition(p.topic, p.partition)
        now, then = _behind(p), _behind(was) if was is not None else {}
        if p.moving and now and set(now) == set(then) \
                and all(now[b] <= end for b, end in then.items()):
            out.append(p.name)
    return tuple(out)
