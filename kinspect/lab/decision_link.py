"""A lab's decisions (who leads, the ISR, the controller), from its ZooKeeper or its KRaft
brokers: see clients/decisions.py for why KRaft's come from the highest leader epoch."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kinspect.clients.decisions import Decisions, KRaftDecisions, ZooKeeperDecisions
from kinspect.clients.zookeeper import zk_session
from kinspect.lab.state import LabState


@contextmanager
def lab_decisions(state: LabState, timeout_s: float = 30.0) -> Iterator[Decisions]:
    """Open for the block: a ZooKeeper session, or links to every KRaft broker."""
    if state.kraft:
        brokers = {b.broker_id: b.address for b in state.brokers if b.broker_id is not None}
        kraft = KRaftDecisions(brokers, state.controller_addresses)
        try:
            yield kraft
        finally:
            kraft.close()
        return
    assert state.zookeeper is not None
    with zk_session(state.zookeeper.address, timeout_s, session_s=10.0) as zk:
        yield ZooKeeperDecisions(zk)

