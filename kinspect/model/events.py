"""Successive snapshots diffed into typed events (pure; timestamps come from the snapshots)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kinspect.model.snapshot import ClusterSnapshot, PartitionInfo


@dataclass(frozen=True)
class Event:
    ts: int
    kind: str
    detail: str
    partition: str | None = None
    broker: int | None = None
    severity: str = "info"  # info | warn | error
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"ts": self.ts, "kind": self.kind, "partition": self.partition,
                "broker": self.broker, "severity": self.severity, "detail": self.detail,
                **self.fields}


def _partition_events(ts: int, old: PartitionInfo, new: PartitionInfo) -> list[Event]:
    out: list[Event] = []
    name = new.name
    if old.leader != new.leader or old.leader_epoch != new.leader_epoch:
        if new.leader is None:
            out.append(Event(ts, "partition_offline", f"{name} has no leader (was {old.leader})",
                             name, old.leader, "error", {"old": old.leader}))
        elif old.leader is None:
            out.append(Event(ts, "partition_online", f"{name} online: leader {new.leader} "
                             f"(epoch {new.leader_epoch})", name, new.leader, "info",
                             {"new": new.leader, "epoch": new.leader_epoch}))
        if new.leader is not None and old.leader != new.leader:
            was = old.leader if old.leader is not None else "none"
            out.append(Event(ts, "leader_changed",
                             f"leader {was} → {new.leader} (epoch {new.leader_epoch})", name, new.leader,
                             "warn", {"old": old.leader, "new": new.leader,
                                      "epoch": new.leader_epoch}))
    for replica in sorted(set(old.isr) - set(new.isr)):
        out.append(Event(ts, "isr_shrank", f"{replica} left the ISR → {list(new.isr)}", name,
                         replica, "warn", {"replica": replica, "isr": list(new.isr)}))
    for replica in sorted(set(new.isr) - set(old.isr)):
        out.append(Event(ts, "isr_expanded", f"{replica} rejoined the ISR → {list(new.isr)}",
                         name, replica, "info", {"replica": replica, "isr": list(new.isr)}))
    if new.views_disagree and not old.views_disagree:
        out.append(Event(ts, "views_disagree_started", f"brokers say leader {new.broker_leader}, "
                         f"ZooKeeper says {new.leader}", name, new.broker_leader, "error",
                         {"zk_leader": new.leader, "broker_leader": new.broker_leader}))
    elif old.views_disagree and not new.views_disagree:
        out.append(Event(ts, "views_disagree_stopped", "brokers agree with ZooKeeper again",
                         name, new.leader, "info", {}))
    return out


def diff(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[Event]:
    if old is None:
        return []
    ts = new.taken_at
    out: list[Event] = []
    if old.zookeeper_state != new.zookeeper_state and new.zookeeper_state is not None:
        severity = "info" if new.zookeeper_state == "connected" else "error"
        out.append(Event(ts, "zk_session", f"ZooKeeper session {new.zookeeper_state}",
                         severity=severity, fields={"state": new.zookeeper_state}))
    if (old.controller.id, old.controller.epoch) != (new.controller.id, new.controller.epoch) \
            and (new.controller.id is not None or old.controller.id is not None):
        out.append(Event(ts, "controller_changed", f"controller {old.controller.id} → "
                         f"{new.controller.id} (epoch {new.controller.epoch})",
                         broker=new.controller.id, severity="warn",
                         fields={"old": old.controller.id, "new": new.controller.id,
                                 "epoch": new.controller.epoch}))
    was = {b.id for b in old.brokers if b.registered}
    now = {b.id for b in new.brokers if b.registered}
    for broker in sorted(now - was):
        out.append(Event(ts, "broker_registered", f"broker {broker} registered", broker=broker))
    for broker in sorted(was - now):
        out.append(Event(ts, "broker_gone", f"broker {broker} is gone from ZooKeeper",
                         broker=broker, severity="error"))
    before = {(p.topic, p.partition): p for p in old.partitions()}
    for p in new.partitions():
        previous = before.get((p.topic, p.partition))
        if previous is not None and previous != p:
            out.extend(_partition_events(ts, previous, p))
    return out


class HwStallTracker:
    """Notices a partition with a leader whose high watermark stopped advancing.

    It fires once per stall: when the watermark advanced before, and has not moved for
    `stall_ms` while the partition had a leader. Time comes from the snapshots, never a clock.
    """

    def __init__(self, stall_ms: int = 5000) -> None:
        self.stall_ms = stall_ms
        self._last: dict[str, tuple[int, int, bool]] = {}  # hw, since, advanced-before
        self._reported: set[str] = set()

    def observe(self, snapshot: ClusterSnapshot) -> list[Event]:
        out = []
        ts = snapshot.taken_at
        for p in snapshot.partitions():
            if p.high_watermark is None:
                continue
            name = p.name
            hw, since, moved = self._last.get(name, (p.high_watermark, ts, False))
            if p.high_watermark != hw:
                self._last[name] = (p.high_watermark, ts, True)
                self._reported.discard(name)
                continue
            self._last[name] = (hw, since, moved)
            if moved and p.leader is not None and ts - since >= self.stall_ms \
                    and name not in self._reported:
                self._reported.add(name)
                out.append(Event(ts, "hw_stalled", f"high watermark stuck at {hw} for "
                                 f"{(ts - since) / 1000:.1f} s", name, p.leader, "warn",
                                 {"high_watermark": hw, "since": since}))
        return out
