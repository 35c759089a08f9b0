"""Cluster-level warnings: the settings and states that lose data or stop consumers."""

from __future__ import annotations

from kinspect.model.severity import Severity
from kinspect.model.snapshot import ClusterSnapshot, ClusterWarning


def cluster_warnings(s: ClusterSnapshot) -> tuple[ClusterWarning, ...]:
    out: list[ClusterWarning] = []
    if s.sees_zookeeper and s.zookeeper_state == "connected" and s.controller.id is None:
        out.append(ClusterWarning("no_controller", "no controller: no leader can be elected",
                                  severity=Severity.CRITICAL))
    if s.kraft:
        out += _kraft_warnings(s)
    out += _broker_warnings(s)
    for t in s.topics:
        if t.replication_factor == 1:
            why = ("every consumer group stops when its one broker dies"
                   if t.name == "__consumer_offsets" else "one broker loss loses or blocks it")
            out.append(ClusterWarning("replication_factor_1", f"{t.name} has replication "
                                      f"factor 1: {why}", topic=t.name))
        raw = t.setting("min.insync.replicas")  # unknown settings: see health.unchecked
        if isinstance(raw, str) and raw.isdigit():
            min_isr = int(raw)
            if t.replication_factor > 1 and min_isr >= t.replication_factor:
                out.append(ClusterWarning("min_isr_ge_rf", f"{t.name}: min.insync.replicas="
                                          f"{min_isr} >= replication factor "
                                          f"{t.replication_factor}: acks=all cannot survive one "
                                          "broker", topic=t.name))
            elif min_isr < 2 and t.replication_factor > 1:
                out.append(ClusterWarning("min_isr_below_2", f"{t.name}: min.insync.replicas="
                                          f"{min_isr}: an acks=all write can rest on one replica",
                                          topic=t.name))
        if t.setting("unclean.leader.election.enable") == "true":
            out.append(ClusterWarning("unclean_election_enabled", f"{t.name}: unclean leader "
                                      "election is on: committed data can vanish", topic=t.name))
    first = {"no_controller": 0, "stale_quorum_leader": 0, "log_dir_offline": 1,
             "broker_missing": 1,
             "broker_fenced": 1, "replication_factor_1": 2}
    return tuple(sorted(out, key=lambda w: (-w.severity.rank, first.get(w.kind, 3),
                                            w.topic != "__consumer_offsets", w.topic or "")))


def _kraft_warnings(s: ClusterSnapshot) -> list[ClusterWarning]:
    """No quorum leader: no controller, so no leader election and no ISR change; a controller
    still answering as leader at an older epoch: cut off, and not yet aware of it."""
    quorum = s.quorum
    if quorum is None and s.controller_unknown is not None:
        return []  # not seen: an unmade check (health.unchecked), not a finding
    if quorum is None:
        return [ClusterWarning("no_controller", "no active controller known: the KRaft quorum "
                               "does not answer DescribeQuorum", severity=Severity.CRITICAL)]
    out = []
    if quorum.leader_id is None:
        out.append(ClusterWarning("no_controller", "the KRaft quorum has no leader: no leader "
                                  "can be elected", severity=Severity.CRITICAL))
    for stale in quorum.stale_leaders:
        out.append(ClusterWarning("stale_quorum_leader", f"controller {stale.node_id} still "
                                  f"answers as quorum leader at epoch {stale.leader_epoch} (the "
                                  f"quorum is at {quorum.leader_epoch})", broker=stale.node_id))
    return out


def _broker_warnings(s: ClusterSnapshot) -> list[ClusterWarning]:
    """A broker missing or fenced, and a broker's log dir offline (a failed or full disk)."""
    out: list[ClusterWarning] = []
    for b in s.brokers:
        if b.expected and b.registered is False:
            out.append(ClusterWarning("broker_missing", f"broker {b.id} is expected but not "
                                      "registered in ZooKeeper", broker=b.id))
        if b.expected and b.fenced:
            out.append(ClusterWarning("broker_fenced", f"broker {b.id} is expected but fenced: "
                                      "it is not in the cluster metadata", broker=b.id))
        for d in b.offline_log_dirs:
            out.append(ClusterWarning("log_dir_offline", f"broker {b.id}: log dir {d.path} is "
                                      f"offline ({d.error}): its replicas are offline until the "
                                      "broker restarts with it working", broker=b.id,
                                      severity=Severity.CRITICAL))
    return out
