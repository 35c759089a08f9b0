"""The ISR-health verdict for scripts: healthy, warning, critical, or unknown (pure).

A verdict is never better than what was seen. Each check a refused or unsupported request kept
kinspect from making is an `Unchecked`, with the severity its failure would have had: when one
could be worse than what was seen, the verdict is "unknown" (exit 3, Nagios' UNKNOWN) and
`seen` keeps the verdict of what could be checked ("at least warning").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kinspect.model.facts import Fact, Unknown
from kinspect.model.snapshot import ClusterSnapshot, PartitionInfo
from kinspect.model.views import EligibleLeaders

RANK = {"healthy": 0, "warning": 1, "critical": 2}
SEVERITY_VERDICT = {"info": "healthy", "warn": "warning", "critical": "critical"}
# A reassignment whose replicas being added have not moved for this long is flagged.
STALLED_AFTER_MS = 60_000


@dataclass(frozen=True)
class Unchecked:
    """A check that could not be made: which, what its failure would mean, why, and where."""

    check: str  # under_min_isr | at_min_isr | under_replicated | settings | hidden_topics |
    #             controller | group_lag
    severity: str  # critical | warn | info (not judged: said, never a verdict of its own)
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
        where = f" for {len(self.subjects)}: {shown}" if self.subjects else ""
        return f"{CHECK_NAMES.get(self.check, self.check)} unknown{where} ({self.reason})"


CHECK_NAMES = {"under_min_isr": "under min ISR", "at_min_isr": "at min ISR",
               "under_replicated": "under-replicated", "settings": "risky settings",
               "hidden_topics": "topics hidden from this user", "controller": "the controller",
               "group_lag": "consumer groups' lag"}


@dataclass(frozen=True)
class HealthReport:
    verdict: str  # healthy | warning | critical | unknown
    seen: str  # healthy | warning | critical: the verdict of what could be checked
    offline: tuple[str, ...]
    under_min_isr: tuple[str, ...]
    at_min_isr: tuple[str, ...]
    under_replicated: tuple[str, ...]
    unavailable: tuple[str, ...]
    reassigning: tuple[str, ...]
    stalled: tuple[str, ...]
    controller_ok: bool
    brokers_registered: tuple[int, ...]
    brokers_expected: tuple[int, ...]
    risky_settings: tuple[str, ...]
    unchecked: tuple[Unchecked, ...]


def _flagged(parts: Iterable[PartitionInfo], flag: Callable[[PartitionInfo], Fact[bool]]
             ) -> tuple[str, ...]:
    return tuple(p.name for p in parts if flag(p) is True)


def _unknown(parts: Iterable[PartitionInfo], check: str, severity: str,
             flag: Callable[[PartitionInfo], Fact[bool]]) -> list[Unchecked]:
    """One Unchecked per distinct reason, naming the partitions it left unjudged."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for p in parts:
        value = flag(p)
        if isinstance(value, Unknown):
            by_reason[value.reason].append(p.name)
    return [Unchecked(check, severity, reason, tuple(names)) for reason, names in by_reason.items()]


def unchecked(s: ClusterSnapshot, judge_lag: bool = False) -> tuple[Unchecked, ...]:
    """Every check a refused, failed or unsupported request left unmade (the groups' lag
    counts as one only when lag is judged: health --max-lag)."""
    parts = s.partitions()
    out = _unknown(parts, "under_min_isr", "critical", lambda p: p.under_min_isr)
    out += _unknown([p for p in parts if not isinstance(p.min_isr, Unknown)], "at_min_isr",
                    "warn", lambda p: p.at_min_isr)
    out += _unknown(parts, "under_replicated", "warn", lambda p: p.under_replicated)
    settings: dict[str, list[str]] = defaultdict(list)
    for t in s.topics:
        if isinstance(t.config, Unknown):
            settings[t.config.reason].append(t.name)
    out += [Unchecked("settings", "warn", reason, tuple(names)) for reason, names in settings.items()]
    if isinstance(s.hidden_topics, Unknown):
        out.append(Unchecked("hidden_topics", "critical", "cannot tell whether some topics are "
                             f"hidden from this user: {s.hidden_topics.reason}"))
    elif s.hidden_topics:
        out.append(Unchecked("hidden_topics", "critical", "no Describe permission on them: "
                             "the brokers hold them, the metadata does not list them",
                             s.hidden_topics))
    if s.controller_unknown is not None:
        out.append(Unchecked("controller", "critical", s.controller_unknown.reason))
    lags: dict[str, list[str]] = defaultdict(list)
    for group, why in s.groups_unknown:
        lags[why.reason].append(group)
    out += [Unchecked("group_lag", "warn" if judge_lag else "info", reason, tuple(groups))
            for reason, groups in lags.items()]
    return tuple(out)


def verdict_of(critical: bool, warning: bool, missing: Iterable[Unchecked]) -> tuple[str, str]:
    """(verdict, seen): the verdict is "unknown" when a check that was not made could have
    made it worse than what was seen."""
    seen = "critical" if critical else "warning" if warning else "healthy"
    worst = max((RANK[SEVERITY_VERDICT[u.severity]] for u in missing), default=0)
    return ("unknown" if worst > RANK[seen] else seen), seen


def classify(s: ClusterSnapshot, judge_lag: bool = False) -> HealthReport:
    """Kafka's own lists (TopicCommand's definitions) and the checks left unmade."""
    parts = s.partitions()
    offline = _flagged(parts, lambda p: p.offline)
    under_min = _flagged(parts, lambda p: p.under_min_isr)
    at_min = _flagged(parts, lambda p: p.at_min_isr)
    under_rep = _flagged(parts, lambda p: p.under_replicated)
    unavailable = _flagged(parts, lambda p: p.unavailable)
    reassigning = _flagged(parts, lambda p: p.moving)
    stalled = _flagged(parts, lambda p: p.stalled_ms is not None
                       and p.stalled_ms >= STALLED_AFTER_MS)
    controller_ok = s.controller.id is not None or s.controller_unknown is not None
    risky = tuple(w.message for w in s.warnings if w.kind not in {"no_controller"})
    missing = unchecked(s, judge_lag)
    critical = bool(offline or under_min or unavailable or not controller_ok)
    warning = bool(under_rep or at_min or risky or stalled)
    verdict, seen = verdict_of(critical, warning, missing)
    return HealthReport(verdict, seen, offline, under_min, at_min, under_rep, unavailable,
                        reassigning, stalled, controller_ok,
                        # registered: in ZooKeeper, or in KRaft in the metadata (unfenced)
                        tuple(b.id for b in s.brokers if b.registered or b.fenced is False),
                        tuple(b.id for b in s.brokers if b.expected), risky, missing)


def _ids(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


def elr_explained(p: PartitionInfo) -> str | None:
    """Why an under-min-ISR partition can or cannot recover cleanly, from its eligible leader
    replicas (KIP-966: replicas that left the ISR while it was below min.insync.replicas yet
    hold every committed record). None without ELR or when the partition is not under min ISR."""
    if p.under_min_isr is not True or not isinstance(p.elr, EligibleLeaders):
        return None
    head = "no leader" if p.offline else f"ISR {_ids(p.isr) or '-'}"
    if isinstance(p.min_isr, int) and not p.offline:
        head = f"ISR {len(p.isr)} < min {p.min_isr} ({_ids(p.isr)})"
    if p.elr.eligible:
        return f"{head}; ELR {_ids(p.elr.eligible)} can still be elected cleanly"
    if p.elr.last_known:
        return (f"{head}; ELR empty, last known ELR {_ids(p.elr.last_known)}: only an unclean "
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
