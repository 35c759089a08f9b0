"""Every health check kinspect makes, declared once (pure): what it looks at, what it finds,
how bad a finding is, and what it says when it could not look.

`kinspect health`, `snapshot --json`'s `unchecked`, the screen's warnings panel, the exporter
and the docs' page of checks (docs/reference/health-checks.md) all read this registry. A
cluster finding's kind (a `ClusterFinding` in a snapshot) belongs to one check, which files
it: the settings check's findings are `health --json`'s `risky_settings`, a broker missing
is the brokers' check.

To add a check: declare it here (and its findings' kinds), find it (findings.py for a
finding about the cluster, assessment.py for what `assess` reads off the partitions), and say
where it could not look (assessment.unchecked).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kinspect.model.severity import Severity


class Area(StrEnum):
    """What a check looks at: where its findings are filed."""

    CLUSTER = "cluster"
    CONTROLLER = "controller"
    BROKERS = "brokers"
    DISKS = "disks"
    PARTITIONS = "partitions"
    SETTINGS = "settings"
    GROUPS = "groups"


@dataclass(frozen=True)
class FindingKind:
    """One kind of cluster finding: its JSON word, how bad it is, and where it sorts among
    those of its severity (lower first: the ones that explain the others lead)."""

    key: str
    severity: Severity
    rank: int


@dataclass(frozen=True)
class HealthCheck:
    """One check: its key (`unchecked`'s `check`), the severity of what it finds, what it looks
    at, its finding in words, what its unmade check is called (`<unknown> unknown for ...`),
    when it cannot be made, and the kinds of cluster finding it makes."""

    key: str
    severity: Severity
    area: Area
    looks_at: str
    finding: str
    unknown: str
    unknown_when: str
    kinds: tuple[FindingKind, ...] = ()


HEALTH_CHECKS: tuple[HealthCheck, ...] = (
    HealthCheck("zookeeper", Severity.CRITICAL, Area.CLUSTER, "ZooKeeper's session (ZooKeeper "
                "mode, when it is watched)", "ZooKeeper unreachable: no election or ISR change",
                "ZooKeeper", "never: not answering is the finding"),
    HealthCheck("brokers_answer", Severity.CRITICAL, Area.CLUSTER, "the AdminClient's answer",
                "no broker answered", "the brokers' answer",
                "never: not answering is the finding (unreachable, exit 3, without ZooKeeper)"),
    HealthCheck("controller", Severity.CRITICAL, Area.CONTROLLER, "ZooKeeper's /controller, "
                "KRaft's DescribeQuorum", "no controller, a stale quorum leader, or brokers that "
                "disagree with ZooKeeper about it", "the controller",
                "DescribeQuorum refused or unsupported",
                (FindingKind("no_controller", Severity.CRITICAL, 0),
                 FindingKind("stale_quorum_leader", Severity.WARN, 0))),
    HealthCheck("offline", Severity.CRITICAL, Area.PARTITIONS, "each partition's leader",
                "partitions offline (no leader)", "offline", "never"),
    HealthCheck("unavailable", Severity.CRITICAL, Area.PARTITIONS, "each partition's leader "
                "against the live brokers", "partitions unavailable", "unavailable", "never"),
    HealthCheck("under_min_isr", Severity.CRITICAL, Area.PARTITIONS, "each ISR against its "
                "topic's min.insync.replicas", "partitions under min ISR: writes refused",
                "under min ISR", "the topic's settings refused (DescribeConfigs)"),
    HealthCheck("log_dirs", Severity.CRITICAL, Area.DISKS, "each live broker's log dirs "
                "(DescribeLogDirs)", "a log dir offline (a failed or full disk)",
                "log dirs (a failed or full disk)", "DescribeLogDirs refused or failed",
                (FindingKind("log_dir_offline", Severity.CRITICAL, 1),)),
    HealthCheck("hidden_topics", Severity.CRITICAL, Area.CLUSTER, "the topics on the brokers' "
                "disks against the metadata", "topics hidden from this user, nothing checked "
                "on them", "topics hidden from this user", "DescribeLogDirs refused"),
    HealthCheck("at_min_isr", Severity.WARN, Area.PARTITIONS, "each ISR against its topic's "
                "min.insync.replicas", "partitions at min ISR: one more loss refuses writes",
                "at min ISR", "the topic's settings refused (said under min ISR)"),
    HealthCheck("under_replicated", Severity.WARN, Area.PARTITIONS, "each ISR against the "
                "replication factor", "partitions under-replicated", "under-replicated",
                "reassignments not listed (ListPartitionReassignments)"),
    HealthCheck("reassignments", Severity.WARN, Area.PARTITIONS, "the replicas a reassignment "
                "adds", "a reassignment that made no progress", "reassignments", "never"),
    HealthCheck("brokers", Severity.WARN, Area.BROKERS, "the brokers registered (ZooKeeper) or "
                "unfenced (KRaft) against those expected", "a broker missing or fenced",
                "the brokers", "never (expected brokers: the lab or the profile's)",
                (FindingKind("broker_missing", Severity.WARN, 1),
                 FindingKind("broker_fenced", Severity.WARN, 1))),
    HealthCheck("log_dir_space", Severity.WARN, Area.DISKS, "each online log dir's volume "
                "(DescribeLogDirs v4+)", "a log dir nearly full: a full disk goes offline",
                "log dirs' free space", "sizes not told (Kafka before 3.3)",
                (FindingKind("log_dir_nearly_full", Severity.WARN, 1),)),
    HealthCheck("settings", Severity.WARN, Area.SETTINGS, "each topic's replication factor, "
                "min.insync.replicas and unclean.leader.election.enable", "risky settings",
                "risky settings", "the topic's settings refused (DescribeConfigs)",
                (FindingKind("replication_factor_1", Severity.WARN, 2),
                 FindingKind("min_isr_ge_rf", Severity.WARN, 3),
                 FindingKind("min_isr_below_2", Severity.WARN, 3),
                 FindingKind("unclean_election_enabled", Severity.WARN, 3))),
    # Advice, not a verdict: Kafka's default, chosen by most clusters that spread replicas over
    # racks; a health check that warned on it would warn on every cluster, forever.
    HealthCheck("flush", Severity.INFO, Area.SETTINGS, "each broker's log.flush.interval.messages "
                "and log.flush.interval.ms, each topic's flush.messages and flush.ms",
                "no broker fsyncs: a power loss of all replicas at once loses acknowledged writes",
                "fsync settings", "the topic's or broker's settings refused (DescribeConfigs)",
                (FindingKind("no_fsync", Severity.INFO, 4),)),
    HealthCheck("group_lag", Severity.WARN, Area.GROUPS, "each group's lag in records and "
                "seconds (judged with --max-lag or --max-lag-seconds)", "a group lags",
                "consumer groups' lag", "the group not describable, its next record not read"),
    HealthCheck("retention", Severity.WARN, Area.GROUPS, "a lagging group's next record "
                "against its topic's retention.ms (with either lag limit)",
                "a group near or past retention", "retention's deadline on lagging groups",
                "the topic's settings refused (DescribeConfigs)"),
)

CHECKS: dict[str, HealthCheck] = {c.key: c for c in HEALTH_CHECKS}
# Each kind of cluster finding: the check that makes it.
CHECK_OF: dict[str, HealthCheck] = {k.key: c for c in HEALTH_CHECKS for k in c.kinds}
KINDS: dict[str, FindingKind] = {k.key: k for c in HEALTH_CHECKS for k in c.kinds}
LATE_RANK = 3  # a kind the registry does not name (an old recording's): with the settings' kinds


def area_of(kind: str) -> Area | None:
    """Where a cluster finding of this kind is filed (None: a kind no check makes)."""
    check = CHECK_OF.get(kind)
    if check is None:
        return None
    return check.area


def check_key(kind: str) -> str | None:
    """The key of the check that makes this kind of finding (None: a kind no check makes)."""
    check = CHECK_OF.get(kind)
    if check is None:
        return None
    return check.key


def checks_table() -> str:
    """The table of checks on docs/reference/health-checks.md, rendered from the registry
    (python -m docs.generate writes the page)."""
    lines = ["| check | severity | looks at | finds | filed under | its findings' kinds | "
             "cannot check when |",
             "|---|---|---|---|---|---|---|"]
    for c in HEALTH_CHECKS:
        kinds = ", ".join(f"`{k.key}` ({k.severity})" for k in c.kinds) or "—"
        lines.append(f"| `{c.key}` | {c.severity} | {c.looks_at} | {c.finding} | {c.area} | "
                     f"{kinds} | {c.unknown_when} |")
    return "\n".join(lines)
