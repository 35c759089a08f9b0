"""Successive snapshots diffed into typed events (pure; timestamps come from the snapshots)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kinspect.model.facts import Unknown
from kinspect.model.snapshot import ClusterSnapshot, PartitionInfo


class EventKind(StrEnum):
    """What changed between two snapshots; the values are what timelines and --jsonl carry."""

    PARTITION_OFFLINE = "partition_offline"
    PARTITION_ONLINE = "partition_online"
    LEADER_CHANGED = "leader_changed"
    ISR_SHRANK = "isr_shrank"
    ISR_EXPANDED = "isr_expanded"
    VIEWS_DISAGREE_STARTED = "views_disagree_started"
    VIEWS_DISAGREE_STOPPED = "views_disagree_stopped"
    ZK_SESSION = "zk_session"
    CONTROLLER_CHANGED = "controller_changed"
    BROKER_REGISTERED = "broker_registered"
    BROKER_GONE = "broker_gone"
    BROKER_FENCED = "broker_fenced"  # KRaft: gone from the cluster metadata
    BROKER_UNFENCED = "broker_unfenced"
    HW_STALLED = "hw_stalled"
    REASSIGNMENT_STARTED = "reassignment_started"
    REASSIGNMENT_DONE = "reassignment_done"


class Severity(StrEnum):
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


@dataclass(frozen=True)
class Event:
    ts: int
    kind: EventKind
    detail: str
    partition: str | None = None
    broker: int | None = None
    severity: Severity = Severity.INFO
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"ts": self.ts, "kind": self.kind, "partition": self.partition,
                "broker": self.broker, "severity": self.severity, "detail": self.detail,
                **self.fields}


def _partition_events(ts: int, old: PartitionInfo, new: PartitionInfo, kraft: bool = False
                      ) -> list[Event]:
    out: list[Event] = []
    name = new.name
    if old.leader != new.leader or old.leader_epoch != new.leader_epoch:
        if new.leader is None:
            out.append(Event(ts, EventKind.PARTITION_OFFLINE, f"{name} has no leader (was {old.leader})",
                             name, old.leader, Severity.ERROR, {"old": old.leader}))
        elif old.leader is None:
            out.append(Event(ts, EventKind.PARTITION_ONLINE, f"{name} online: leader {new.leader} "
                             f"(epoch {new.leader_epoch})", name, new.leader, Severity.INFO,
                             {"new": new.leader, "epoch": new.leader_epoch}))
        if new.leader is not None and old.leader != new.leader:
            was = old.leader if old.leader is not None else "none"
            out.append(Event(ts, EventKind.LEADER_CHANGED,
                             f"leader {was} → {new.leader} (epoch {new.leader_epoch})", name, new.leader,
                             Severity.WARN, {"old": old.leader, "new": new.leader,
                                      "epoch": new.leader_epoch}))
    for replica in sorted(set(old.isr) - set(new.isr)):
        out.append(Event(ts, EventKind.ISR_SHRANK, f"{replica} left the ISR → {list(new.isr)}", name,
                         replica, Severity.WARN, {"replica": replica, "isr": list(new.isr)}))
    for replica in sorted(set(new.isr) - set(old.isr)):
        out.append(Event(ts, EventKind.ISR_EXPANDED, f"{replica} rejoined the ISR → {list(new.isr)}",
                         name, replica, Severity.INFO, {"replica": replica, "isr": list(new.isr)}))
    out += _moves(ts, old, new)
    if new.views_disagree and not old.views_disagree:
        detail = (f"broker {new.broker_leader} still claims to lead; the newest decision is "
                  f"leader {new.leader} (epoch {new.leader_epoch})" if kraft else
                  f"brokers say leader {new.broker_leader}, ZooKeeper says {new.leader}")
        out.append(Event(ts, EventKind.VIEWS_DISAGREE_STARTED, detail, name, new.broker_leader,
                         Severity.ERROR,
                         {"zk_leader": new.leader, "broker_leader": new.broker_leader}))
    elif old.views_disagree and not new.views_disagree:
        detail = ("no broker claims to lead against the newest decision any more" if kraft
                  else "brokers agree with ZooKeeper again")
        out.append(Event(ts, EventKind.VIEWS_DISAGREE_STOPPED, detail, name, new.leader,
                         Severity.INFO, {}))
    return out


def _moves(ts: int, old: PartitionInfo, new: PartitionInfo) -> list[Event]:
    """A reassignment seen starting and ending (an unknown one is neither)."""
    name = new.name
    if new.moving and not old.moving and not isinstance(old.reassignment, Unknown):
        return [Event(ts, EventKind.REASSIGNMENT_STARTED, f"being moved: adding "
                      f"{list(new.adding)}, removing {list(new.removing)}", name, new.leader,
                      Severity.INFO, {"adding": list(new.adding), "removing": list(new.removing)})]
    if old.moving and new.reassignment is None:
        return [Event(ts, EventKind.REASSIGNMENT_DONE, f"moved: replicas {list(new.replicas)}",
                      name, new.leader, Severity.INFO, {"replicas": list(new.replicas)})]
    return []


def diff(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[Event]:
    if old is None:
        return []
    ts = new.taken_at
    out: list[Event] = []
    if old.zookeeper_state != new.zookeeper_state and new.zookeeper_state is not None:
        severity = Severity.INFO if new.zookeeper_state == "connected" else Severity.ERROR
        out.append(Event(ts, EventKind.ZK_SESSION, f"ZooKeeper session {new.zookeeper_state}",
                         severity=severity, fields={"state": new.zookeeper_state}))
    kraft = new.kraft and old.kraft  # a mode just learnt changes nothing in the cluster
    if (old.controller.id, old.controller.epoch) != (new.controller.id, new.controller.epoch) \
            and (new.controller.id is not None or old.controller.id is not None):
        detail = (f"quorum leader {_id(old.controller.id)} → {_id(new.controller.id)}"
                  if new.kraft else f"controller {old.controller.id} → {new.controller.id}")
        out.append(Event(ts, EventKind.CONTROLLER_CHANGED,
                         f"{detail} (epoch {new.controller.epoch})",
                         broker=new.controller.id, severity=Severity.WARN,
                         fields={"old": old.controller.id, "new": new.controller.id,
                                 "epoch": new.controller.epoch}))
    was = {b.id for b in old.brokers if b.registered}
    now = {b.id for b in new.brokers if b.registered}
    for broker in sorted(now - was):
        out.append(Event(ts, EventKind.BROKER_REGISTERED, f"broker {broker} registered", broker=broker))
    for broker in sorted(was - now):
        out.append(Event(ts, EventKind.BROKER_GONE, f"broker {broker} is gone from ZooKeeper",
                         broker=broker, severity=Severity.ERROR))
    if kraft:
        out.extend(_fencing_events(ts, old, new))
    before = {(p.topic, p.partition): p for p in old.partitions()}
    for p in new.partitions():
        previous = before.get((p.topic, p.partition))
        if previous is not None and previous != p:
            out.extend(_partition_events(ts, previous, p, new.kraft))
    return out


def _id(node: int | None) -> str:
    return "none" if node is None else str(node)


def _fencing_events(ts: int, old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """KRaft lists unfenced brokers only: one leaving the list was fenced (its heartbeats
    stopped reaching the controller, or it shut down), one coming back was unfenced. Only while
    the AdminClient answers: a failed poll keeps the last list."""
    if new.admin_state != "ok":
        return []
    was = {b.id for b in old.brokers if b.fenced is False}
    now = {b.id for b in new.brokers if b.fenced is False}
    out = [Event(ts, EventKind.BROKER_FENCED, f"broker {broker} fenced: gone from the cluster "
                 "metadata", broker=broker, severity=Severity.ERROR) for broker in sorted(was - now)]
    out += [Event(ts, EventKind.BROKER_UNFENCED, f"broker {broker} unfenced: back in the cluster "
                  "metadata", broker=broker) for broker in sorted(now - was)]
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
                out.append(Event(ts, EventKind.HW_STALLED, f"high watermark stuck at {hw} for "
                                 f"{(ts - since) / 1000:.1f} s", name, p.leader, Severity.WARN,
                                 {"high_watermark": hw, "since": since}))
        return out
