"""A lab with TLS and Kafka's ACL authorizer, on both backends (ZooKeeper mode on the process
backend, KRaft on docker, so both authorizers are met): kcat and Python's ssl trust the lab's
CA, Kafka's own kafka-acls lists what `lab user add` granted, Kafka refuses a user without a
grant; and (process backend) every TLS failure is said in one line with its cause."""

from __future__ import annotations

import json
import os
import socket
import ssl
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab import dist, tls
from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, lab_status, wait_until

pytestmark = [
    pytest.mark.lab,
    pytest.mark.slow,
    pytest.mark.resets_lab,
    pytest.mark.shares_lab("tls"),
    # the docker lab's TLS round trip runs in `make matrix` (CI: the process lab's)
    pytest.mark.backends("process", "docker", matrix_only=("docker",)),
]

TOPIC = "secure1"
MODES = {"process": "zookeeper", "docker": "kraft"}


@pytest.fixture(scope="module")
def secure_lab(lab_session: Any, lab_backend: str) -> dict[str, Any]:
    """The lab with --tls --authorizer on this backend, shared with the other tests marked
    shares_lab("tls") (the session lab's next user finds it is not plain and resets it)."""
    status = lab_session.ensure_secure(lab_backend, MODES[lab_backend])
    create_topics(status["bootstrap"], {TOPIC: 3})
    return dict(status)


def kcat(status: dict[str, Any], *args: str, user: tuple[str, str] | None = None,
         data: str | None = None) -> subprocess.CompletedProcess[str]:
    """kcat over SSL (or SASL_SSL as `user`), trusting the lab's CA: the independent client."""
    security = (["-b", status["tls"]["sasl_ssl_bootstrap"], "-X", "security.protocol=sasl_ssl",
                 "-X", "sasl.mechanism=SCRAM-SHA-256", "-X", f"sasl.username={user[0]}",
                 "-X", f"sasl.password={user[1]}"] if user else
                ["-b", status["tls"]["ssl_bootstrap"], "-X", "security.protocol=ssl"])
    produce = ["-X", "message.timeout.ms=15000"] if "-P" in args else []
    return subprocess.run(["kcat", *security, "-X", f"ssl.ca.location={status['tls']['ca']}",
                           *produce, *args], input=data, capture_output=True, text=True,
                          timeout=60)


def kafka_acls(bootstrap: str, *args: str) -> str:
    """Kafka's own kafka-acls (AclCommand), from the lab's jars."""
    kafka = dist.installed()
    assert kafka is not None
    result = subprocess.run(kafka.tool_command("kafka.admin.AclCommand", "--bootstrap-server",
                                               bootstrap.split(",", maxsplit=1)[0], *args),
                            capture_output=True, text=True, timeout=120, check=True)
    return result.stdout


def test_a_tls_lab_with_an_authorizer_and_users_of_few_rights(secure_lab: dict[str, Any]
                                                               ) -> None:
    status = secure_lab
    ca, key = Path(status["tls"]["ca"]), Path(status["tls"]["ca"]).with_name("ca-key.pem")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert status["authorizer"]["class"].endswith(
        "StandardAuthorizer" if status["mode"] == "kraft" else "AclAuthorizer")
    # Python's ssl verifies every broker's chain and that it names the address connected to
    for address in status["tls"]["ssl_bootstrap"].split(","):
        host, _, port = address.rpartition(":")
        context = ssl.create_default_context(cafile=str(ca))
        with socket.create_connection((host, int(port)), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname=host) as wrapped:
            assert wrapped.version() in ("TLSv1.2", "TLSv1.3")
    # kcat over SSL writes and reads (User:ANONYMOUS of an SSL listener: a super user)
    written = kcat(status, "-P", "-t", TOPIC, "-p", "0", data="one\ntwo\n")
    assert written.returncode == 0, written.stderr
    read = kcat(status, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q")
    assert read.stdout.split() == ["one", "two"], read.stdout + read.stderr
    # a reader of secure* topics, and a user granted nothing (beside the users of the tests
    # sharing this lab)
    before = lab_status()["authorizer"]["users"]
    reader = json.loads(kinspect("lab", "user", "add", "reader", "--allow", "describe:topic",
                                 "--allow", "read:topic:secure*", "--allow", "read:group:g1",
                                 "--json").stdout)
    kinspect("lab", "user", "add", "nobody")
    assert reader["kafka"]["sasl.password"].startswith("${file:")
    password = Path(reader["password_file"]).read_text().strip()
    assert stat.S_IMODE(Path(reader["password_file"]).stat().st_mode) == 0o600
    listed = kafka_acls(status["bootstrap"], "--list", "--principal", "User:reader")
    assert "name=secure, patternType=PREFIXED" in listed and "operation=READ" in listed, listed
    assert "resourceType=GROUP, name=g1, patternType=LITERAL" in listed, listed
    assert "operation=DESCRIBE" in listed, listed
    users = json.loads(kinspect("lab", "user", "list", "--json").stdout)["users"]
    assert {u["name"]: u["acls"] for u in users}["reader"] == [
        "describe:topic:*", "read:group:g1", "read:topic:secure*"]
    assert password not in kinspect("lab", "user", "list").stdout
    # Kafka itself: the reader reads (once its credential reached every broker), nobody may not
    reads = wait_until(lambda: (proc := kcat(status, "-C", "-t", TOPIC, "-p", "0", "-o",
                                             "beginning", "-e", "-q", user=("reader", password))
                                ).returncode == 0 and proc, 60, "the reader reading")
    assert reads.stdout.split() == ["one", "two"], reads.stderr
    nobody = Path(reader["password_file"]).with_name("nobody.password").read_text().strip()
    refused = wait_until(lambda: (proc := kcat(status, "-P", "-t", TOPIC, "-p", "0",
                                               user=("nobody", nobody), data="no\n")
                                  ).returncode != 0 and "authoriz" in proc.stderr.lower() and proc,
                         60, "a write refused")
    assert "Topic authorization failed" in refused.stderr, refused.stderr
    kinspect("lab", "user", "remove", "nobody")
    assert "User:nobody" not in kafka_acls(status["bootstrap"], "--list")
    assert sorted(lab_status()["authorizer"]["users"]) == sorted([*before, "reader"])


def tls_profile(tmp_path: Path, status: dict[str, Any], ca: str | None,
                bootstrap: str | None = None, protocol: str = "SSL") -> dict[str, str]:
    """A profile `t` reaching the lab's SSL listeners with this CA (None: no ssl.ca.location)."""
    config = tmp_path / f"config-{int(time.monotonic() * 1000)}.toml"
    lines = ["[clusters.t]", f'bootstrap = "{bootstrap or status["tls"]["ssl_bootstrap"]}"',
             "[clusters.t.kafka]", f'"security.protocol" = "{protocol}"']
    if ca:
        lines.append(f'"ssl.ca.location" = "{ca}"')
    config.write_text("\n".join(lines) + "\n")
    return {"KINSPECT_CONFIG": str(config)}


def said(proc: subprocess.CompletedProcess[str], code: int, start: str) -> str:
    """The one line a failed command printed (exit 2 on stderr; health: UNREACHABLE, exit 3)."""
    text = proc.stdout + proc.stderr
    assert proc.returncode == code, text
    assert "Traceback" not in text and "FAIL" not in text, text
    lines = [line for line in text.splitlines() if start in line]
    assert len(lines) == 1, text
    if code == 2:
        assert proc.stderr.splitlines()[-1].startswith(f"kinspect: error: {start}"), text
    else:
        assert proc.stdout.startswith("UNREACHABLE"), text
    return lines[0]


@pytest.mark.backends("process")
def test_tls_failures_are_said_in_one_line(secure_lab: dict[str, Any], tmp_path: Path) -> None:
    """An unknown CA, no CA, a plaintext client on a TLS port, a certificate naming another
    host: each command says the cause and what to check, once, exit 2 (health: 3)."""
    status = secure_lab
    other = tmp_path / "other-ca"
    tls.make_ca(other)
    unknown = tls_profile(tmp_path, status, str(other / "ca.pem"))
    run_dir = tmp_path / "run"
    kinspect("load", "run", "--bootstrap", status["bootstrap"], "--topic", TOPIC, "--count", "10",
             "--run-dir", str(run_dir), "--no-timeline")
    for args, code in ((["snapshot"], 2), (["health", "--timeout", "10"], 3),
                       (["load", "run", "--topic", TOPIC, "--count", "5", "--run-dir",
                         str(tmp_path / "new")], 2),
                       (["verify", "--topic", TOPIC, "--run-dir", str(run_dir)], 2),
                       (["watch"], 2)):
        proc = kinspect(*args, "--profile", "t", env=unknown, check=False, timeout=120)
        line = said(proc, code, "TLS handshake failed at ")
        assert "certificate verify failed: unable to get local issuer certificate" in line, line
        assert f"check ssl.ca.location ({other / 'ca.pem'})" in line, line
    assert not (tmp_path / "new" / "ledger").exists()
    no_ca = kinspect("snapshot", "--profile", "t", env=tls_profile(tmp_path, status, None),
                     check=False)
    assert "none is set" in said(no_ca, 2, "TLS handshake failed at ")
    plaintext = kinspect("snapshot", "--profile", "t", check=False, env=tls_profile(
        tmp_path, status, None, protocol="PLAINTEXT"))
    assert "SSL or SASL_SSL" in said(plaintext, 2, "wrong security.protocol at ")
    # kafka1's certificate, signed by the lab's CA, names another host: hostname check fails
    kafka1 = next(n for n in status["nodes"] if n["name"] == "kafka1")
    host = kafka1["address"].rpartition(":")[0]
    pem = Path(status["tls"]["ca"]).with_name("kafka1.pem")
    original = pem.read_bytes()
    ca_cert, ca_key = tls.load_ca(pem.parent)
    tls.write_node_files(pem, *tls.issue(tls.CertRequest("kafka1", ("10.255.0.1",),
                                                          ("elsewhere.invalid",)), ca_cert, ca_key))
    try:
        kinspect("lab", "restart", "kafka1", timeout=200)
        address = f"{host}:{int(kafka1['address'].rpartition(':')[2]) + tls.SSL_PORT_OFFSET}"
        good_ca = tls_profile(tmp_path, status, status["tls"]["ca"], bootstrap=address)
        proc = wait_until(lambda: (p := kinspect("snapshot", "--profile", "t", env=good_ca,
                                                 check=False)).returncode == 2 and p,
                          60, "kafka1 back with the wrong certificate")
        line = said(proc, 2, "TLS handshake failed at ")
        assert f"mismatch, certificate is not valid for '{host}'" in line, line
        assert "does not name the address connected to" in line, line
    finally:
        os.replace(pem, pem.with_suffix(".wrong"))
        pem.write_bytes(original)
        pem.chmod(0o600)
        kinspect("lab", "restart", "kafka1", timeout=200)
