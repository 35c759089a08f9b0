"""OAUTHBEARER end to end: a lab whose SASL_SSL listeners validate tokens with Kafka's own
OAuthBearerValidatorCallbackHandler against the lab's key set, and the lab's token endpoint
(client credentials) that a profile logs in at, as people log in to managed clusters today.
The AdminClient (librdkafka's OIDC) and the per-broker probes (clients/tokens.py) both log in:
every replica's own log end is there. Kafka refusing a token not signed by the lab's key, and
the endpoint refusing a wrong secret, show the login is checked for real."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, lab_status
from tests.helpers.oracles import TOPIC_COMMAND, kafka_tool

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]


def write_profile(path: Path, status: dict[str, Any], secret_file: str | None) -> None:
    """Profile `oauth`: OIDC with the secret in `secret_file`; None: librdkafka's unsecured
    token naming the lab's principal, signed by no one."""
    oauth, tls = status["oauth"], status["tls"]
    login = (f'''"sasl.oauthbearer.method" = "oidc"
"sasl.oauthbearer.client.id" = "{oauth['client_id']}"
"sasl.oauthbearer.client.secret" = "${{file:{secret_file}}}"
"sasl.oauthbearer.token.endpoint.url" = "{oauth['token_endpoint']}"'''
             if secret_file else '"sasl.oauthbearer.config" = "principal=kinspect"')
    path.write_text(f"""
[clusters.oauth]
bootstrap = "{tls['sasl_ssl_bootstrap']}"

[clusters.oauth.kafka]
"security.protocol" = "SASL_SSL"
"ssl.ca.location" = "{tls['ca']}"
"sasl.mechanism" = "OAUTHBEARER"
{login}
""")


@pytest.fixture(scope="module")
def oauth_lab(lab_session: Any) -> dict[str, Any]:
    kinspect("lab", "reset", "--tls", "--sasl", "oauthbearer", timeout=400)
    status = lab_status()
    create_topics(status["bootstrap"], {"bearer": 2})
    return status


def test_a_profile_logs_in_with_oauthbearer_and_the_probes_do_too(oauth_lab: dict[str, Any],
                                                                  tmp_path: Path) -> None:
    secret = Path(oauth_lab["oauth"]["client_secret_file"]).read_text().strip()
    config = tmp_path / "config.toml"
    write_profile(config, oauth_lab, oauth_lab["oauth"]["client_secret_file"])
    env = {"KINSPECT_CONFIG": str(config)}
    snap = kinspect("snapshot", "--profile", "oauth", "--json", env=env, check=False)
    assert snap.returncode == 0, snap.stdout + snap.stderr
    snapshot = json.loads(snap.stdout)
    assert {b["id"] for b in snapshot["brokers"]} == {1, 2, 3}
    logs = [r for t in snapshot["topics"] if t["name"] == "bearer"
            for p in t["partitions"] for r in p["replica_logs"]]
    assert len(logs) == 6 and all(r["log_end"] is not None for r in logs), \
        (logs, snapshot["limitations"])
    assert not [x for x in snapshot["limitations"] if "probes off" in x or "did not answer" in x]
    health = kinspect("health", "--profile", "oauth", env=env, check=False)
    assert health.returncode in (0, 1), health.stdout + health.stderr
    for text in (snap.stdout, snap.stderr, health.stdout, health.stderr):
        assert secret not in text
    # an inspector changes nothing: no group lookup made the cluster create __consumer_offsets
    topics = kafka_tool(TOPIC_COMMAND, "--bootstrap-server", oauth_lab["bootstrap"], "--list")
    assert "bearer" in topics and "__consumer_offsets" not in topics, topics


def test_kafka_refuses_a_token_the_lab_did_not_sign(oauth_lab: dict[str, Any],
                                                   tmp_path: Path) -> None:
    """librdkafka's unsecured token (alg none) names the same principal: Kafka's validator
    refuses it, and kinspect says so in one line (exit 2)."""
    config = tmp_path / "config.toml"
    write_profile(config, oauth_lab, None)
    proc = kinspect("health", "--profile", "oauth", "--timeout", "10",
                    env={"KINSPECT_CONFIG": str(config)}, check=False)
    assert proc.returncode in (2, 3), proc.stdout + proc.stderr
    said = (proc.stdout + proc.stderr).strip()
    assert "authentication failed" in said.lower() or "UNREACHABLE" in said, said


def test_the_token_endpoint_refuses_a_wrong_secret(oauth_lab: dict[str, Any],
                                                  tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-secret")
    request = urllib.request.Request(
        oauth_lab["oauth"]["token_endpoint"], data=b"grant_type=client_credentials",
        headers={"Authorization": "Basic a2luc3BlY3Q6bm90LXRoZS1zZWNyZXQ="})  # kinspect:wrong
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    config = tmp_path / "config.toml"
    write_profile(config, oauth_lab, str(wrong))
    proc = kinspect("health", "--profile", "oauth", "--timeout", "10",
                    env={"KINSPECT_CONFIG": str(config)}, check=False)
    assert proc.returncode in (2, 3) and len(proc.stdout.strip().splitlines()) <= 3, \
        proc.stdout + proc.stderr
