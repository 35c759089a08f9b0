"""The parts of the sources that need no network: the Metadata v1 parser and claim merging."""

from __future__ import annotations

import struct

from kinspect.clients.wire import BrokerClaim, parse_metadata_v1
from kinspect.model import PartitionStateZ
from kinspect.sources.claims import merge_claims
from tests.unit.model_fixtures import T0, broker_view, zk_view


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text)) + text.encode()


def _ints(values: list[int]) -> bytes:
    return struct.pack(f">i{len(values)}i", len(values), *values)


def test_parse_metadata_v1() -> None:
    body = struct.pack(">i", 2)
    body += struct.pack(">i", 1) + _string("198.18.1.11") + struct.pack(">i", 9092) + _string(None)
    body += struct.pack(">i", 2) + _string("198.18.1.12") + struct.pack(">i", 9092) + _string("r")
    body += struct.pack(">i", 2)  # controller
    body += struct.pack(">i", 1) + struct.pack(">h", 0) + _string("test1") + struct.pack(">b", 0)
    body += struct.pack(">i", 1) + struct.pack(">hii", 0, 0, 2) + _ints([2, 1]) + _ints([2])
    answer = parse_metadata_v1(body)
    assert answer.controller_id == 2
    assert answer.brokers == {1: "198.18.1.11:9092", 2: "198.18.1.12:9092"}
    assert answer.partitions == {("test1", 0): BrokerClaim(2, (2, 1), (2,))}


def test_rogue_self_claim_wins_the_broker_view() -> None:
    zk = zk_view(states={("test1", 0): PartitionStateZ(1, 3, (1, 2), 3, T0 - 5000)})
    view = broker_view(zk)
    claims = {1: {("test1", 0): BrokerClaim(1, (3, 1, 2), (1, 2))},
              3: {("test1", 0): BrokerClaim(3, (3, 1, 2), (3,))}}
    merged = merge_claims(view, claims, zk)
    assert merged.partitions[("test1", 0)].leader == 3
    agreeing = merge_claims(view, {1: claims[1]}, zk)
    assert agreeing.partitions[("test1", 0)].leader == 1
    assert merge_claims(view, {}, zk) is view
