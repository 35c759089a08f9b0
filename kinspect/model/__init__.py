"""The pure model: immutable snapshots and events. No I/O, no threads, no Textual."""

from kinspect.model.build import build_snapshot
from kinspect.model.events import Event, EventKind, HwStallTracker, diff
from kinspect.model.health import HealthReport, classify
from kinspect.model.serialize import snapshot_from_json, snapshot_to_json
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterSnapshot,
    ClusterWarning,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    PartitionInfo,
    ReplicaLog,
    TopicInfo,
)
from kinspect.model.views import (
    BrokerView,
    ConfigValue,
    EpochEnd,
    GroupView,
    Offsets,
    PartitionMeta,
    PartitionStateZ,
    ReplicaEnd,
    ZkView,
)

__all__ = [
    "BrokerInfo", "BrokerView", "ClusterSnapshot", "ClusterWarning", "ConfigValue",
    "ControllerInfo", "EpochEnd", "Event", "EventKind", "GroupInfo", "GroupPartition", "GroupView",
    "HealthReport", "HwStallTracker", "Offsets", "PartitionInfo", "PartitionMeta",
    "PartitionStateZ", "ReplicaEnd", "ReplicaLog", "TopicInfo", "ZkView", "build_snapshot",
    "classify",
    "diff", "snapshot_from_json", "snapshot_to_json",
]
