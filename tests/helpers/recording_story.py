"""A recorded story for recording and replay tests: a cluster that changes in every way a
snapshot can (watermarks, a failover, groups, a new topic, warnings, ZooKeeper), built from the
model alone, with a lab journal beside it. Times are the snapshots' own, from T0."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kinspect.model import ClusterFinding, ClusterSnapshot, Event, GroupInfo, GroupPartition, diff
from kinspect.sources.recording import Recorder
from tests.helpers.model_fixtures import T0, demo_snapshot

STEP_MS = 500
FAILOVER_STEP = 40  # test1-0: leader 3 -> 1 here


def _bump(s: ClusterSnapshot, topic: str, partition: int, by: int) -> ClusterSnapshot:
    topics = tuple(replace(t, partitions=tuple(
        replace(p, high_watermark=(p.high_watermark or 0) + by)
        if (t.name, p.partition) == (topic, partition) else p for p in t.partitions))
        for t in s.topics)
    return replace(s, topics=topics)


def story(steps: int = 120) -> list[tuple[ClusterSnapshot, list[Event]]]:
    out: list[tuple[ClusterSnapshot, list[Event]]] = []
    prev: ClusterSnapshot | None = None
    for i in range(steps):
        t = T0 + i * STEP_MS
        s = demo_snapshot(taken_at=t) if prev is None else replace(prev, taken_at=t)
        if i % 3 == 0:
            s = _bump(s, "orders", i % 6, 10 + i)
        if i == FAILOVER_STEP:
            s = replace(demo_snapshot(isolated_leader=True, taken_at=t), groups=s.groups)
        if i == 60:
            s = replace(s, groups=(GroupInfo("g1", "Stable", 2, (
                GroupPartition("orders", 0, 5, 50), GroupPartition("orders", 1, 7, None))),))
        if i == 80:
            extra = replace(s.topics[0], name="late", partitions=tuple(
                replace(p, topic="late") for p in s.topics[0].partitions))
            s = replace(s, topics=(*s.topics, extra))
        if i == 90:
            s = replace(s, findings=(*s.findings, ClusterFinding("x", "a warning", "late", 2)),
                        limitations=("no groups",), admin_state="failing", admin_error="boom")
        if i == 100:
            s = replace(s, zookeeper_state="suspended", topics=s.topics[1:])
        out.append((s, diff(prev, s)))
        prev = s
    return out


def fault(i: int) -> dict[str, object]:
    return {"ts": T0 + i * STEP_MS + 1, "action": "kill", "node": "kafka3", "detail": f"#{i}"}


def lab_json(state: str) -> dict[str, object]:
    return {"lab_id": "story", "nodes": [{"name": "kafka3", "state": state}]}


def load_json(sent: int) -> dict[str, object]:
    return {"run_dir": "/tmp/story-run", "running": True, "settings": {"topic": "test1"},
            "stats": {"sent": sent, "acked": sent}, "consumers": None}


def record_story(root: Path, steps: int = 120, keyframe_s: float = 10.0) -> list[
        tuple[ClusterSnapshot, list[Event]]]:
    """Record the story into root (closed: complete); the lab journal has a kill at the
    failover and a state change around it."""
    recorder = Recorder(root, keyframe_s=keyframe_s, flush_s=0.05, title="story")
    snaps = story(steps)
    for i, (s, events) in enumerate(snaps):
        recorder.snapshot(s, events)
        if i in (FAILOVER_STEP - 1, FAILOVER_STEP + 5):
            killed = i >= FAILOVER_STEP
            recorder.lab(lab_json("killed" if killed else "running"),
                         [fault(i)] if not killed else [], load_json(i),
                         t=s.taken_at + 1)
        if i == 95:
            recorder.problems(["AdminClient: boom"], t=s.taken_at + 2)
    recorder.close()
    assert recorder.error is None, recorder.error
    return snaps
