"""The cluster snapshot: immutable, combined from both views, with derived flags."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from kinspect.model.facts import Fact, Unknown
from kinspect.model.fast_values import fast_init
from kinspect.model.flush import Flush, topic_flush
from kinspect.model.severity import Severity
from kinspect.model.views import (
    AdminState,
    ConfigValue,
    ControllerAnswer,
    EligibleLeaders,
    Mode,
    Reassignment,
    SessionState,
)

# A partition's state, worst first; `unknown`: the ISR is short and whether it is under
# min.insync.replicas was not told.
PartitionState = Literal["offline", "under_min_isr", "unknown", "warn", "moving", "ok"]


@dataclass(frozen=True)
class ControllerInfo:
    """The active controller: ZooKeeper's /controller, or in KRaft the quorum leader and its
    epoch. `broker_reported_id` is what Metadata says (in KRaft a random broker: never shown as
    the controller there)."""

    id: int | None
    epoch: int | None
    broker_reported_id: int | None


@dataclass(frozen=True)
class Throttle:
    """A broker's replication throttles (bytes/s; None: not set), the dynamic broker configs
    kafka-reassign-partitions --throttle writes: they slow a reassignment on purpose."""

    leader_rate: int | None
    follower_rate: int | None

    @property
    def active(self) -> bool:
        return self.leader_rate is not None or self.follower_rate is not None


@dataclass(frozen=True)
class LogDirInfo:
    """One of a broker's log directories, as the broker answered DescribeLogDirs: what its
    replicas hold, or the error that took it offline (a failed or full disk)."""

    path: str
    error: str | None  # None: online
    size: int  # bytes its replicas hold (those being moved into it too)
    replicas: int
    total_bytes: int | None = None  # the volume (None: not told, before Kafka 3.3)
    usable_bytes: int | None = None

    @property
    def offline(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    address: str | None
    registered: bool | None  # None when ZooKeeper is not watched
    expected: bool
    # KRaft: not in the cluster metadata, which lists unfenced brokers only (None: not KRaft)
    fenced: bool | None = None
    throttle: Fact[Throttle] | None = None  # None: not asked
    log_dirs: Fact[tuple[LogDirInfo, ...]] | None = None  # None: not asked
    flush: Fact[Flush] | None = None  # when it fsyncs by itself (None: not asked)

    @property
    def offline_log_dirs(self) -> tuple[LogDirInfo, ...]:
        if self.log_dirs is None or isinstance(self.log_dirs, Unknown):
            return ()
        return tuple(d for d in self.log_dirs if d.offline)


@dataclass(frozen=True)
class QuorumMember:
    """A voter or observer of the KRaft metadata quorum: how far its copy of the metadata log
    trails the leader's (a lagging controller cannot take over; a lagging broker acts on old
    decisions)."""

    id: int
    log_end_offset: int | None  # None: the leader does not know it
    lag: int | None  # the leader's log end minus this one (None: unknown)
    last_fetch_ms: int | None
    last_caught_up_ms: int | None


@dataclass(frozen=True)
class QuorumInfo:
    """The KRaft controller quorum, as its leader described it (DescribeQuorum)."""

    leader_id: int | None  # None: the quorum has no leader
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumMember, ...]
    observers: tuple[QuorumMember, ...]
    asked: str | None = None  # the address that answered
    controllers: tuple[ControllerAnswer, ...] = ()  # each controller asked directly

    def member(self, node_id: int) -> QuorumMember | None:
        return next((m for m in self.voters + self.observers if m.id == node_id), None)

    @property
    def stale_leaders(self) -> tuple[ControllerAnswer, ...]:
        """Controllers still answering as leader at an older epoch (cut off, not yet resigned)."""
        return tuple(c for c in self.controllers
                     if c.state == "leader" and c.leader_epoch is not None
                     and c.leader_epoch < self.leader_epoch)


@fast_init
@dataclass(frozen=True, slots=True)
class ReplicaLog:
    """One replica's own log end, asked of its broker: a follower falling behind shows here, and
    so does a cut-off leader whose log runs ahead of the new leader's."""

    broker: int
    log_end: int | None  # None: the broker did not answer
    epoch: int | None  # the leader epoch the broker believes the partition is at
    lag: int | None  # the leader's log end minus this one; < 0: ahead of it (None: unknown)
    diverged: int = 0  # records past where its epoch ends in the current leader's log


@fast_init
@dataclass(frozen=True, slots=True)
class ReplicaDisk:
    """Where one replica lives on its broker and how big it is (DescribeLogDirs); `moving_to`:
    the dir it is being copied into on the same broker (kafka-reassign-partitions with
    log dirs), `moved` the bytes copied so far."""

    broker: int
    log_dir: str
    size: int
    moving_to: str | None = None
    moved: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition, with its flags as Kafka's own TopicCommand computes them (so kinspect's
    lists equal `kafka-topics --describe --under-replicated-partitions` and its siblings); a
    flag resting on a fact that was not told (a refused DescribeConfigs, reassignments that
    could not be listed) is Unknown with that reason, never a guess."""

    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int | None
    log_start: int | None
    min_isr: Fact[int]
    broker_leader: int | None
    broker_isr: tuple[int, ...] | None
    views_disagree: bool
    replica_logs: tuple[ReplicaLog, ...] = ()
    # (asked epoch, newest epoch the current leader's log has at or before it, where it ends)
    epoch_ends: tuple[tuple[int, int, int], ...] = ()
    # None: not being moved; Unknown: reassignments could not be listed
    reassignment: Fact[Reassignment | None] = None
    # KIP-966 (Kafka 4.x); None: the cluster has no such thing (ZooKeeper mode)
    elr: Fact[EligibleLeaders] | None = None
    # False: the leader is not among the brokers the cluster lists as alive (Kafka's
    # "unavailable"); the broker list's own view, as DescribeCluster gives it to TopicCommand
    leader_live: bool = True
    # ms the slowest replica being added has made no progress (None: moving, or not watched)
    stalled_ms: int | None = None
    # each replica's dir and size, where its broker told them (DescribeLogDirs)
    disks: tuple[ReplicaDisk, ...] = ()
    # replicas on a failed log dir (the metadata's offline replicas, kafka-topics' "Offline:")
    offline_replicas: tuple[int, ...] = ()
    # when the controller last wrote the leader and ISR (ms): ZooKeeper's state znode's mtime
    # (an election and an ISR change both write it); Unknown where the cluster does not say
    # (KRaft's metadata keeps no time); None: recorded by a kinspect that did not read it
    state_changed_at: Fact[int] | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def offline(self) -> bool:
        return self.leader is None

    @property
    def unavailable(self) -> bool:
        """Kafka's --unavailable-partitions: no leader, or a leader that is not alive."""
        return self.offline or not self.leader_live

    @property
    def adding(self) -> tuple[int, ...]:
        return self.reassignment.adding if isinstance(self.reassignment, Reassignment) else ()

    @property
    def removing(self) -> tuple[int, ...]:
        return self.reassignment.removing if isinstance(self.reassignment, Reassignment) else ()

    @property
    def moving(self) -> bool:
        return isinstance(self.reassignment, Reassignment)

    @property
    def replication_factor(self) -> int:
        """Kafka's: the replicas less those a reassignment is adding."""
        return len(self.replicas) - len(self.adding)

    @property
    def under_replicated(self) -> Fact[bool]:
        """Fewer in sync than the replication factor; a replica being added does not count
        (a routine reassignment is not an outage). Unknown only when the ISR is short and the
        reassignments could not be listed: a lagging replica and one being added look alike."""
        if len(self.isr) >= len(self.replicas):
            return False
        if isinstance(self.reassignment, Unknown):
            return self.reassignment
        return self.replication_factor - len(self.isr) > 0

    @property
    def under_min_isr(self) -> Fact[bool]:
        """Kafka's --under-min-isr-partitions: no leader, or fewer in sync than
        min.insync.replicas (acks=all writes are refused)."""
        if self.offline:
            return True
        if isinstance(self.min_isr, Unknown):
            return self.min_isr
        return len(self.isr) < self.min_isr

    @property
    def at_min_isr(self) -> Fact[bool]:
        """Kafka's --at-min-isr-partitions: exactly min.insync.replicas in sync (one more loss
        and acks=all writes stop), whether or not a replica is missing."""
        if isinstance(self.min_isr, Unknown):
            return self.min_isr
        return len(self.isr) == self.min_isr

    @property
    def isr_short(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def preferred_leader(self) -> bool:
        return bool(self.replicas) and self.leader == self.replicas[0]

    @property
    def missing(self) -> tuple[int, ...]:
        """Replicas out of the ISR; one a reassignment is adding is catching up, not missing."""
        return tuple(r for r in self.replicas if r not in self.isr and r not in self.adding)

    @property
    def epoch_start(self) -> int | None:
        """Where the current leader's epoch starts in its log (None: not asked): what an older
        leader acknowledged at or past it is not in the current leader's log."""
        if self.leader_epoch == 0:
            return 0
        before = None if self.leader_epoch is None else self.leader_epoch - 1
        return next((end for asked, _found, end in self.epoch_ends if asked == before), None)

    def replica_log(self, broker: int) -> ReplicaLog | None:
        return next((r for r in self.replica_logs if r.broker == broker), None)

    def disk(self, broker: int) -> ReplicaDisk | None:
        return next((d for d in self.disks if d.broker == broker), None)

    @property
    def diverged(self) -> tuple[ReplicaLog, ...]:
        """Replicas holding records the current leader's log does not: truncated when they rejoin."""
        return tuple(r for r in self.replica_logs if r.diverged > 0)

    @property
    def state(self) -> PartitionState:
        """How bad this partition is (PartitionState), to sort and colour it by."""
        if self.offline:
            return "offline"
        under = self.under_min_isr
        if under is True:
            return "under_min_isr"
        if isinstance(under, Unknown) and self.isr_short:
            return "unknown"
        if self.under_replicated is True or self.at_min_isr is True:
            return "warn"
        if isinstance(self.under_replicated, Unknown):
            return "unknown"
        return "moving" if self.moving else "ok"


@dataclass(frozen=True)
class TopicInfo:
    name: str
    replication_factor: int
    config: Fact[tuple[tuple[str, ConfigValue], ...]]  # Unknown: DescribeConfigs refused/failed
    partitions: tuple[PartitionInfo, ...]

    def setting(self, key: str) -> Fact[str | None]:
        if isinstance(self.config, Unknown):
            return self.config
        return next((v.value for k, v in self.config if k == key), None)

    @property
    def flush(self) -> Fact[Flush]:
        """Its effective flush.messages and flush.ms, or why they are unknown."""
        return topic_flush(self.config)


@dataclass(frozen=True)
class ClusterFinding:
    """A cluster finding of any severity (model/findings.py finds them; the JSON, a contract
    old recordings keep, calls the list `warnings`)."""

    kind: str  # a key of health_checks.KINDS: its check, severity, order and where it is filed
    message: str
    topic: str | None = None
    broker: int | None = None
    severity: Severity = Severity.WARN  # or CRITICAL


@dataclass(frozen=True)
class GroupPartition:
    """One partition a group has committed on: how far behind the log's end it is, in records
    and in time (the age of the next record it will consume), and whether retention already
    deleted records it had not consumed."""

    topic: str
    partition: int
    committed: int
    high_watermark: int | None
    next_ts: int | None = None  # the timestamp of the record at `committed` (None: not read)
    log_start: int | None = None

    @property
    def lag(self) -> int | None:
        """High watermark - committed offset (None while the watermark is unknown)."""
        return None if self.high_watermark is None else max(0, self.high_watermark - self.committed)

    def lag_ms(self, at_ms: int) -> int | None:
        """How old the next record to consume is at `at_ms`: 0 when caught up, None when
        behind and that record's timestamp was not read."""
        if self.lag == 0:
            return 0
        return None if self.next_ts is None else max(0, at_ms - self.next_ts)

    @property
    def deleted_unconsumed(self) -> int:
        """Records retention deleted before the group consumed them (its offset is below the
        log's start: it will skip them, or start over, by auto.offset.reset)."""
        if self.log_start is None or self.committed >= self.log_start:
            return 0
        return self.log_start - self.committed


@dataclass(frozen=True)
class GroupInfo:
    group_id: str
    state: str
    members: int
    partitions: tuple[GroupPartition, ...]

    @property
    def lag(self) -> int | None:
        """The group's total lag over the partitions whose watermark is known."""
        known = [p.lag for p in self.partitions if p.lag is not None]
        return sum(known) if known else None

    def lag_ms(self, at_ms: int) -> int | None:
        """Its lag in time: the oldest next record over its partitions (None: none read;
        a lagging partition not read makes this a lower bound, said by `lag_ms_complete`)."""
        known = [ms for p in self.partitions if (ms := p.lag_ms(at_ms)) is not None]
        return max(known) if known else None

    def lag_ms_complete(self, at_ms: int) -> bool:
        return all(p.lag_ms(at_ms) is not None for p in self.partitions)


@dataclass(frozen=True)
class ClusterSnapshot:
    taken_at: int
    controller: ControllerInfo
    zookeeper_state: SessionState | None  # None when ZooKeeper is not watched
    admin_state: AdminState | Literal["absent"]  # absent: no AdminClient view at all
    admin_error: str | None
    brokers: tuple[BrokerInfo, ...]
    topics: tuple[TopicInfo, ...]
    findings: tuple[ClusterFinding, ...]  # JSON and recordings: `warnings`
    limitations: tuple[str, ...]
    groups: tuple[GroupInfo, ...] = ()
    replica_logs_at: int | None = None  # when the poll that asked each broker its log ends began
    mode: Mode = "unknown"
    quorum: QuorumInfo | None = None  # KRaft only (None there: the quorum did not answer)
    # topics the brokers hold (their log dirs) that this user may not describe
    hidden_topics: Fact[tuple[str, ...]] = ()
    controller_unknown: Unknown | None = None  # KRaft: the quorum refused to say who leads
    # consumer groups listed but refused to this user: their state and lag are not known
    groups_unknown: tuple[tuple[str, Unknown], ...] = ()
    log_dirs_at: int | None = None  # when the brokers were asked their log dirs (sizes move)

    @property
    def sees_zookeeper(self) -> bool:
        return self.zookeeper_state is not None

    @property
    def kraft(self) -> bool:
        return self.mode == "kraft"

    def partitions(self) -> list[PartitionInfo]:
        return [p for t in self.topics for p in t.partitions]

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        for t in self.topics:
            if t.name == topic:
                return next((p for p in t.partitions if p.partition == partition), None)
        return None


def keep_unchanged(old: ClusterSnapshot | None, new: ClusterSnapshot) -> ClusterSnapshot:
    """`new`, with every topic and partition equal to `old`'s replaced by `old`'s very object.

    The screen holds the model it shows while the observer holds its newest and builds the
    next: at 10,000 partitions three full models were alive at a poll, and Python's arenas
    followed that peak up. On an idle cluster consecutive polls are equal topic for topic, so
    they now share one model (and later comparisons, `diff`'s among them, are by identity)."""
    if old is None:
        return new
    topics = _shared(old.topics, new.topics, lambda t: t.name, _kept_topic)
    return new if topics is None else replace(new, topics=topics)


def _kept_topic(old: TopicInfo, new: TopicInfo) -> TopicInfo:
    if old == new:
        return old
    partitions = _shared(old.partitions, new.partitions, lambda p: p.partition,
                         lambda was, now: was if was == now else now)
    return new if partitions is None else replace(new, partitions=partitions)


Item = TypeVar("Item")


def _shared(old: tuple[Item, ...], new: tuple[Item, ...], key: Callable[[Item], object],
            keep: Callable[[Item, Item], Item]) -> tuple[Item, ...] | None:
    """`new`, each item with a match in `old` (by `key`) passed through `keep`; None when
    nothing of `old` was kept."""
    before = {key(item): item for item in old}
    out = tuple(keep(was, item) if (was := before.get(key(item))) is not None else item
                for item in new)
    return None if all(a is b for a, b in zip(out, new, strict=True)) else out
