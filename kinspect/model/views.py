"""Raw views, as the sources read them: ZooKeeper's decisions and the brokers' metadata."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PartitionStateZ:
    """/brokers/topics/T/partitions/P/state: what the controller decided."""

    leader: int  # -1 = none
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    mtime_ms: int | None = None


@dataclass(frozen=True)
class ZkView:
    session_state: str  # connected | suspended | lost | unknown
    controller_id: int | None
    controller_epoch: int | None
    brokers: dict[int, str] = field(default_factory=dict)
    topics: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionStateZ] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionMeta:
    """A partition as broker metadata describes it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ConfigValue:
    value: str
    source: str  # e.g. dynamic_topic, static_broker, default


@dataclass(frozen=True)
class Offsets:
    high_watermark: int | None
    log_start: int | None
    leader_epoch: int | None


@dataclass(frozen=True)
class ReplicaEnd:
    """One replica's own log, as its broker answered (ListOffsets with the debugging replica id)."""

    log_end: int
    epoch: int | None  # the leader epoch this broker believes the partition is at


@dataclass(frozen=True)
class EpochEnd:
    """Where an epoch ends in the current leader's log (OffsetsForLeaderEpoch).

    `found` is the newest epoch at or before the asked one that the leader's log has; when it is
    not the asked epoch, nothing of the asked epoch is in the leader's log.
    """

    found: int
    end_offset: int


@dataclass(frozen=True)
class GroupView:
    """A consumer group as the group coordinator describes it, and its committed offsets."""

    group_id: str
    state: str  # stable, preparing_rebalancing, completing_rebalancing, empty, dead, unknown
    members: int
    committed: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokerView:
    state: str  # ok | error | unknown
    error: str | None
    brokers: dict[int, str]
    controller_id: int | None
    partitions: dict[tuple[str, int], PartitionMeta]
    configs: dict[str, dict[str, ConfigValue]]
    offsets: dict[tuple[str, int], Offsets]
    polled_at_ms: int | None = None  # when the poll that produced this view started
    groups: dict[str, GroupView] = field(default_factory=dict)
    # Per partition: each replica's own log end (broker id → answer), and where older epochs end
    # in the current leader's log (asked epoch → answer). Empty when brokers were not asked.
    replica_ends: dict[tuple[str, int], dict[int, ReplicaEnd]] = field(default_factory=dict)
    epoch_ends: dict[tuple[str, int], dict[int, EpochEnd]] = field(default_factory=dict)
