"""The parts of the sources that need no network: decoding a broker's answer, merging claims."""

from __future__ import annotations

import io

import pytest
from kafka.protocol.metadata import MetadataResponse

from kinspect.clients.wire import BrokerClaim, claims_from, connection_settings
from kinspect.errors import KinspectError
from kinspect.model import PartitionStateZ
from kinspect.sources.claims import merge_claims
from tests.unit.model_fixtures import T0, broker_view, zk_view


def test_claims_from_a_metadata_answer() -> None:
    """What a broker's MetadataResponse v1 says, decoded by kafka-python, as claims."""
    response = MetadataResponse[1](  # kept: kafka-python binds encode() weakly to it
        brokers=[(1, "198.18.1.11", 9092, None), (2, "198.18.1.12", 9092, "r")], controller_id=2,
        topics=[(0, "test1", False, [(0, 0, 2, [2, 1], [2])])])
    wire = response.encode()
    answer = claims_from(MetadataResponse[1].decode(io.BytesIO(wire)))
    assert answer.controller_id == 2
    assert answer.brokers == {1: "198.18.1.11:9092", 2: "198.18.1.12:9092"}
    assert answer.partitions == {("test1", 0): BrokerClaim(2, (2, 1), (2,))}


def test_librdkafka_settings_map_to_the_probe() -> None:
    settings = connection_settings({"bootstrap.servers": "x:1", "security.protocol": "sasl_ssl",
                                    "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
                                    "sasl.password": "p", "ssl.ca.location": "/ca.pem",
                                    "ssl.endpoint.identification.algorithm": "none"})
    assert settings == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                        "sasl_plain_username": "u", "sasl_plain_password": "p",
                        "ssl_cafile": "/ca.pem", "ssl_check_hostname": False}
    with pytest.raises(KinspectError, match="GSSAPI is not supported"):
        connection_settings({"sasl.mechanism": "GSSAPI"})


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
