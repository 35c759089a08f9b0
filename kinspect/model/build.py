"""Combining ZooKeeper's view and the brokers' view into one snapshot (pure).

ZooKeeper wins for leader, ISR and epochs when present: it holds what the controller decided.
In KRaft there is no ZooKeeper: the decision is the newest one any broker holds (the claim with
the highest leader epoch, see sources/claims.py), and the controller is the quorum leader. The
broker view fills in when neither is known (no ZooKeeper address on a ZooKeeper cluster), and
is kept beside the decision so disagreements — a zombie leader — can be flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kinspect.model.facts import Fact, Unknown
from kinspect.model.findings import cluster_findings
from kinspect.model.flush import Flush, broker_flush
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterSnapshot,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    LogDirInfo,
    PartitionInfo,
    QuorumInfo,
    QuorumMember,
    ReplicaDisk,
    ReplicaLog,
    Throttle,
    TopicInfo,
)
from kinspect.model.views import (
    AdminState,
    BrokerView,
    ConfigValue,
    EligibleLeaders,
    EpochEnd,
    Mode,
    Offsets,
    PartitionDecision,
    PartitionMeta,
    PartitionStateZ,
    QuorumAnswer,
    QuorumReplica,
    Reassignment,
    ReplicaEnd,
    ZkView,
)

NO_ADMIN = Unknown("no AdminClient answer: topic configs not read")
# Brokers learn the controller's decisions a little after ZooKeeper does; a broker view is
# compared with a ZooKeeper state only when it was polled at least this long after the change.
METADATA_GRACE_MS = 500
Key = tuple[str, int]


def _min_isr(config: Fact[dict[str, ConfigValue]]) -> Fact[int]:
    """The topic's min.insync.replicas as the broker told it (a broker-level default comes
    with its source); never a default of ours."""
    if isinstance(config, Unknown):
        return config
    value = config.get("min.insync.replicas")
    if value is None or not value.value.isdigit():
        return Unknown("min.insync.replicas missing from the DescribeConfigs answer")
    return int(value.value)


def _topic_config(name: str, broker: BrokerView | None) -> Fact[dict[str, ConfigValue]]:
    if broker is None:
        return NO_ADMIN
    if name in broker.config_unknown:
        return broker.config_unknown[name]
    if name not in broker.configs:
        return Unknown("DescribeConfigs not answered yet")
    return dict(broker.configs[name])


def _live(zk: ZkView | None, broker: BrokerView | None) -> set[int] | None:
    """The brokers the cluster lists as alive (TopicCommand's DescribeCluster): the brokers'
    metadata, else ZooKeeper's registrations; None: neither answered."""
    if broker is not None and broker.state == "ok":
        return set(broker.brokers)
    return set(zk.brokers) if zk is not None else None


def _disagree(leader: int | None, b_leader: int | None, broker: BrokerView | None,
              mtime_ms: int | None) -> bool:
    """A broker acts as leader where the controller decided otherwise (the zombie leader).

    ISR differences are left out: broker metadata always trails ZooKeeper by a moment.
    """
    if broker is None or broker.state != "ok" or b_leader is None:
        return False
    if mtime_ms is not None and broker.polled_at_ms is not None \
            and broker.polled_at_ms - mtime_ms < METADATA_GRACE_MS:
        return False
    return leader != b_leader


def _replica_logs(replicas: tuple[int, ...], leader: int | None, epoch: int | None,
                  ends: dict[int, ReplicaEnd], epoch_ends: dict[int, EpochEnd]
                  ) -> tuple[ReplicaLog, ...]:
    """Each replica's log end, its lag behind the leader's, and what it holds that the leader
    does not (a zombie leader's acknowledged writes, doomed unless it leads again)."""
    if not ends:
        return ()
    lead = ends.get(leader) if leader is not None else None
    out = []
    for broker in replicas:
        end = ends.get(broker)
        if end is None:
            out.append(ReplicaLog(broker, None, None, None))
            continue
        lag = lead.log_end - end.log_end if lead is not None else None
        diverged = 0
        stale = end.epoch is not None and epoch is not None and end.epoch < epoch
        if stale and end.epoch in epoch_ends:
            diverged = max(0, end.log_end - epoch_ends[end.epoch].end_offset)
        out.append(ReplicaLog(broker, end.log_end, end.epoch, lag, diverged))
    return tuple(out)


_NONE: dict[Any, Any] = {}


class _Lookups:
    """What every partition looks up in the two views, resolved once per snapshot (at 100,000
    partitions the same checks of the views' shape, repeated per partition, were a fifth of
    the build)."""

    def __init__(self, zk: ZkView | None, broker: BrokerView | None, mode: str) -> None:
        self.zk, self.broker = zk, broker
        self.kraft = mode == "kraft"
        self.metas = broker.partitions if broker else _NONE
        self.offsets = broker.offsets if broker else _NONE
        self.states: Mapping[Key, PartitionStateZ | PartitionDecision] = (
            zk.partitions if zk else broker.decided if broker else _NONE)
        self.ends = broker.replica_ends if broker else _NONE
        self.epoch_ends = broker.epoch_ends if broker else _NONE
        self.offline = broker.offline_replicas if broker else _NONE
        self.live = _live(zk, broker)
        self.moving, self.moving_unknown = _reassignments(zk, broker)
        self.elr, self.elr_unknown = _eligible(broker, mode)
        self.stalled = _stalled_since(broker)
        self.dirs = {b: told for b, told in (broker.log_dirs.items() if broker else ())
                     if not isinstance(told, Unknown)}

    def reassignment(self, key: Key) -> Fact[Reassignment | None]:
        """ZooKeeper's topic znode when watched, else ListPartitionReassignments' answer."""
        if self.moving_unknown is not None:
            return self.moving_unknown
        return self.moving.get(key)

    def eligible(self, key: Key) -> Fact[EligibleLeaders] | None:
        """KRaft's ELR (KIP-966); in ZooKeeper mode absent (None), not unknown."""
        if self.elr is None:
            return self.elr_unknown
        return self.elr.get(key, NOT_IN_ELR_ANSWER)

    def disks(self, key: Key, replicas: Sequence[int]) -> tuple[ReplicaDisk, ...]:
        """Each replica's dir and size, where its broker answered DescribeLogDirs."""
        out = []
        for replica in replicas if self.dirs else ():
            told = self.dirs.get(replica)
            current = told.replicas.get(key) if told is not None else None
            if told is not None and current is not None:
                future = told.future.get(key)
                out.append(ReplicaDisk(replica, current.log_dir, current.size,
                                       future.log_dir if future else None,
                                       future.size if future else None))
        return tuple(out)


NOT_IN_ELR_ANSWER = Unknown("not in the DescribeTopicPartitions answer")


def _reassignments(zk: ZkView | None, broker: BrokerView | None
                   ) -> tuple[Mapping[Key, Reassignment], Unknown | None]:
    if zk is not None:
        return zk.reassignments, None
    if broker is None:
        return _NONE, Unknown("no AdminClient answer: reassignments not listed")
    if isinstance(broker.reassignments, Unknown):
        return _NONE, broker.reassignments
    return broker.reassignments, None


def _eligible(broker: BrokerView | None, mode: str
              ) -> tuple[Mapping[Key, Fact[EligibleLeaders]] | None, Unknown | None]:
    """(each partition's ELR, None) or (None, why all are unknown, or None outside KRaft)."""
    if mode != "kraft" or broker is None:
        return None, None
    if isinstance(broker.elr, Unknown):
        return None, broker.elr
    return broker.elr, None


def _stalled_since(broker: BrokerView | None) -> dict[Key, int]:
    """How long the slowest replica being added to each partition has not moved (ms)."""
    if broker is None or broker.polled_at_ms is None:
        return {}
    since: dict[Key, int] = {}
    for (key, _replica), at in broker.stalled_since.items():
        since[key] = min(at, since.get(key, at))
    return {key: broker.polled_at_ms - at for key, at in since.items()}


KRAFT_NO_TIME = Unknown("KRaft's metadata keeps no time of a partition's change")
NOT_WATCHED = Unknown("ZooKeeper not watched (--zookeeper): the time is its state znode's")
NO_STATE = Unknown("no state znode for it in ZooKeeper yet")
NO_STAT = Unknown("ZooKeeper's stat of its state znode not read")


# A partition's leader, epoch and ISR as the controller decided them (else as the brokers'
# metadata says), whether a broker leads against that decision, and when it was written: a
# tuple, as this is made for every partition of every snapshot.
_Decided = tuple[int | None, int | None, tuple[int, ...], bool, Fact[int]]
State = PartitionStateZ | PartitionDecision


def _no_time(look: _Lookups) -> Unknown:
    """Why a partition's change has no time: only ZooKeeper's state znode keeps one."""
    if look.kraft:
        return KRAFT_NO_TIME
    if look.zk is None:
        return NOT_WATCHED
    return NO_STATE


def _decided(look: _Lookups, state: State | None, meta: PartitionMeta | None,
             offsets: Offsets | None) -> _Decided:
    if state is None:
        return _from_brokers(look, meta, offsets)
    b_leader = None
    if meta is not None:
        b_leader = meta.leader
    changed_at: Fact[int] = _no_time(look)
    if isinstance(state, PartitionStateZ):
        since = state.mtime_ms
        changed_at = NO_STAT
        if since is not None:
            changed_at = since
    else:
        since = state.seen_ms
    disagree = _disagree(state.leader, b_leader, look.broker, since)
    return state.leader, state.leader_epoch, tuple(state.isr), disagree, changed_at


def _from_brokers(look: _Lookups, meta: PartitionMeta | None, offsets: Offsets | None
                  ) -> _Decided:
    """No decision read: the brokers' metadata, the epoch from ListOffsets."""
    leader, epoch = None, None
    isr: tuple[int, ...] = ()
    if meta is not None:
        leader, isr = meta.leader, tuple(meta.isr)
    if offsets is not None:
        epoch = offsets.leader_epoch
    return leader, epoch, isr, False, _no_time(look)


def _replicas(assigned: tuple[int, ...] | None, state: State | None,
              meta: PartitionMeta | None) -> tuple[int, ...]:
    """ZooKeeper's assignment, else the controller's decision, else the brokers' metadata."""
    if assigned:
        return tuple(assigned)
    if isinstance(state, PartitionDecision) and state.replicas:
        return tuple(state.replicas)
    if meta is not None:
        return tuple(meta.replicas)
    return ()


def _epoch_ends(told: Mapping[int, EpochEnd] | None) -> tuple[tuple[int, int, int], ...]:
    if not told:
        return ()
    return tuple(sorted((asked, e.found, e.end_offset) for asked, e in told.items()))


def _partition(topic: str, pid: int, look: _Lookups, assigned: Mapping[int, tuple[int, ...]],
               min_isr: Fact[int]) -> PartitionInfo:
    key = (topic, pid)
    meta = look.metas.get(key)
    offsets = look.offsets.get(key)
    state = look.states.get(key)
    replicas = _replicas(assigned.get(pid), state, meta)
    leader, epoch, isr, disagree, changed_at = _decided(look, state, meta, offsets)
    b_leader, b_isr = None, None
    if meta is not None:
        b_leader, b_isr = meta.leader, meta.isr
    hw, log_start = None, None
    if offsets is not None:
        hw, log_start = offsets.high_watermark, offsets.log_start
    ends = look.ends.get(key)
    epoch_ends = look.epoch_ends.get(key)
    logs: tuple[ReplicaLog, ...] = ()
    if ends:
        logs = _replica_logs(replicas, leader, epoch, ends, epoch_ends or {})
    live = look.live
    leader_live = leader is None or live is None or leader in live
    return PartitionInfo(
        topic=topic, partition=pid, leader=leader, leader_epoch=epoch, replicas=replicas,
        isr=isr, high_watermark=hw, log_start=log_start, min_isr=min_isr,
        broker_leader=b_leader, broker_isr=b_isr, views_disagree=disagree,
        replica_logs=logs, epoch_ends=_epoch_ends(epoch_ends),
        reassignment=look.reassignment(key), elr=look.eligible(key), leader_live=leader_live,
        stalled_ms=look.stalled.get(key), disks=look.disks(key, replicas),
        offline_replicas=look.offline.get(key, ()), state_changed_at=changed_at)


def _partitions(topic: str, look: _Lookups, config: Fact[dict[str, ConfigValue]],
                broker_ids: set[int]) -> list[PartitionInfo]:
    assigned: Mapping[int, tuple[int, ...]] = {}
    if look.zk is not None:
        assigned = look.zk.topics.get(topic, {})
    min_isr = _min_isr(config)
    pids = broker_ids | set(assigned)
    return [_partition(topic, pid, look, assigned, min_isr) for pid in sorted(pids)]


def _log_dirs(broker_id: int, broker: BrokerView | None
              ) -> Fact[tuple[LogDirInfo, ...]] | None:
    """A broker's log dirs with what its replicas hold in each (None: it was not asked)."""
    told = broker.log_dirs.get(broker_id) if broker else None
    if told is None or isinstance(told, Unknown):
        return told
    return tuple(LogDirInfo(d.path, d.error, told.size(d.path), told.count(d.path),
                            d.total_bytes, d.usable_bytes) for d in told.dirs)


def _groups(broker: BrokerView | None) -> tuple[GroupInfo, ...]:
    """Each consumer group with its lag per partition, against this poll's high watermarks."""
    if broker is None:
        return ()
    out = []
    for group in sorted(broker.groups.values(), key=lambda g: g.group_id):
        parts = []
        for (topic, partition), committed in sorted(group.committed.items()):
            offsets = broker.offsets.get((topic, partition))
            parts.append(GroupPartition(topic, partition, committed,
                                        offsets.high_watermark if offsets else None,
                                        group.next_ts.get((topic, partition)),
                                        offsets.log_start if offsets else None))
        out.append(GroupInfo(group.group_id, group.state, group.members, tuple(parts)))
    return tuple(out)


def _member(replica: QuorumReplica, leader_end: int | None) -> QuorumMember:
    end = replica.log_end_offset if replica.log_end_offset >= 0 else None
    lag = leader_end - end if leader_end is not None and end is not None else None
    return QuorumMember(replica.replica_id, end, lag, replica.last_fetch_ms,
                        replica.last_caught_up_ms)


def quorum_info(answer: QuorumAnswer, broker: BrokerView) -> QuorumInfo:
    """The quorum with each member's lag behind the leader's log end, members by id (the
    leader lists them in no stable order)."""
    lead = next((v for v in answer.voters if v.replica_id == answer.leader_id), None)
    leader_end = lead.log_end_offset if lead is not None and lead.log_end_offset >= 0 else None

    def members(replicas: tuple[QuorumReplica, ...]) -> tuple[QuorumMember, ...]:
        return tuple(_member(r, leader_end) for r in sorted(replicas, key=lambda r: r.replica_id))

    return QuorumInfo(answer.leader_id, answer.leader_epoch, answer.high_watermark,
                      members(answer.voters), members(answer.observers), answer.asked,
                      broker.controllers)


def _mode(zk: ZkView | None, broker: BrokerView | None) -> Mode:
    return "zookeeper" if zk is not None else broker.mode if broker is not None else "unknown"


def _controller(zk: ZkView | None, broker: BrokerView | None, kraft: bool) -> ControllerInfo:
    """ZooKeeper's /controller; in KRaft the quorum leader, never the broker Metadata names."""
    reported = broker.controller_id if broker else None
    if zk is not None:
        return ControllerInfo(zk.controller_id, zk.controller_epoch, reported)
    quorum = broker.quorum if broker else None
    if kraft:
        return ControllerInfo(quorum.leader_id if quorum else None,
                              quorum.leader_epoch if quorum else None, reported)
    return ControllerInfo(reported, None, reported)


def _limitations(zk: ZkView | None, broker: BrokerView | None, mode: str) -> list[str]:
    """What this snapshot could not see, and why: each said once, under the facts it lacks."""
    out = []
    if mode == "kraft":
        out += _kraft_limitations(broker)
    elif zk is None:
        out += _without_zookeeper(mode)
    out += _probe_limitations(broker)
    if broker is None:
        out.append("no AdminClient: high watermarks and topic configs are not available")
    elif broker.state != "ok":
        out.append(f"AdminClient: {broker.error or broker.state}; broker data is stale")
    return out


def _kraft_limitations(broker: BrokerView | None) -> list[str]:
    if broker is None:
        return []
    out = []
    if broker.quorum is None:
        out.append(f"KRaft quorum: {broker.quorum_error or 'no answer'}; the active "
                   "controller is unknown")
    if broker.state == "ok" and broker.partitions and not broker.decided:
        out.append("brokers not asked directly: leaders and ISRs are the AdminClient's, "
                   "leader epochs from ListOffsets")
    return out


def _without_zookeeper(mode: str) -> list[str]:
    out = ["no ZooKeeper: controller epoch, leader epochs from ZooKeeper and the ZooKeeper "
           "view are not available"]
    if mode == "unknown":
        out.append("cluster mode unknown (no broker asked directly): the controller shown "
                   "is the one brokers report, in KRaft a random broker")
    return out


def _probe_limitations(broker: BrokerView | None) -> list[str]:
    """The brokers' direct questions turned off, or a broker that did not answer them."""
    if broker is None:
        return []
    out = []
    if broker.probes_off:
        out.append(f"{broker.probes_off}: each replica's own log end, the zombie check and the "
                   "KRaft quorum are not asked")
    for broker_id, why in sorted(broker.probe_errors.items()):
        out.append(f"broker {broker_id} did not answer kinspect's direct questions (its own "
                   f"metadata and log ends): {why}")
    return out


THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _throttle(broker_id: int, broker: BrokerView | None) -> Fact[Throttle] | None:
    config = broker.broker_configs.get(broker_id) if broker else None
    if config is None or isinstance(config, Unknown):
        return config
    leader, follower = (config.get(key) for key in THROTTLE_RATES)
    return Throttle(int(leader.value) if leader and leader.value.isdigit() else None,
                    int(follower.value) if follower and follower.value.isdigit() else None)


def _flush(broker_id: int, broker: BrokerView | None) -> Fact[Flush] | None:
    """When the broker fsyncs by itself, or why that is unknown (None: not asked)."""
    config = broker.broker_configs.get(broker_id) if broker else None
    if config is None or isinstance(config, Unknown):
        return config
    return broker_flush(config)


def _hidden(zk: ZkView | None, broker: BrokerView | None) -> Fact[tuple[str, ...]]:
    """Topics this user may not describe (ZooKeeper, when watched, lists every topic)."""
    if zk is not None:
        return ()
    if broker is None:
        return Unknown("no AdminClient answer")
    if isinstance(broker.hidden_topics, Unknown):
        return broker.hidden_topics
    return tuple(sorted(broker.hidden_topics))


def _brokers(zk: ZkView | None, broker: BrokerView | None, expected: set[int],
             kraft: bool) -> tuple[BrokerInfo, ...]:
    """Every broker ZooKeeper, the metadata or the caller knows of, by id."""
    addresses: dict[int, str] = {}
    listed: set[int] = set()
    if broker is not None:
        addresses.update(broker.brokers)
        listed = set(broker.brokers)
    if zk is not None:
        addresses.update(zk.brokers)
    out = []
    for b in sorted(set(addresses) | expected):
        registered = None
        if zk is not None:
            registered = b in zk.brokers
        fenced = None
        if kraft and broker is not None:
            fenced = b not in listed
        out.append(BrokerInfo(id=b, address=addresses.get(b), registered=registered,
                              expected=b in expected, fenced=fenced,
                              throttle=_throttle(b, broker), log_dirs=_log_dirs(b, broker),
                              flush=_flush(b, broker)))
    return tuple(out)


def _topics(zk: ZkView | None, broker: BrokerView | None, mode: str) -> tuple[TopicInfo, ...]:
    """Every topic ZooKeeper or the metadata lists, each with its partitions and settings."""
    # The brokers' partitions by topic, grouped once: per topic it would cost topics x partitions.
    by_topic: dict[str, set[int]] = {}
    if broker is not None:
        for t, p in broker.partitions:
            by_topic.setdefault(t, set()).add(p)
    names = set(by_topic)
    if zk is not None:
        names |= set(zk.topics)
    look = _Lookups(zk, broker, mode)
    topics = []
    for name in sorted(names):
        config = _topic_config(name, broker)
        parts = _partitions(name, look, config, by_topic.get(name, set()))
        rf = max((p.replication_factor for p in parts), default=0)
        topics.append(TopicInfo(name=name, replication_factor=rf, config=_sorted(config),
                                partitions=tuple(parts)))
    return tuple(topics)


def _sorted(config: Fact[dict[str, ConfigValue]]) -> Fact[tuple[tuple[str, ConfigValue], ...]]:
    if isinstance(config, Unknown):
        return config
    return tuple(sorted(config.items()))


def _quorum(broker: BrokerView | None, kraft: bool) -> tuple[QuorumInfo | None, Unknown | None]:
    """KRaft's quorum, or why the controller is unknown (neither in ZooKeeper mode)."""
    if not kraft or broker is None:
        return None, None
    if broker.quorum is None:
        return None, broker.quorum_unknown
    return quorum_info(broker.quorum, broker), None


@dataclass(frozen=True)
class _Admin:
    """What the AdminClient's poll says of itself: its state, error, and when it asked."""

    state: AdminState | Literal["absent"]  # absent: no AdminClient view at all
    error: str | None
    replica_logs_at: int | None
    log_dirs_at: int | None
    groups_unknown: tuple[tuple[str, Unknown], ...]


def _admin(broker: BrokerView | None) -> _Admin:
    if broker is None:
        return _Admin("absent", None, None, None, ())
    replica_logs_at = None
    if broker.replica_ends:
        replica_logs_at = broker.polled_at_ms
    log_dirs_at = None
    if broker.log_dirs:
        log_dirs_at = broker.log_dirs_at_ms
    refused = tuple((g, Unknown(why)) for g, why in sorted(broker.groups_refused.items()))
    return _Admin(broker.state, broker.error, replica_logs_at, log_dirs_at, refused)


def build_snapshot(zk: ZkView | None, broker: BrokerView | None,
                   expected_brokers: Sequence[int] | None, taken_at: int) -> ClusterSnapshot:
    """One snapshot from what ZooKeeper and the brokers said, with its findings."""
    mode = _mode(zk, broker)
    kraft = mode == "kraft"
    quorum, controller_unknown = _quorum(broker, kraft)
    admin = _admin(broker)
    zookeeper_state = None
    if zk is not None:
        zookeeper_state = zk.session_state
    snapshot = ClusterSnapshot(
        groups=_groups(broker), taken_at=taken_at, controller=_controller(zk, broker, kraft),
        zookeeper_state=zookeeper_state, admin_state=admin.state, admin_error=admin.error,
        brokers=_brokers(zk, broker, set(expected_brokers or ()), kraft),
        topics=_topics(zk, broker, mode), findings=(),
        limitations=tuple(_limitations(zk, broker, mode)),
        replica_logs_at=admin.replica_logs_at, mode=mode, quorum=quorum,
        hidden_topics=_hidden(zk, broker), controller_unknown=controller_unknown,
        groups_unknown=admin.groups_unknown, log_dirs_at=admin.log_dirs_at)
    return ClusterSnapshot(**{**snapshot.__dict__, "findings": cluster_findings(snapshot)})
