"""The observer against the real lab: agreement with kcat, and live events under faults."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kinspect.lab.topics import create_topics
from kinspect.model import ClusterSnapshot, Event
from kinspect.sources.observer import Observer
from tests.helpers import kinspect, node_for_broker, wait_until

pytestmark = pytest.mark.lab


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, _snapshot: ClusterSnapshot, events: list[Event]) -> None:
        with self.lock:
            self.events.extend(events)

    def find(self, kind: str, partition: str | None = None, **fields: Any) -> Event | None:
        with self.lock:
            return next((e for e in self.events if e.kind == kind
                         and (partition is None or e.partition == partition)
                         and all(e.fields.get(k) == v for k, v in fields.items())), None)


@pytest.fixture
def observed(lab: dict[str, Any]) -> Iterator[tuple[Observer, Recorder]]:
    expected = {n["broker_id"]: n["address"] for n in lab["nodes"] if n["role"] == "broker"}
    observer = Observer(lab["bootstrap"], lab["zookeeper"], expected_brokers=expected,
                        interval_s=0.5)
    recorder = Recorder()
    observer.subscribe(recorder)
    observer.start()
    observer.wait_ready()
    yield observer, recorder
    observer.stop()


def produce(bootstrap: str, topic: str, count: int) -> int:
    acked = 0

    def done(err: Any, _msg: Any) -> None:
        nonlocal acked
        acked += err is None

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, f"{i}".encode(), on_delivery=done)
    producer.flush(60)
    return acked


def test_snapshot_agrees_with_kcat(lab: dict[str, Any]) -> None:
    create_topics(lab["bootstrap"], {"six": 6})
    acked = produce(lab["bootstrap"], "six", 600)
    assert acked == 600
    data = json.loads(kinspect("snapshot", "--json", "--topic", "six").stdout)
    ours = {p["partition"]: p for p in data["topics"][0]["partitions"]}
    kcat = json.loads(subprocess.run(["kcat", "-b", lab["bootstrap"], "-L", "-J", "-t", "six"],
                                     capture_output=True, text=True, check=True).stdout)
    theirs = {p["partition"]: p for p in kcat["topics"][0]["partitions"]}
    assert set(ours) == set(theirs) == set(range(6))
    for pid, part in theirs.items():
        assert ours[pid]["leader"] == part["leader"]
        assert ours[pid]["replicas"] == [r["id"] for r in part["replicas"]]
        assert sorted(ours[pid]["isr"]) == sorted(r["id"] for r in part["isrs"])
    assert sum(p["high_watermark"] for p in ours.values()) == acked
    assert data["controller"]["epoch"] >= 1 and data["zookeeper"]["state"] == "connected"


def leader_of(observer: Observer, topic: str) -> int:
    snapshot = observer.build()[0]
    part = snapshot.partition(topic, 0)
    assert part is not None and part.leader is not None
    return part.leader


def test_kill_leader_emits_leader_changed(lab: dict[str, Any],
                                          observed: tuple[Observer, Recorder]) -> None:
    observer, recorder = observed
    create_topics(lab["bootstrap"], {"test1": 1})
    wait_until(lambda: observer.latest and observer.latest.partition("test1", 0)
               and not observer.latest.partition("test1", 0).under_replicated, 90, "full ISR")
    leader = leader_of(observer, "test1")
    victim = node_for_broker(lab, leader)
    kinspect("lab", "kill", victim)
    event = wait_until(lambda: next((e for e in recorder.events if e.kind == "leader_changed"
                                     and e.partition == "test1-0"
                                     and e.fields["new"] not in (None, leader)), None),
                       30, "leader_changed to another broker")
    # The controller may pass through "no leader" for a moment: either hop names the old one.
    assert event.fields["old"] == leader or recorder.find("partition_offline", "test1-0",
                                                          old=leader)
    assert recorder.find("broker_gone") is not None
    kinspect("lab", "start", victim)
    wait_until(lambda: recorder.find("isr_expanded", "test1-0"), 90, "isr_expanded")


def test_pause_follower_shrinks_and_resume_expands(
        lab: dict[str, Any], observed: tuple[Observer, Recorder]) -> None:
    observer, recorder = observed
    wait_until(lambda: observer.latest and observer.latest.partition("test1", 0)
               and not observer.latest.partition("test1", 0).under_replicated, 90, "full ISR")
    part = observer.latest.partition("test1", 0) if observer.latest else None
    assert part is not None and part.leader is not None
    follower = next(r for r in part.replicas if r != part.leader)
    victim = node_for_broker(lab, follower)
    produce(lab["bootstrap"], "test1", 10)
    kinspect("lab", "pause", victim)
    try:
        # The paused follower's own shrink and expand: on two loaded cores another replica
        # may drop out and rejoin meanwhile, which is news, not this test's question.
        shrink = wait_until(lambda: recorder.find("isr_shrank", "test1-0", replica=follower),
                            40, "the follower's ISR shrink after replica.lag.time.max.ms")
        assert shrink.partition == "test1-0"
    finally:
        kinspect("lab", "resume", victim)
    expand = wait_until(lambda: recorder.find("isr_expanded", "test1-0", replica=follower), 60,
                        "the follower's ISR expand")
    assert expand.fields["replica"] == follower


def test_zookeeper_down_is_a_state_and_recovers(
        lab: dict[str, Any], observed: tuple[Observer, Recorder]) -> None:
    observer, recorder = observed
    kinspect("lab", "stop", "zk1")
    try:
        wait_until(lambda: observer.latest and observer.latest.zookeeper_state != "connected",
                   30, "the ZooKeeper session to be suspended or lost")
        assert recorder.find("zk_session") is not None
    finally:
        kinspect("lab", "start", "zk1")
    wait_until(lambda: observer.latest and observer.latest.zookeeper_state == "connected",
               60, "the observer to reconnect")
    assert observer._thread is not None and observer._thread.is_alive()
    wait_until(lambda: observer.latest and len([b for b in observer.latest.brokers
                                                if b.registered]) == 3, 60, "brokers back")


def test_zookeeper_only_cut_makes_views_disagree(
        lab: dict[str, Any], observed: tuple[Observer, Recorder]) -> None:
    observer, recorder = observed
    wait_until(lambda: observer.latest and observer.latest.partition("test1", 0)
               and not observer.latest.partition("test1", 0).under_replicated, 120, "full ISR")
    leader = leader_of(observer, "test1")
    victim = node_for_broker(lab, leader)
    started = time.monotonic()
    kinspect("lab", "isolate", victim, "--from", "zk")
    try:
        event = wait_until(lambda: recorder.find("views_disagree_started", "test1-0"), 30,
                           "views to disagree")
        assert event.fields["broker_leader"] == leader
        print(f"zombie leader visible after {time.monotonic() - started:.1f} s")
    finally:
        kinspect("lab", "heal")
    wait_until(lambda: recorder.find("views_disagree_stopped", "test1-0"), 60,
               "the zombie to step down")
