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
from kinspect.model import BrokerView, PartitionDecision, PartitionMeta, ZkView

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
        state = zk.partitions.get(key)
        if state is None:
            return None
        return state.leader
    decision = view.decided.get(key)
    if decision is None:
        return None
    return decision.leader


def _chosen(key: Key, claimants: Mapping[int, BrokerClaim], view: BrokerView,
            zk: ZkView | None) -> int:
    """Of several brokers that each say they lead, one against the decision (the zombie)."""
    decided = _decided_leader(key, view, zk)
    against = sorted(b for b in claimants if b != decided)
    if against:
        return against[0]
    return next(iter(claimants))


def _replicas(base: PartitionMeta | None, decision: PartitionDecision | None,
              claim: BrokerClaim) -> tuple[int, ...]:
    """The replicas as the AdminClient said them, else the decision, else the claim."""
    if base is not None:
        return base.replicas
    if decision is not None:
        return decision.replicas
    return claim.replicas


def merge_claims(view: BrokerView, claims: Claims, zk: ZkView | None) -> BrokerView:
    """The broker view with each partition's leader taken from the brokers' self-claims: a
    claim against the decision (ZooKeeper's, or in KRaft the newest one) first. In KRaft a
    partition nobody self-claims against the decision shows the decision itself (the
    AdminClient's metadata comes from whichever broker, possibly one that has not heard it)."""
    if not claims:
        return view
    decided: Mapping[Key, PartitionDecision] = {}
    if zk is None:
        decided = view.decided
    partitions = dict(view.partitions)
    leaders = self_claims(claims)
    _take_self_claims(partitions, leaders, decided, view, zk)
    _take_decisions(partitions, leaders, decided, view.partitions)
    return replace(view, partitions=partitions)


def _take_self_claims(partitions: dict[Key, PartitionMeta],
                      leaders: Mapping[Key, Mapping[int, BrokerClaim]],
                      decided: Mapping[Key, PartitionDecision], view: BrokerView,
                      zk: ZkView | None) -> None:
    """Each self-claimed partition's leader and ISR, where they differ from the AdminClient's
    (a healthy cluster: all but a few are skipped, no copy made)."""
    told = view.partitions
    for key, claimants in leaders.items():
        if len(claimants) == 1:  # the usual case: the one that says it leads is shown
            ((chosen, claim),) = claimants.items()
        else:
            chosen = _chosen(key, claimants, view, zk)
            claim = claimants[chosen]
        base = told.get(key)
        if base is not None and base.leader == chosen and base.isr == claim.isr:
            continue  # the AdminClient saw it so too
        partitions[key] = PartitionMeta(chosen, _replicas(base, decided.get(key), claim),
                                        claim.isr)


def _take_decisions(partitions: dict[Key, PartitionMeta],
                    leaders: Mapping[Key, Mapping[int, BrokerClaim]],
                    decided: Mapping[Key, PartitionDecision],
                    told: Mapping[Key, PartitionMeta]) -> None:
    """KRaft: a partition nobody self-claims shows the decision where the AdminClient's
    metadata differs from it."""
    for key, decision in decided.items():
        if key in leaders:
            continue
        base = told.get(key)
        replicas = decision.replicas
        if base is not None:
            if base.leader == decision.leader and base.isr == decision.isr:
                continue
            replicas = base.replicas
        partitions[key] = PartitionMeta(decision.leader, replicas, decision.isr)
