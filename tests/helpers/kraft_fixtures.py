"""A KRaft cluster as the sources would hand it over: claims, a quorum answer, a broker view."""

from __future__ import annotations

from kinspect.clients.wire import BrokerClaim
from kinspect.model import (
    BrokerView,
    ClusterSnapshot,
    ConfigValue,
    ControllerAnswer,
    Offsets,
    PartitionMeta,
    QuorumAnswer,
    QuorumReplica,
    build_snapshot,
)
from kinspect.sources.admin import AdminSource
from kinspect.sources.claims import merge_claims
from tests.helpers.model_fixtures import T0

KEY = ("test1", 0)


BROKERS = {1: "198.18.1.11:9092", 2: "198.18.1.12:9092", 3: "198.18.1.13:9092"}


CLAIMS = {1: {KEY: BrokerClaim(1, (1, 2, 3), (1, 2, 3), 4)},
          2: {KEY: BrokerClaim(2, (1, 2, 3), (2, 3), 5)},
          3: {KEY: BrokerClaim(2, (1, 2, 3), (1, 2, 3), 5)}}


def quorum(leader: int | None = 101, epoch: int = 7) -> QuorumAnswer:
    return QuorumAnswer(leader, epoch, 1234,
                        (QuorumReplica(101, 1240, T0, T0), QuorumReplica(102, 1228, T0 - 30, T0 - 500),
                         QuorumReplica(103, -1, None, None)),
                        (QuorumReplica(2, 1237, T0, T0), QuorumReplica(1, 1240, T0, T0)),
                        "198.18.1.11:9092")


def admin() -> AdminSource:
    """An AdminSource that never polls: only its bookkeeping of decisions is used."""
    return AdminSource("127.0.0.1:1", lambda: None, watch_groups=False)


def kraft_view(seen_ms: int = T0 - 10_000, listed: tuple[int, ...] = (1, 2, 3),
               answer: QuorumAnswer | None = None, error: str | None = None,
               controllers: tuple[ControllerAnswer, ...] = ()) -> BrokerView:
    source = admin()
    decided = source._decisions(CLAIMS, seen_ms)
    view = BrokerView(
        "ok", None, {b: BROKERS[b] for b in listed}, 3,  # Metadata names broker 3 "controller"
        {KEY: PartitionMeta(1, (1, 2, 3), (1, 2, 3))},  # librdkafka asked the stale broker 1
        {"test1": {"min.insync.replicas": ConfigValue("2", "static_broker")}},
        {KEY: Offsets(500, 0, 5)}, polled_at_ms=T0, mode="kraft",
        quorum=answer if answer is not None or error else quorum(), quorum_error=error,
        controllers=controllers, decided=decided)
    return merge_claims(view, CLAIMS, None)


def kraft_snapshot(view: BrokerView | None = None, taken_at: int = T0) -> ClusterSnapshot:
    return build_snapshot(None, view or kraft_view(), [1, 2, 3], taken_at)


