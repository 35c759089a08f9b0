"""Folding each broker's own claims into the broker view (pure; no I/O).

A broker that claims to lead a partition accepts writes for it, whatever the controller
decided. So when brokers disagree, the claim that contradicts ZooKeeper is the one to show:
that is the zombie leader, still acknowledging writes it will later truncate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kinspect.clients.wire import BrokerClaim
from kinspect.model import BrokerView, PartitionMeta, ZkView

Claims = Mapping[int, Mapping[tuple[str, int], BrokerClaim]]


def self_claims(claims: Claims) -> dict[tuple[str, int], dict[int, BrokerClaim]]:
    """Per partition, the brokers that say they lead it themselves."""
    leaders: dict[tuple[str, int], dict[int, BrokerClaim]] = {}
    for broker, partitions in claims.items():
        for key, claim in partitions.items():
            if claim.leader == broker:
                leaders.setdefault(key, {})[broker] = claim
    return leaders


def merge_claims(view: BrokerView, claims: Claims, zk: ZkView | None) -> BrokerView:
    """The broker view with each partition's leader taken from the brokers' self-claims."""
    if not claims:
        return view
    partitions = dict(view.partitions)
    for key, claimants in self_claims(claims).items():
        decided = zk.partitions[key].leader if zk and key in zk.partitions else None
        rogue = sorted(b for b in claimants if b != decided)
        chosen = rogue[0] if rogue else next(iter(claimants))
        claim = claimants[chosen]
        base = partitions.get(key)
        replicas = base.replicas if base else claim.replicas
        partitions[key] = PartitionMeta(leader=chosen, replicas=replicas, isr=claim.isr)
    return replace(view, partitions=partitions)
