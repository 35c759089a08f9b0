"""Who leads what, as decided: ZooKeeper's znodes, or in KRaft the newest word the brokers have.

Scenarios, the lab's waits and the post-mortem's "do the brokers agree yet" ask the same three
questions of either mode: a partition's leader and ISR, a topic's replicas, the controller. In
ZooKeeper mode the controller writes its decisions to znodes. In KRaft they live in the
controller quorum's metadata log, which only brokers and controllers read; each broker serves
its copy, and a broker cut off from the quorum keeps serving an old one. So a KRaft decision is
the claim with the highest leader epoch among the brokers' own answers: the newest any of them
has heard, never the word of whichever broker a client happened to ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kinspect.clients import zookeeper as znodes
from kinspect.clients.quorum import NO_ANSWER, describe_quorum
from kinspect.clients.wire import BrokerClaim, BrokerLink, ask_claims, connection_settings
from kinspect.model.views import PartitionStateZ

if TYPE_CHECKING:  # only ZooKeeper mode makes a client (clients/zookeeper.py)
    from kazoo.client import KazooClient

Key = tuple[str, int]


def shared_answers(claims: Mapping[int, Mapping[Key, BrokerClaim]]
                   ) -> list[tuple[Mapping[Key, BrokerClaim], list[int]]]:
    """Each distinct answer with the brokers that gave it. Brokers that answered the same bytes
    share one decoded dict (clients/wire.py), so a healthy cluster of nine brokers is read
    once, not nine times (at 100,000 partitions, 100,000 claims instead of 900,000)."""
    holders: dict[int, tuple[Mapping[Key, BrokerClaim], list[int]]] = {}
    for broker, partitions in claims.items():
        holders.setdefault(id(partitions), (partitions, []))[1].append(broker)
    return list(holders.values())


def newest_claims(claims: Mapping[int, Mapping[Key, BrokerClaim]]) -> dict[Key, BrokerClaim]:
    """Per partition, the claim with the highest leader epoch any broker holds: the newest
    decision of the KRaft controller that reached a broker. At equal epochs (an ISR change
    keeps the epoch) the leader's own word, else the lowest broker id's. Claims
    without an epoch (Metadata before v7) decide nothing. Both the observer and the
    scenarios' KRaftDecisions judge by this one rule."""
    # Each distinct answer is read once, a claim ranked as the best of the brokers that hold it.
    answers = shared_answers(claims)
    if len(answers) == 1:
        only = answers[0][0]
        return {key: claim for key, claim in only.items() if claim.leader_epoch >= 0}
    best: dict[Key, tuple[tuple[int, bool, int], BrokerClaim]] = {}
    for partitions, brokers in answers:
        lowest = -min(brokers)
        for key, claim in partitions.items():
            if claim.leader_epoch < 0:
                continue
            leader = claim.leader
            own = leader is not None and leader in brokers
            rank = (claim.leader_epoch, own, -leader if leader is not None and own else lowest)
            if key not in best or rank > best[key][0]:
                best[key] = (rank, claim)
    return {key: claim for key, (_rank, claim) in best.items()}


class Decisions(Protocol):
    """The controller's decisions, whichever mode keeps them."""

    def partition(self, topic: str, partition: int) -> PartitionStateZ | None: ...

    def leaders(self, topic: str) -> dict[int, int | None]: ...

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]: ...

    def controller(self) -> int | None: ...


class ZooKeeperDecisions:
    """Read from the znodes the controller writes."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk

    def partition(self, topic: str, partition: int) -> PartitionStateZ | None:
        return znodes.read_partition_state(self.zk, topic, partition)

    def leaders(self, topic: str) -> dict[int, int | None]:
        return znodes.read_leaders(self.zk, topic)

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        return znodes.read_replicas(self.zk, topic)

    def controller(self) -> int | None:
        return znodes.read_controller(self.zk)


class KRaftDecisions:
    """Every broker asked for its own metadata; per partition the highest leader epoch wins.
    The controller is the quorum's leader (DescribeQuorum), not DescribeCluster's answer,
    which in KRaft names a random broker."""

    def __init__(self, brokers: Mapping[int, str], controllers: Mapping[int, str],
                 config: Mapping[str, Any] | None = None, timeout_s: float = 2.0) -> None:
        settings = connection_settings(config)
        self.links = {b: BrokerLink(address, settings, b) for b, address in brokers.items()}
        self.quorum = [*controllers.values(), *brokers.values()]
        self.config, self.timeout_s = dict(config or {}), timeout_s

    def newest(self) -> dict[Key, BrokerClaim]:
        """Each partition's newest claim over every broker that answers (newest_claims)."""
        claims: dict[int, dict[Key, BrokerClaim]] = {}
        for broker, link in self.links.items():
            try:
                claims[broker] = ask_claims(link, self.timeout_s).partitions
            except NO_ANSWER:
                continue  # down, frozen or cut off: the others answer
        return newest_claims(claims)

    def partition(self, topic: str, partition: int) -> PartitionStateZ | None:
        claim = self.newest().get((topic, partition))
        if claim is None:
            return None
        return PartitionStateZ(leader=claim.leader, leader_epoch=claim.leader_epoch,
                               isr=claim.isr, controller_epoch=-1)

    def leaders(self, topic: str) -> dict[int, int | None]:
        return {p: c.leader for (t, p), c in self.newest().items() if t == topic}

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        return {p: c.replicas for (t, p), c in self.newest().items() if t == topic}

    def controller(self) -> int | None:
        answer = describe_quorum(self.quorum, self.config, self.timeout_s)
        return answer.leader_id if answer is not None else None

    def close(self) -> None:
        for link in self.links.values():
            link.close()
