"""The secure lab's pure parts: the certificate plan and its certificates, the listener and
authorizer settings a broker gets, parsing --allow, and the one-line TLS messages."""

from __future__ import annotations

import ipaddress
import json
import stat
import time
from pathlib import Path

import pytest
from cryptography import x509
from kafka.errors import KafkaError as KafkaPythonError

from kinspect.clients.kafka import (
    AuthWatch,
    failed_address,
    is_auth_message,
    is_tls_message,
    protocol_message,
    tls_reason,
)
from kinspect.clients.tokens import LibrdkafkaTokens
from kinspect.errors import KinspectError
from kinspect.lab import authorizer, oauth, tls
from kinspect.lab.authorizer import Grant, parse_grant
from kinspect.lab.backend import UpOptions
from kinspect.lab.nodes import render_broker, secure_listeners
from kinspect.lab.state import LabState, NodeRecord
from kinspect.procs import read_process


def nodes() -> list[NodeRecord]:
    return [NodeRecord("zk1", "zookeeper", "198.18.1.10", 2181),
            NodeRecord("kafka1", "broker", "198.18.1.11", 9092, broker_id=1),
            NodeRecord("kafka2", "broker", "198.18.1.12", 9092, broker_id=2)]


def state(tmp_path: Path, **extra: object) -> LabState:
    (tmp_path / "sasl-password").write_text("pw\n")
    return LabState(lab_id="x", backend="process", preset="demo", network="netns",
                    kafka_version="3.9.2", broker_config={}, overrides={}, nodes=nodes(),
                    created_at=0, extra={"sasl": {"password_file": str(tmp_path / "sasl-password")},
                                         **extra})


def test_one_certificate_per_broker_naming_its_address_and_name() -> None:
    plan = tls.certificate_plan(nodes())
    assert plan == [tls.CertRequest("kafka1", ("198.18.1.11",), ("kafka1",)),
                    tls.CertRequest("kafka2", ("198.18.1.12",), ("kafka2",))]


def test_the_plan_makes_a_private_ca_and_certificates_it_signed(tmp_path: Path) -> None:
    info = tls.plan(tmp_path, nodes())
    folder = Path(info["dir"])
    assert stat.S_IMODE((folder / "ca-key.pem").stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / "kafka1.pem").stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    text = (folder / "kafka1.pem").read_bytes()
    assert text.startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS#8, as Kafka's PEM store reads
    cert = x509.load_pem_x509_certificate(text[text.index(b"-----BEGIN CERTIFICATE"):])
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("198.18.1.11")]
    assert names.get_values_for_type(x509.DNSName) == ["kafka1"]
    assert not (folder / "zk1.pem").exists()


def test_a_tls_broker_listens_four_ways_and_talks_plaintext_to_its_peers(tmp_path: Path) -> None:
    lab = state(tmp_path, tls={"dir": str(tmp_path / "tls"), "ca": str(tmp_path / "tls/ca.pem")},
                authorizer=authorizer.plan(tmp_path, "zookeeper"))
    settings = secure_listeners(lab.nodes[1], lab, Path("/kinspect/conf/tls"))
    assert settings["listeners"] == ("PLAINTEXT://198.18.1.11:9092,SASL_PLAINTEXT://198.18.1.11:"
                                     "10092,SSL://198.18.1.11:11092,SASL_SSL://198.18.1.11:12092")
    assert settings["inter.broker.listener.name"] == "PLAINTEXT"
    assert settings["ssl.keystore.location"] == "/kinspect/conf/tls/kafka1.pem"
    assert settings["ssl.truststore.type"] == settings["ssl.keystore.type"] == "PEM"
    assert "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config" in settings
    assert 'user_kinspect="pw"' in settings["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    lines = render_broker(lab.nodes[1], lab, tmp_path).splitlines()
    assert "authorizer.class.name=kafka.security.authorizer.AclAuthorizer" in lines
    assert "allow.everyone.if.no.acl.found=false" in lines
    assert "super.users=User:ANONYMOUS;User:kinspect" in lines


def test_a_plaintext_lab_renders_as_before(tmp_path: Path) -> None:
    lab = state(tmp_path)
    lab.extra.clear()
    assert secure_listeners(lab.nodes[1], lab) == {}
    assert authorizer.broker_settings(lab) == {}


def test_tls_implies_scram_and_the_authorizer_needs_sasl() -> None:
    assert UpOptions(tls=True).sasl_mechanism == "scram-sha-256"
    assert UpOptions(tls=True, sasl="plain").sasl_mechanism == "plain"
    with pytest.raises(KinspectError, match="--authorizer needs --sasl or --tls"):
        UpOptions(authorizer=True).validate()
    assert authorizer.plan(Path("/l"), "kraft")["class"].endswith("StandardAuthorizer")


@pytest.mark.parametrize(("text", "grant"), [
    ("describe:topic", Grant("describe", "topic", "*")),
    ("DESCRIBE_CONFIGS:topic:orders", Grant("describe_configs", "topic", "orders")),
    ("read:group:app-*", Grant("read", "group", "app-", "PREFIXED")),
    ("describe:cluster", Grant("describe", "cluster", "kafka-cluster")),
    ("alter-configs:topic:*", Grant("alter_configs", "topic", "*")),
])
def test_allow_specs(text: str, grant: Grant) -> None:
    assert parse_grant(text) == grant
    assert parse_grant(grant.words) == grant


@pytest.mark.parametrize(("text", "says"), [
    ("describe", "expected OPERATION:TYPE[:NAME]"),
    ("peek:topic", "unknown operation 'peek'"),
    ("read:table", "unknown resource type 'table'"),
    ("describe:cluster:other", "a cluster has no name but kafka-cluster"),
    ("read:topic:a*b", "'*' only at the end"),
    ("read::x", "expected OPERATION:TYPE[:NAME]"),
])
def test_bad_allow_specs_are_one_line(text: str, says: str) -> None:
    with pytest.raises(KinspectError, match=says.replace("[", r"\[").replace("]", r"\]")
                       .replace("*", r"\*")):
        parse_grant(text)


@pytest.mark.parametrize("name", ["kinspect", "ANONYMOUS", "-x", "a b", "x" * 65, ""])
def test_bad_user_names(name: str) -> None:
    with pytest.raises(KinspectError):
        authorizer.check_user_name(name)


def test_librdkafka_handshake_lines_become_a_reason_and_an_address() -> None:
    line = ("ssl://198.18.1.11:11092/bootstrap: SSL handshake failed: error:0A000086:SSL "
            "routines::certificate verify failed: broker certificate could not be verified, "
            "verify that ssl.ca.location is correctly configured (after 3ms in state "
            "SSL_HANDSHAKE)")
    assert failed_address(line, "b:1") == "198.18.1.11:11092"
    assert tls_reason(line) == "certificate verify failed"
    assert failed_address("no address here", "b:1") == "b:1"


def test_a_plaintext_client_closed_at_api_versions_is_told_only_when_it_persists() -> None:
    watch = AuthWatch("198.18.1.11:11092", {"security.protocol": "PLAINTEXT"})
    line = ("FAIL [rdkafka#producer-2] [thrd:198.18.1.11:11092/bootstrap]: 198.18.1.11:11092/"
            "bootstrap: Disconnected: connection closed by peer: receive 0 after POLLIN (after "
            "0ms in state APIVERSION_QUERY)")
    watch.log(line)
    assert watch.failure() is None  # one broker restarting looks the same once
    watch.log(line)
    watch.log(line)
    said = watch.failure()
    assert said == protocol_message("198.18.1.11:11092", tls_expected=True)
    assert is_tls_message(said) and is_auth_message(said)
    watch.clear()
    assert watch.failure() is None


def test_oauthbearer_is_validated_by_kafka_against_the_lab_key_set(tmp_path: Path) -> None:
    lab = state(tmp_path, oauth=oauth.plan(tmp_path))
    settings = secure_listeners(lab.nodes[1], lab)
    assert settings["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,OAUTHBEARER"
    assert settings["listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler."
                    "class"] == oauth.VALIDATOR
    jwks = tmp_path / "oauth" / "jwks.json"
    assert settings["sasl.oauthbearer.jwks.endpoint.url"] == jwks.as_uri()
    in_container = secure_listeners(lab.nodes[1], lab, Path("/kinspect/conf/tls"))
    assert in_container["sasl.oauthbearer.jwks.endpoint.url"] == \
        "file:///kinspect/conf/oauth/jwks.json"
    assert oauth.jvm_flags(lab)[1] == f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.files={jwks}"
    assert stat.S_IMODE((tmp_path / "oauth" / "key.pem").stat().st_mode) == 0o600
    assert "d" not in json.loads(jwks.read_text())["keys"][0]  # the public half only


def test_the_token_endpoint_issues_tokens_the_key_set_verifies_and_goes_with_stop(
        tmp_path: Path) -> None:
    import jwt

    lab = state(tmp_path, oauth=oauth.plan(tmp_path))
    lab.extra["oauth"] = oauth.start(lab)
    try:
        secret = Path(lab.extra["oauth"]["client_secret_file"]).read_text().strip()
        url = lab.extra["oauth"]["token_endpoint"]
        tokens = LibrdkafkaTokens({"sasl.oauthbearer.method": "oidc",
                                   "sasl.oauthbearer.token.endpoint.url": url,
                                   "sasl.oauthbearer.client.id": "kinspect",
                                   "sasl.oauthbearer.client.secret": secret})
        token = tokens.token()
        assert tokens.token() == token  # kept until 80% of its hour
        key = jwt.PyJWKSet.from_json((tmp_path / "oauth" / "jwks.json").read_text())["kinspect-lab-1"]
        claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=oauth.AUDIENCE,
                            issuer=oauth.ISSUER)
        assert claims["sub"] == "kinspect" and claims["exp"] - claims["iat"] == 3600
        wrong = LibrdkafkaTokens({"sasl.oauthbearer.method": "oidc",
                                  "sasl.oauthbearer.token.endpoint.url": url,
                                  "sasl.oauthbearer.client.id": "kinspect",
                                  "sasl.oauthbearer.client.secret": "wrong"})
        with pytest.raises(KafkaPythonError, match=r"refused the client credentials \(HTTP 401\)"):
            wrong.token()
    finally:
        oauth.stop(lab)
    pid = lab.extra["oauth"]["pid"]
    deadline = time.monotonic() + 10
    while (process := read_process(pid)) is not None and not process.exited:
        assert time.monotonic() < deadline, "the token endpoint outlived stop()"
        time.sleep(0.05)
