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
    TopicInfo,
)
from kinspect.model.views import (
    BrokerView,
    ConfigValue,
    GroupView,
    Offsets,
    PartitionMeta,
    PartitionStateZ,
    ZkView,
)

__all__ = [
    "BrokerInfo", "BrokerView", "ClusterSnapshot", "ClusterWarning", "ConfigValue",
    "ControllerInfo", "Event", "EventKind", "GroupInfo", "GroupPartition", "GroupView",
    "HealthReport", "HwStallTracker", "Offsets", "PartitionInfo",
    "PartitionMeta", "PartitionStateZ", "TopicInfo", "ZkView", "build_snapshot", "classify",
    "diff", "snapshot_from_json", "snapshot_to_json",
]
