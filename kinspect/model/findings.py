"""Cluster-level findings: the settings and states that lose data or stop consumers.

Each finding's kind, severity and order come from the registry of health checks
(health_checks.py); this module only finds them."""

from __future__ import annotations

from kinspect.model.facts import Unknown
from kinspect.model.flush import Flush
from kinspect.model.health_checks import KINDS, LATE_RANK
from kinspect.model.snapshot import BrokerInfo, ClusterFinding, ClusterSnapshot, TopicInfo

# An online log dir with less than this share of its volume free is nearly full.
NEARLY_FULL_FREE = 0.1


def found(kind: str, message: str, topic: str | None = None,
          broker: int | None = None) -> ClusterFinding:
    """A finding of a registered kind, with its check's severity."""
    return ClusterFinding(kind, message, topic=topic, broker=broker,
                          severity=KINDS[kind].severity)


def cluster_findings(s: ClusterSnapshot) -> tuple[ClusterFinding, ...]:
    out: list[ClusterFinding] = []
    if s.sees_zookeeper and s.zookeeper_state == "connected" and s.controller.id is None:
        out.append(found("no_controller", "no controller: no leader can be elected"))
    if s.kraft:
        out += _kraft_findings(s)
    out += _broker_findings(s)
    for t in s.topics:
        out += _topic_findings(t)
    out += _flush_findings(s)
    return tuple(sorted(out, key=_order))


def _order(w: ClusterFinding) -> tuple[int, int, bool, str]:
    """The worst first; within a severity, by the registry's rank, __consumer_offsets first."""
    rank = LATE_RANK
    if w.kind in KINDS:
        rank = KINDS[w.kind].rank
    return -w.severity.rank, rank, w.topic != "__consumer_offsets", w.topic or ""


def _topic_findings(t: TopicInfo) -> list[ClusterFinding]:
    """A topic's risky settings: replication factor 1, min.insync.replicas, unclean election."""
    out = []
    if t.replication_factor == 1:
        why = "one broker loss loses or blocks it"
        if t.name == "__consumer_offsets":
            why = "every consumer group stops when its one broker dies"
        out.append(found("replication_factor_1", f"{t.name} has replication factor 1: {why}",
                         topic=t.name))
    out += _min_isr_findings(t)
    if t.setting("unclean.leader.election.enable") == "true":
        out.append(found("unclean_election_enabled", f"{t.name}: unclean leader election is "
                         "on: committed data can vanish", topic=t.name))
    return out


def _min_isr_findings(t: TopicInfo) -> list[ClusterFinding]:
    raw = t.setting("min.insync.replicas")  # unknown settings: see health.unchecked
    if not isinstance(raw, str) or not raw.isdigit() or t.replication_factor <= 1:
        return []
    min_isr = int(raw)
    if min_isr >= t.replication_factor:
        return [found("min_isr_ge_rf", f"{t.name}: min.insync.replicas={min_isr} >= "
                      f"replication factor {t.replication_factor}: acks=all cannot survive "
                      "one broker", topic=t.name)]
    if min_isr < 2:
        return [found("min_isr_below_2", f"{t.name}: min.insync.replicas={min_isr}: an "
                      "acks=all write can rest on one replica", topic=t.name)]
    return []


def _kraft_findings(s: ClusterSnapshot) -> list[ClusterFinding]:
    """No quorum leader: no controller, so no leader election and no ISR change; a controller
    still answering as leader at an older epoch: cut off, and not yet aware of it."""
    quorum = s.quorum
    if quorum is None and s.controller_unknown is not None:
        return []  # not seen: an unmade check (health.unchecked), not a finding
    if quorum is None:
        return [found("no_controller", "no active controller known: the KRaft quorum does not "
                      "answer DescribeQuorum")]
    out = []
    if quorum.leader_id is None:
        out.append(found("no_controller", "the KRaft quorum has no leader: no leader can be "
                         "elected"))
    for stale in quorum.stale_leaders:
        out.append(found("stale_quorum_leader", f"controller {stale.node_id} still answers as "
                         f"quorum leader at epoch {stale.leader_epoch} (the quorum is at "
                         f"{quorum.leader_epoch})", broker=stale.node_id))
    return out


def _broker_findings(s: ClusterSnapshot) -> list[ClusterFinding]:
    """A broker missing or fenced, and a broker's log dir offline (a failed or full disk) or
    nearly full."""
    out: list[ClusterFinding] = []
    for b in s.brokers:
        if b.expected and b.registered is False:
            out.append(found("broker_missing", f"broker {b.id} is expected but not registered "
                             "in ZooKeeper", broker=b.id))
        if b.expected and b.fenced:
            out.append(found("broker_fenced", f"broker {b.id} is expected but fenced: it is not "
                             "in the cluster metadata", broker=b.id))
        for d in b.offline_log_dirs:
            out.append(found("log_dir_offline", f"broker {b.id}: log dir {d.path} is offline "
                             f"({d.error}): its replicas are offline until the broker restarts "
                             "with it working", broker=b.id))
        out += _nearly_full(b)
    return out


def _nearly_full(b: BrokerInfo) -> list[ClusterFinding]:
    """Online log dirs with less than a tenth of their volume free: a full disk takes the dir
    offline, and its replicas with it. Sizes not told (before Kafka 3.3) are an unmade check."""
    if not isinstance(b.log_dirs, tuple):
        return []
    out = []
    for d in b.log_dirs:
        if d.offline or not d.total_bytes or d.usable_bytes is None:
            continue
        free = d.usable_bytes / d.total_bytes
        if free < NEARLY_FULL_FREE:
            out.append(found("log_dir_nearly_full", f"broker {b.id}: log dir {d.path} is "
                             f"{1 - free:.0%} full ({d.usable_bytes:,} of {d.total_bytes:,} "
                             "bytes free): a full disk takes it offline", broker=b.id))
    return out


SHOWN_TOPICS = 5
NO_FSYNC = ("a power loss of all replicas at once loses acknowledged writes (no broker fsyncs: "
            "log.flush.interval.messages and flush.messages are never)")


def _flush_findings(s: ClusterSnapshot) -> list[ClusterFinding]:
    """Topics no broker and no setting of theirs fsyncs (Kafka's default: it relies on
    replication). A broker whose settings are unknown makes it an unmade check, not a finding."""
    if not all(_never(b.flush) for b in s.brokers if b.flush is not None):
        return []
    never = [t.name for t in s.topics if _never(t.flush)]
    if not never:
        return []
    named = ", ".join(never[:SHOWN_TOPICS])
    if len(never) > SHOWN_TOPICS:
        named += f" and {len(never) - SHOWN_TOPICS:,} more"
    return [found("no_fsync", f"{named}: {NO_FSYNC}")]  # one line, however many topics


def _never(flush: Flush | Unknown) -> bool:
    """Known never to fsync (unknown: not judged here, see assessment.unchecked)."""
    if isinstance(flush, Unknown):
        return False
    return flush.never
