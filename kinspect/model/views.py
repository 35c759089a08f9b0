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
