"""Folding each broker's own claims into the broker view (pure; no I/O).

A broker that claims to lead a partition accepts writes for it, whatever the controller
decided. So when brokers disagree, the claim that contradicts the decision is the one to show:
that is the zombie leader, still acknowledging writes it will later truncate. The decision is
ZooKeeper's when it is watched; in KRaft nothing outside the quorum holds it, and the newest
decision any broker has heard of (the highest leader epoch among their own metadata) stands in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kinspect.clients.decisions import newest_claims, shared_answers
from kinspect.clients.wire import BrokerClaim
from kinspect.model import BrokerView, PartitionMeta, ZkView

Key = tuple[str, int]
Claims = Mapping[int, Mapping[Key, BrokerClaim]]
__all__ = ["merge_claims", "newest_claims", "self_claims"]


def self_claims(claims: Claims) -> dict[Key, dict[int, BrokerClaim]]:
    """Per partition, the brokers that say they lead it themselves (each distinct answer read
    once: `shared_answers`)."""
    leaders: dict[Key, dict[int, BrokerClaim]] = {}
    for partitions, brokers in shared_answers(claims):
        for key, claim in partitions.items():
            leader = claim.leader
            if leader is not None and leader in brokers:
                found = leaders.get(key)
                if found is None:
                    leaders[key] = {leader: claim}
                else:
                    found[leader] = claim
    return leaders


def _decided_leader(key: Key, view: BrokerView, zk: ZkView | None) -> int | None:
    if zk is not None:
        return zk.partitions[key].leader if key in zk.partitions else None
    decision = view.decided.get(key)
    return decision.leader if decision is not None else None


def merge_claims(view: BrokerView, claims: Claims, zk: ZkView | None) -> BrokerView:
    """The broker view with each partition's leader taken from the brokers' self-claims: a
    claim against the decision (ZooKeeper's, or in KRaft the newest one) first. In KRaft a
    partition nobody self-claims against the decision shows the decision itself (the
    AdminClient's metadata comes from whichever broker, possibly one that has not heard it)."""
    if not claims:
        return view
    told, decided = view.partitions, view.decided if zk is None else {}
    partitions = dict(told)
    leaders = self_claims(claims)
    for key, claimants in leaders.items():
        if len(claimants) == 1:  # the usual case: the one that says it leads is shown
            ((chosen, claim),) = claimants.items()
        else:
            against = sorted(b for b in claimants if b != _decided_leader(key, view, zk))
            chosen = against[0] if against else next(iter(claimants))
            claim = claimants[chosen]
        base = told.get(key)
        if base is not None and base.leader == chosen and base.isr == claim.isr:
            continue  # the AdminClient saw it so too (a healthy cluster: all but a few)
        decision = decided.get(key)
        replicas = base.replicas if base else decision.replicas if decision else claim.replicas
        partitions[key] = PartitionMeta(chosen, replicas, claim.isr)
    for key, decision in decided.items():
        if key not in leaders:
            base = told.get(key)
            if base is not None and base.leader == decision.leader and base.isr == decision.isr:
                continue
            partitions[key] = PartitionMeta(decision.leader,
                                            base.replicas if base else decision.replicas,
                                            decision.isr)
    return replace(view, partitions=partitions)
