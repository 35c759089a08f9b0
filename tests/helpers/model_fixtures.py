"""Builders for realistic raw views and snapshots, shared by model and TUI tests."""

from __future__ import annotations

from kinspect.model import (
    BrokerView,
    ClusterSnapshot,
    ConfigValue,
    Offsets,
    PartitionMeta,
    PartitionStateZ,
    ZkView,
    build_snapshot,
)

BROKERS = {1: "198.18.1.11:9092", 2: "198.18.1.12:9092", 3: "198.18.1.13:9092"}
T0 = 1_795_000_000_000


def zk_view(states: dict[tuple[str, int], PartitionStateZ] | None = None,
            replicas: dict[str, dict[int, tuple[int, ...]]] | None = None,
            brokers: dict[int, str] | None = None, controller: int | None = 1,
            epoch: int = 3, session: str = "connected") -> ZkView:
    replicas = replicas or {"test1": {0: (3, 1, 2)}}
    if states is None:
        states = {(t, p): PartitionStateZ(r[0], 2, r, epoch, T0 - 10_000)
                  for t, parts in replicas.items() for p, r in parts.items()}
    return ZkView(session, controller, epoch, dict(BROKERS if brokers is None else brokers),
                  replicas, states)


def broker_view(zk: ZkView, min_isr: str = "2", hw: int = 100,
                leaders: dict[tuple[str, int], int] | None = None,
                polled_at: int = T0) -> BrokerView:
    partitions = {}
    for key, state in zk.partitions.items():
        leader = (leaders or {}).get(key, state.leader)
        partitions[key] = PartitionMeta(leader, zk.topics[key[0]][key[1]], state.isr)
    configs = {t: {"min.insync.replicas": ConfigValue(min_isr, "static_broker"),
                   "unclean.leader.election.enable": ConfigValue("false", "default")}
               for t in zk.topics}
    offsets = {k: Offsets(hw, 0, zk.partitions[k].leader_epoch) for k in partitions}
    return BrokerView("ok", None, dict(BROKERS), zk.controller_id, partitions, configs, offsets,
                      polled_at_ms=polled_at)


def demo_snapshot(isolated_leader: bool = False, taken_at: int = T0) -> ClusterSnapshot:
    """test1 (1 partition, RF 3), orders (6 partitions) and __consumer_offsets (RF 1, risky)."""
    replicas = {"test1": {0: (3, 1, 2)},
                "orders": {p: ((1, 2, 3), (2, 3, 1), (3, 1, 2))[p % 3] for p in range(6)},
                "__consumer_offsets": {0: (1,)}}
    zk = zk_view(replicas=replicas)
    leaders = None
    if isolated_leader:
        states = dict(zk.partitions)
        states[("test1", 0)] = PartitionStateZ(1, 3, (1, 2), 3, taken_at - 5000)
        states[("orders", 2)] = PartitionStateZ(1, 3, (1, 2), 3, taken_at - 5000)
        zk = zk_view(states=states, replicas=replicas, brokers={1: BROKERS[1], 2: BROKERS[2]},
                     controller=1, epoch=4)
        leaders = {("test1", 0): 3, ("orders", 2): 3}
    broker = broker_view(zk, leaders=leaders, polled_at=taken_at)
    return build_snapshot(zk, broker, [1, 2, 3], taken_at)
