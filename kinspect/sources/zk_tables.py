"""What ZooKeeper holds about a Kafka cluster, updated one znode read at a time (pure).

The ZooKeeper source reads znodes in bulk at start and after a reconnect, and one at a time
when a watch fires; both paths feed the same methods here, so they cannot disagree. Each method
says whether the view changed and what to read next (ids, topics, partitions newly seen), and
the `watched` sets say which znodes are being followed. Not thread-safe: the source locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kinspect.clients.zk_bulk import Znode
from kinspect.clients.zookeeper import json_object, parse_partition_state
from kinspect.model import PartitionStateZ, Reassignment, ZkView
from kinspect.model.views import SessionState

Key = tuple[str, int]


def broker_address(info: dict[str, object]) -> str:
    """host:port of a broker registration: its first endpoint, else the legacy host/port."""
    endpoints = info.get("endpoints") or []
    if isinstance(endpoints, list) and endpoints:
        return str(endpoints[0]).split("://", 1)[-1]
    return f"{info.get('host')}:{info.get('port')}"


def state_path(key: Key) -> str:
    return f"/brokers/topics/{key[0]}/partitions/{key[1]}/state"


@dataclass
class ZkTables:
    controller: int | None = None
    controller_epoch: int | None = None
    brokers: dict[int, str] = field(default_factory=dict)
    assignments: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    states: dict[Key, PartitionStateZ] = field(default_factory=dict)
    moving: dict[str, dict[int, Reassignment]] = field(default_factory=dict)
    watched_brokers: set[int] = field(default_factory=set)
    watched_topics: set[str] = field(default_factory=set)
    watched_partitions: set[Key] = field(default_factory=set)

    def view(self, session: SessionState) -> ZkView:
        return ZkView(session_state=session, controller_id=self.controller,
                      controller_epoch=self.controller_epoch, brokers=dict(self.brokers),
                      topics={t: dict(p) for t, p in self.assignments.items()},
                      partitions=dict(self.states),
                      reassignments={(t, p): r for t, parts in self.moving.items()
                                     for p, r in parts.items()})

    def controller_read(self, node: Znode | None) -> bool:
        info = json_object(node.data if node else None)
        new = int(info["brokerid"]) if info and "brokerid" in info else None
        changed, self.controller = new != self.controller, new
        return changed

    def epoch_read(self, node: Znode | None) -> bool:
        raw = node.data.strip() if node else b""
        new = int(raw) if raw.isdigit() else None
        changed, self.controller_epoch = new != self.controller_epoch, new
        return changed

    def broker_ids_read(self, children: list[str]) -> tuple[bool, list[int]]:
        """(changed, ids newly seen: read and follow them)."""
        ids = {int(c) for c in children if c.isdigit()}
        gone = set(self.brokers) - ids
        for broker in gone:
            del self.brokers[broker]
        new = sorted(ids - self.watched_brokers)
        self.watched_brokers |= set(new)
        return bool(gone), new

    def broker_read(self, broker: int, node: Znode | None) -> tuple[bool, bool]:
        """(changed, keep following it): a gone registration is followed again only when its
        id reappears under /brokers/ids."""
        info = json_object(node.data if node else None)
        if info is None:
            self.watched_brokers.discard(broker)
            return self.brokers.pop(broker, None) is not None, False
        address = broker_address(info)
        changed = self.brokers.get(broker) != address
        self.brokers[broker] = address
        return changed, True

    def topics_read(self, children: list[str]) -> tuple[bool, list[str]]:
        """(changed, topics newly seen: read and follow their assignment)."""
        gone = set(self.assignments) - set(children)
        for topic in gone:
            del self.assignments[topic]
        if gone:
            for key in [k for k in self.states if k[0] in gone]:
                del self.states[key]
        new = sorted(set(children) - self.watched_topics)
        self.watched_topics |= set(new)
        return bool(gone), new

    def assignment_read(self, topic: str, node: Znode | None) -> tuple[bool, bool, list[Key]]:
        """(changed, keep following it, partitions newly seen: read and follow their state)."""
        info = json_object(node.data if node else None)
        if info is None:
            self.watched_topics.discard(topic)
            self.moving.pop(topic, None)
            return self.assignments.pop(topic, None) is not None, False, []
        partitions = {int(p): tuple(int(r) for r in replicas)
                      for p, replicas in (info.get("partitions") or {}).items()}
        moving = _moving(info, partitions)
        changed = self.assignments.get(topic) != partitions or self.moving.get(topic, {}) != moving
        self.assignments[topic] = partitions
        self.moving[topic] = moving
        new = sorted({(topic, p) for p in partitions} - self.watched_partitions)
        self.watched_partitions |= set(new)
        return changed, True, new

    def state_read(self, key: Key, node: Znode | None) -> tuple[bool, bool]:
        """(changed, keep following it): a missing state is awaited while its topic exists."""
        state = parse_partition_state(node.data if node else None,
                                      node.mtime_ms if node else None)
        if state is None:
            changed = self.states.pop(key, None) is not None
            if key[0] not in self.assignments:
                self.watched_partitions.discard(key)
                return changed, False
            return changed, True
        changed = self.states.get(key) != state
        self.states[key] = state
        return changed, True


def _moving(info: dict[str, object], partitions: dict[int, tuple[int, ...]]
            ) -> dict[int, Reassignment]:
    """The partitions a reassignment is moving (KIP-455: the topic znode's adding_replicas and
    removing_replicas, written by the controller for as long as the move lasts)."""
    def ids(key: str) -> dict[int, tuple[int, ...]]:
        raw = info.get(key)
        return ({int(p): tuple(int(r) for r in rs) for p, rs in raw.items()}
                if isinstance(raw, dict) else {})

    adding, removing = ids("adding_replicas"), ids("removing_replicas")
    return {p: Reassignment(partitions.get(p, ()), adding.get(p, ()), removing.get(p, ()))
            for p in sorted(set(adding) | set(removing)) if adding.get(p) or removing.get(p)}
