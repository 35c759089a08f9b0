"""The pure model: immutable snapshots and events. No I/O, no threads, no Textual."""

from kinspect.model.build import build_snapshot
from kinspect.model.facts import Fact, Unknown, known
from kinspect.model.events import Event, EventKind, HwStallTracker, diff
from kinspect.model.health import HealthReport, classify
from kinspect.model.serialize import (
    quorum_from_json,
    quorum_to_json,
    snapshot_from_json,
    snapshot_to_json,
)
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterSnapshot,
    ClusterWarning,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    PartitionInfo,
    QuorumInfo,
    QuorumMember,
    ReplicaLog,
    TopicInfo,
)
from kinspect.model.views import (
    BrokerView,
    ConfigValue,
    ControllerAnswer,
    EligibleLeaders,
    EpochEnd,
    GroupView,
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

__all__ = [
    "BrokerInfo", "BrokerView", "ClusterSnapshot", "ClusterWarning", "ConfigValue",
    "ControllerAnswer", "ControllerInfo", "EligibleLeaders", "EpochEnd", "Fact", "Event", "EventKind", "GroupInfo",
    "GroupPartition", "GroupView", "HealthReport", "HwStallTracker", "Offsets", "PartitionDecision",
    "PartitionInfo", "PartitionMeta", "PartitionStateZ", "QuorumAnswer", "QuorumInfo",
    "QuorumMember", "QuorumReplica", "Reassignment", "ReplicaEnd", "ReplicaLog", "TopicInfo", "Unknown", "ZkView",
    "build_snapshot",
    "classify",
    "diff", "known", "quorum_from_json", "quorum_to_json", "snapshot_from_json", "snapshot_to_json",
]
