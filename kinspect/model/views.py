"""Raw views, as the sources read them: ZooKeeper's decisions and the brokers' metadata."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kinspect.model.facts import Fact, Unknown
from kinspect.model.fast_values import fast_init

NOT_ASKED = Unknown("not asked")

Mode = Literal["zookeeper", "kraft", "unknown"]  # how the cluster keeps its metadata
SessionState = Literal["connected", "suspended", "lost", "unknown"]  # a ZooKeeper session's
# The AdminClient's last poll: unknown before one; a refused login or TLS handshake said so.
AdminState = Literal["ok", "error", "unknown", "authentication failed", "TLS failed"]
ControllerState = Literal["leader", "follower", "error", "unreachable"]  # one asked directly


@fast_init
@dataclass(frozen=True, slots=True)
class PartitionStateZ:
    """/brokers/topics/T/partitions/P/state: what the controller decided."""

    leader: int | None  # None: no leader (ZooKeeper's -1, converted where it is read)
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    mtime_ms: int | None = None


@dataclass(frozen=True)
class ZkView:
    session_state: SessionState
    controller_id: int | None
    controller_epoch: int | None
    brokers: dict[int, str] = field(default_factory=dict)
    topics: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionStateZ] = field(default_factory=dict)
    # partitions being moved: the topic znode's adding_replicas / removing_replicas
    reassignments: dict[tuple[str, int], Reassignment] = field(default_factory=dict)


@fast_init
@dataclass(frozen=True, slots=True)
class PartitionMeta:
    """A partition as broker metadata describes it."""

    leader: int | None  # None: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class PartitionDecision:
    """What the controller decided for one partition, in KRaft: the newest claim (highest
    leader epoch) any broker's own metadata holds. There is no ZooKeeper to read it from, and
    the broker that heard the newest decision is the one that knows it."""

    leader: int | None  # None: no leader
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    seen_ms: int | None = None  # the poll that first saw this epoch: brokers learn it a bit later


@dataclass(frozen=True)
class QuorumReplica:
    """One voter or observer of the KRaft metadata quorum, as its leader reports it."""

    replica_id: int
    log_end_offset: int  # -1: unknown
    last_fetch_ms: int | None  # None when -1 (the leader itself, unknown) or DescribeQuorum v0
    last_caught_up_ms: int | None


@dataclass(frozen=True)
class QuorumAnswer:
    """A DescribeQuorum answer: the active controller is the quorum leader, not the
    "controller id" brokers put in Metadata/DescribeCluster (in KRaft, a random broker)."""

    leader_id: int | None  # None when the quorum has no leader (-1)
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]
    asked: str  # the address that answered
    # v2 (Kafka 3.9+): each voter's listeners, NAME://host:port; empty when not told
    endpoints: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ControllerAnswer:
    """One controller asked directly: a cut-off controller still answering as leader at an old
    epoch is a stale quorum leader; one that answers nothing is out of reach."""

    node_id: int
    address: str
    state: ControllerState
    leader_epoch: int | None = None  # when it answered as leader
    error: str | None = None


@dataclass(frozen=True)
class ConfigValue:
    value: str
    source: str  # e.g. dynamic_topic, static_broker, default


@fast_init
@dataclass(frozen=True, slots=True)
class Offsets:
    high_watermark: int | None
    log_start: int | None
    leader_epoch: int | None


@fast_init
@dataclass(frozen=True, slots=True)
class ReplicaEnd:
    """One replica's own log, as its broker answered (ListOffsets with the debugging replica id)."""

    log_end: int
    epoch: int | None  # the leader epoch this broker believes the partition is at


@fast_init
@dataclass(frozen=True, slots=True)
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
    # the timestamp (ms) of the record at each committed offset: the next one it consumes
    next_ts: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokerView:
    state: AdminState
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
    # KRaft: the mode the brokers' ApiVersions tell, the quorum
    # (None: no answer, `quorum_error` says why), the controllers asked directly, and each
    # partition's decision (empty unless KRaft: ZooKeeper holds them otherwise).
    mode: Mode = "unknown"
    quorum: QuorumAnswer | None = None
    quorum_error: str | None = None
    quorum_unknown: Unknown | None = None  # DescribeQuorum refused: who leads is not known
    controllers: tuple[ControllerAnswer, ...] = ()
    decided: dict[tuple[str, int], PartitionDecision] = field(default_factory=dict)
    # What a user with few rights may not be told, each known or Unknown with its reason:
    # topic configs (per topic), reassignments, ELR, the topics hidden from this user (on the
    # brokers' disks, refused when named: sources/hidden.py), each broker's configs.
    config_unknown: dict[str, Unknown] = field(default_factory=dict)
    reassignments: Fact[dict[tuple[str, int], Reassignment]] = NOT_ASKED
    elr: Fact[dict[tuple[str, int], Fact[EligibleLeaders]]] = NOT_ASKED
    hidden_topics: Fact[frozenset[str]] = NOT_ASKED
    log_dirs: dict[int, Fact[BrokerLogDirs]] = field(default_factory=dict)  # per broker asked
    log_dirs_at_ms: int | None = None  # when they were asked (every few polls: sizes move)
    offline_replicas: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    broker_configs: dict[int, Fact[dict[str, ConfigValue]]] = field(default_factory=dict)
    probe_errors: dict[int, str] = field(default_factory=dict)  # broker -> why it did not answer
    probes_off: str | None = None  # why no broker is asked directly (a login they cannot make)
    groups_refused: dict[str, str] = field(default_factory=dict)  # listed, not describable: why
    # replicas being added that made no progress: (partition, broker) -> since when (ms)
    stalled_since: dict[tuple[tuple[str, int], int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class Reassignment:
    """A partition being moved (ListPartitionReassignments, or ZooKeeper's topic znode): the
    replica set during the move, the replicas being added (catching up with the leader) and
    those removed once they have. Kafka's replication factor excludes the ones being added."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class EligibleLeaders:
    """KIP-966 (Kafka 4.x, DescribeTopicPartitions): replicas that left the ISR while it was
    below min.insync.replicas yet hold every committed record (`eligible`: one may still be
    elected cleanly), and the last ones known to (`last_known`: when the ELR is empty)."""

    eligible: tuple[int, ...]
    last_known: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class LogDirReplica:
    """One replica a broker holds in one of its log directories (DescribeLogDirs): answered
    for every partition on the broker, whichever topics the asking user may describe."""

    broker: int
    log_dir: str
    size: int
    offset_lag: int
    future: bool  # a replica being moved between this broker's log directories


@dataclass(frozen=True)
class LogDir:
    """One of a broker's log directories (DescribeLogDirs). An offline one (a failed or full
    disk) answers with its error and no replica: what it held is not told."""

    path: str
    error: str | None  # None: online; else e.g. "KafkaStorageError (56)"
    total_bytes: int | None = None  # the volume's size (DescribeLogDirs v4+; None: not told)
    usable_bytes: int | None = None  # what is left on it

    @property
    def offline(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class BrokerLogDirs:
    """Everything one broker said about its disks: its log directories, the replica of each
    partition it holds, and those being moved into another of its directories (`future`)."""

    broker: int
    dirs: tuple[LogDir, ...]
    replicas: dict[tuple[str, int], LogDirReplica] = field(default_factory=dict)
    future: dict[tuple[str, int], LogDirReplica] = field(default_factory=dict)

    @property
    def offline(self) -> tuple[LogDir, ...]:
        return tuple(d for d in self.dirs if d.offline)

    def size(self, path: str) -> int:
        """Bytes the replicas in `path` hold (future ones too: they are on that disk)."""
        return sum(r.size for r in (*self.replicas.values(), *self.future.values())
                   if r.log_dir == path)

    def count(self, path: str) -> int:
        return sum(1 for r in self.replicas.values() if r.log_dir == path)
