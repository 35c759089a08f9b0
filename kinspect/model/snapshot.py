"""The cluster snapshot: immutable, combined from both views, with derived flags."""

from __future__ import annotations

from dataclasses import dataclass

from kinspect.model.views import ConfigValue


@dataclass(frozen=True)
class ControllerInfo:
    id: int | None
    epoch: int | None
    broker_reported_id: int | None


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    address: str | None
    registered: bool | None  # None when ZooKeeper is not watched
    expected: bool


@dataclass(frozen=True)
class ReplicaLog:
    """One replica's own log end, asked of its broker: a follower falling behind shows here, and
    so does a cut-off leader whose log runs ahead of the new leader's."""

    broker: int
    log_end: int | None  # None: the broker did not answer
    epoch: int | None  # the leader epoch the broker believes the partition is at
    lag: int | None  # the leader's log end minus this one; < 0: ahead of it (None: unknown)
    diverged: int = 0  # records past where its epoch ends in the current leader's log


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int | None
    log_start: int | None
    min_isr: int
    broker_leader: int | None
    broker_isr: tuple[int, ...] | None
    views_disagree: bool
    replica_logs: tuple[ReplicaLog, ...] = ()
    # (asked epoch, newest epoch the current leader's log has at or before it, where it ends)
    epoch_ends: tuple[tuple[int, int, int], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def offline(self) -> bool:
        return self.leader is None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.min_isr

    @property
    def at_min_isr(self) -> bool:
        """One more lost replica and acks=all writes stop (only when some replica is missing)."""
        return len(self.isr) == self.min_isr and self.under_replicated

    @property
    def preferred_leader(self) -> bool:
        return bool(self.replicas) and self.leader == self.replicas[0]

    @property
    def missing(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.isr)

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

    @property
    def diverged(self) -> tuple[ReplicaLog, ...]:
        """Replicas holding records the current leader's log does not: truncated when they rejoin."""
        return tuple(r for r in self.replica_logs if r.diverged > 0)

    @property
    def severity(self) -> str:
        if self.offline:
            return "offline"
        if self.under_min_isr:
            return "under_min_isr"
        if self.under_replicated or self.at_min_isr:
            return "warn"
        return "ok"


@dataclass(frozen=True)
class TopicInfo:
    name: str
    replication_factor: int
    config: tuple[tuple[str, ConfigValue], ...]
    partitions: tuple[PartitionInfo, ...]

    def setting(self, key: str) -> str | None:
        return next((v.value for k, v in self.config if k == key), None)


@dataclass(frozen=True)
class ClusterWarning:
    kind: str
    message: str
    topic: str | None = None
    broker: int | None = None
    severity: str = "warn"  # warn | critical


@dataclass(frozen=True)
class GroupPartition:
    """One partition a group has committed on: how far behind the log's end it is."""

    topic: str
    partition: int
    committed: int
    high_watermark: int | None

    @property
    def lag(self) -> int | None:
        """High watermark - committed offset (None while the watermark is unknown)."""
        return None if self.high_watermark is None else max(0, self.high_watermark - self.committed)


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


@dataclass(frozen=True)
class ClusterSnapshot:
    taken_at: int
    controller: ControllerInfo
    zookeeper_state: str | None  # None when ZooKeeper is not watched
    admin_state: str
    admin_error: str | None
    brokers: tuple[BrokerInfo, ...]
    topics: tuple[TopicInfo, ...]
    warnings: tuple[ClusterWarning, ...]
    limitations: tuple[str, ...]
    groups: tuple[GroupInfo, ...] = ()
    replica_logs_at: int | None = None  # when the poll that asked each broker its log ends began

    @property
    def sees_zookeeper(self) -> bool:
        return self.zookeeper_state is not None

    def partitions(self) -> list[PartitionInfo]:
        return [p for t in self.topics for p in t.partitions]

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        for t in self.topics:
            if t.name == topic:
                return next((p for p in t.partitions if p.partition == partition), None)
        return None
