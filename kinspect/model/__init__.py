"""The pure model: immutable snapshots and events. No I/O, no threads, no Textual.

In: raw views as the sources read them (views.py: ZooKeeper's or KRaft's decisions, the brokers'
metadata). Out: a `ClusterSnapshot` (build.py, snapshot.py), the `Event`s between two of them
(events.py), cluster findings and the health verdict (findings.py, assessment.py), and JSON
(serialize.py: the `snapshot --json` contract). Every layer above reads these values; this one
imports nothing of ours (a contract holds it). The names below are its public surface.
"""

from kinspect.model.assessment import HealthReport, Unchecked, Verdict, assess
from kinspect.model.build import build_snapshot
from kinspect.model.controller_moves import ControllerMove, ControllerMoves, ControllerState
from kinspect.model.events import Event, EventKind, HwStallTracker, diff
from kinspect.model.facts import Fact, Unknown, known
from kinspect.model.serialize import (
    partitions_to_json,
    quorum_from_json,
    quorum_to_json,
    snapshot_from_json,
    snapshot_to_json,
    topic_to_json,
)
from kinspect.model.severity import Severity
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterFinding,
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
    TopicInfo,
    keep_unchanged,
)
from kinspect.model.views import (
    BrokerLogDirs,
    BrokerView,
    ConfigValue,
    ControllerAnswer,
    EligibleLeaders,
    EpochEnd,
    GroupView,
    LogDir,
    LogDirReplica,
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
    "BrokerInfo",
    "BrokerLogDirs",
    "BrokerView",
    "ClusterFinding",
    "ClusterSnapshot",
    "ConfigValue",
    "ControllerAnswer",
    "ControllerInfo",
    "ControllerMove",
    "ControllerMoves",
    "ControllerState",
    "EligibleLeaders",
    "EpochEnd",
    "Event",
    "EventKind",
    "Fact",
    "GroupInfo",
    "GroupPartition",
    "GroupView",
    "HealthReport",
    "HwStallTracker",
    "LogDir",
    "LogDirInfo",
    "LogDirReplica",
    "Offsets",
    "PartitionDecision",
    "PartitionInfo",
    "PartitionMeta",
    "PartitionStateZ",
    "QuorumAnswer",
    "QuorumInfo",
    "QuorumMember",
    "QuorumReplica",
    "Reassignment",
    "ReplicaDisk",
    "ReplicaEnd",
    "ReplicaLog",
    "Severity",
    "TopicInfo",
    "Unchecked",
    "Unknown",
    "Verdict",
    "ZkView",
    "assess",
    "build_snapshot",
    "diff",
    "keep_unchanged",
    "known",
    "partitions_to_json",
    "quorum_from_json",
    "quorum_to_json",
    "snapshot_from_json",
    "snapshot_to_json",
    "topic_to_json",
]
