"""A synthetic stand-in for a 10,000-partition cluster in a whole-cluster failover.

Not a cluster and not the observer: a thread that builds real `ClusterSnapshot`s (the model
the observer hands the TUI) and posts them through the same Mailbox the live feed uses. A
3-broker lab of 10,000 partitions is too heavy for two cores; what bench/tui.py measures is
the TUI, so the cluster is stood in for. Idle, it rebuilds an unchanged picture once a second
(the observer's poll). Failing over, every snapshot moves every partition's leader and ISR
and every replica's log end, with one leader_changed event per partition, every 0.25 s (the
observer rebuilds back to back on ZooKeeper's notifications; the draw gap is 0.2 s).
"""

from __future__ import annotations

import threading
import time

from kinspect.model import (
    BrokerInfo,
    ClusterSnapshot,
    ControllerInfo,
    Event,
    PartitionInfo,
    ReplicaLog,
    TopicInfo,
)
from kinspect.model.events import EventKind, Severity
from kinspect.tui.feed import Feed, Mailbox
from kinspect.tui.messages import Arrival, Post, SnapshotArrived
from kinspect.tui.partition_rows import Preparer

USER_TOPIC, INTERNAL = "bench-10k", 50
IDLE_EVERY_S, FAILOVER_EVERY_S = 1.0, 0.25


def _partition(topic: str, n: int, round_: int, rf: int) -> PartitionInfo:
    replicas = tuple(((n + i) % 3) + 1 for i in range(rf))
    leader = replicas[round_ % rf]
    followers = tuple(r for r in replicas if r != leader)
    isr = (leader, *followers[:rf - 1 - round_ % 2])  # a follower out every other round
    hw = 1_000 + 50 * round_ + n % 97
    lags = {b: 0 if b == leader else (n + round_ + b) % 40 for b in replicas}
    logs = tuple(ReplicaLog(b, hw - lags[b], 5 + round_, lags[b]) for b in replicas)
    return PartitionInfo(topic, n, leader, 5 + round_, replicas, isr, hw, 0, min(2, rf),
                         leader, isr, False, logs)


def churn_snapshot(partitions: int, round_: int) -> tuple[ClusterSnapshot, list[Event]]:
    """Round 0 is the settled cluster; each later round moves every partition once more."""
    now = int(time.time() * 1000)
    user = tuple(_partition(USER_TOPIC, n, round_, 3) for n in range(partitions - INTERNAL))
    internal = tuple(_partition("__consumer_offsets", n, round_, 3) for n in range(INTERNAL))
    topics = (TopicInfo(USER_TOPIC, 3, (), user), TopicInfo("__consumer_offsets", 3, (), internal))
    brokers = tuple(BrokerInfo(b, f"198.18.1.1{b}:9092", True, True) for b in (1, 2, 3))
    snapshot = ClusterSnapshot(now, ControllerInfo(1, 4 + round_, 1), "connected", "ok", None,
                               brokers, topics, (), ())
    events = [Event(now, EventKind.LEADER_CHANGED, f"leader → {p.leader} (epoch {p.leader_epoch})",
                    p.name, p.leader, Severity.WARN) for p in user + internal] if round_ else []
    return snapshot, events


class ChurnFeed(Feed):
    """Posts synthetic snapshots (see the module docstring) until stopped."""

    title = "synthetic 10,000-partition stand-in"

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.failing = threading.Event()
        self.built_ms: list[float] = []
        self._stop = threading.Event()
        self.preparer = Preparer()

    def start(self, post: Post) -> None:
        mailbox = Mailbox()
        round_ = 0
        while not self._stop.is_set():
            if self.failing.is_set():
                round_ += 1
            started = time.perf_counter()
            snapshot, events = churn_snapshot(self.partitions, round_)
            arrival = Arrival.assessed(snapshot, events, self.preparer)  # as the live feed
            self.built_ms.append((time.perf_counter() - started) * 1000)
            if mailbox.put(arrival):
                post(SnapshotArrived(arrival, mailbox))
            self._stop.wait(FAILOVER_EVERY_S if self.failing.is_set() else IDLE_EVERY_S)

    def stop(self) -> None:
        self._stop.set()
