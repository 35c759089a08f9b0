"""A recorded model for layout tests: the zombie-leader moment of the workshop, frozen.

kafka3 led test1-0 and orders-2, then lost ZooKeeper: the controller moved leadership to
kafka1 (epoch 3) while kafka3 still claims it, and kept taking acks=1 writes: its log of
test1-0 runs 8,120 records past where epoch 2 ends in the new leader's log (diverged). Each
replica's log is recorded, and __consumer_offsets has 50 partitions, as a real cluster's does.
A load on test1 shows the live figure: 39,895 of its acknowledgements were kafka3's after
the election. Not live data: a fixed stand-in so the SVG snapshots only change when the
layout does.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kinspect.lab.journal import JournalEntry
from kinspect.lab.state import LabState, NodeRecord
from kinspect.load.counts import ProducerCounts
from kinspect.load.liveloss import DoomedAcks, LiveLoss
from kinspect.load.load_process import LoadStatus
from kinspect.load.runsettings import LoadSettings
from kinspect.load.trend import RateSample
from kinspect.model import ClusterSnapshot, Event, PartitionInfo, ReplicaLog
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole, ReadOnlyConsole
from kinspect.tui.feed import RecordedFeed
from tests.helpers.model_fixtures import T0, demo_snapshot

FROZEN_NOW = (T0 + 400) / 1000


def recorded_lab() -> LabState:
    nodes = [NodeRecord("zk1", "zookeeper", "198.18.1.10", 2181, None, 100, "running", "ks1-zk1")]
    nodes += [NodeRecord(f"kafka{i}", "broker", f"198.18.1.1{i}", 9092, i, 100 + i, "running",
                         f"ks1-kafka{i}") for i in (1, 2, 3)]
    return LabState(lab_id="recorded", backend="process", preset="demo", network="netns",
                    kafka_version="3.9.2", broker_config={}, overrides={}, nodes=nodes,
                    created_at=T0 - 60_000, slot=1, groups=[["kafka1", "kafka2", "kafka3"],
                                                            ["kafka1", "kafka2", "zk1"]])


def recorded_events() -> list[Event]:
    return [
        Event(T0 - 9000, "isr_shrank", "3 left the ISR → [1, 2]", "test1-0", 3, "warn"),
        Event(T0 - 5000, "broker_gone", "broker 3 left ZooKeeper", None, 3, "error"),
        Event(T0 - 5000, "leader_changed", "leader 3 → 1 (epoch 3)", "test1-0", 1, "warn"),
        Event(T0 - 4990, "views_disagree_started", "ZooKeeper says 1, broker 3 still claims it",
              "test1-0", 3, "error"),
    ]


def _logs(p: PartitionInfo) -> tuple[ReplicaLog, ...]:
    """Followers a few records behind the leader; kafka3 ahead on test1-0, diverged."""
    leader_end = 100 + 7 * p.partition
    logs = []
    for i, broker in enumerate(p.replicas):
        if p.topic == "test1" and broker == 3:
            logs.append(ReplicaLog(3, 8_220, 2, -8_120, diverged=8_120))
            continue
        behind = 0 if broker == p.leader else (3 * i * (p.partition + 1)) % 1_300
        logs.append(ReplicaLog(broker, leader_end - behind, p.leader_epoch, behind))
    return tuple(logs)


def recorded_snapshot() -> ClusterSnapshot:
    snapshot = demo_snapshot(isolated_leader=True, taken_at=T0)
    topics = []
    for topic in snapshot.topics:
        parts = topic.partitions
        if topic.name == "__consumer_offsets":
            parts = tuple(replace(parts[0], partition=n, replicas=((n % 3) + 1,),
                                  isr=((n % 3) + 1,), leader=(n % 3) + 1) for n in range(50))
        parts = tuple(replace(p, replica_logs=_logs(p)) for p in parts)
        topics.append(replace(topic, partitions=parts))
    return replace(snapshot, topics=tuple(topics))


def recorded_load() -> LoadStatus:
    """A load on test1 at 5,000/s: the isolation 12 s ago (a ✕ on the failed line), and kafka3's
    acknowledgements since the election counted as doomed."""
    trend = tuple(RateSample(T0 - (40 - s) * 1000, 5_000.0 if s != 35 else 2_400.0, 0.0,
                             s == 34) for s in range(40))
    live = LiveLoss(160_097, (DoomedAcks("test1", 0, 39_895, (3,)),))
    stats = ProducerCounts(acked=160_097, failed=0, rate=5_003.0, in_flight=12,
                           latency_p50_ms=5.0, latency_p99_ms=22.0, ts=T0)
    return LoadStatus(Path("/recorded/run"), True,
                      LoadSettings(topic="test1", bootstrap="", acks="1"), stats,
                      live=live, trend=trend)


def recorded_app(read_only: bool = False) -> KinspectApp:
    faults = [JournalEntry.from_json({
        "ts": T0 - 12_000, "action": "partition", "node": None,
        "groups": [["kafka1", "kafka2", "kafka3"], ["kafka1", "kafka2", "zk1"]],
        "detail": "", "lab_id": "recorded"})]
    feed = RecordedFeed(recorded_snapshot(), recorded_lab(),
                        recorded_events(), faults, load=recorded_load(),
                        title="lab (demo preset, process)")
    console = ReadOnlyConsole("recorded cluster") if read_only else LabConsole()
    return KinspectApp(feed, console, clock=lambda: FROZEN_NOW)
