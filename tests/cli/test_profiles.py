"""Profiles, secret masking and the health verdict, without a cluster."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kinspect.cli.health import health_json
from kinspect.errors import KinspectError
from kinspect.profiles import MASK, load_profile, redact
from tests.helpers import kinspect
from tests.helpers.model_fixtures import demo_snapshot

CONFIG = """
[clusters.prod]
bootstrap = "k1:9093,k2:9093"
zookeeper = "zk1:2181/kafka"
refresh_s = 2

[clusters.prod.kafka]
"security.protocol" = "SASL_SSL"
"sasl.username" = "oncall"
"sasl.password" = "${env:KINSPECT_UNIT_PW}"

[clusters.prod.zookeeper_auth]
scheme = "digest"
credential = "${file:CREDFILE}"
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cred = tmp_path / "zk-cred"
    cred.write_text("oncall:zk-very-secret\n")
    path = tmp_path / "config.toml"
    path.write_text(CONFIG.replace("CREDFILE", str(cred)))
    monkeypatch.setenv("KINSPECT_UNIT_PW", "hunter2-long-secret")
    return path


def test_profile_resolves_references_and_masks_them(config: Path) -> None:
    profile = load_profile("prod", config)
    assert profile.bootstrap == "k1:9093,k2:9093" and profile.zookeeper == "zk1:2181/kafka"
    assert profile.kafka["sasl.password"] == "hunter2-long-secret"
    assert profile.zookeeper_auth == (("digest", "oncall:zk-very-secret"),)
    line = "auth failed for oncall with hunter2-long-secret (zk oncall:zk-very-secret)"
    assert redact(line) == f"auth failed for oncall with {MASK} (zk {MASK})"
    shown = redact(str(profile.kafka))  # the whole table, as an error or a dump would show it
    assert "hunter2" not in shown and MASK in shown and "oncall" in shown


@pytest.mark.parametrize(("text", "message"), [
    ('[clusters.x]\nbootstrap = "a:1"\ncolour = 1\n', "unknown key 'colour'"),
    ("[clusters.x]\nzookeeper = \"z\"\n", "bootstrap is required"),
    ('[clusters.x]\nbootstrap = "a:1"\nrefresh_s = 0\n', "refresh_s"),
    ('[clusters.x]\nbootstrap = "a:1"\n[clusters.x.kafka]\n"sasl.password" = "${env:NOPE_NOT_SET}"\n',
     "NOPE_NOT_SET"),
    ("[clusters.x\n", "not valid TOML"),
])
def test_bad_profiles_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(KinspectError, match=message):
        load_profile("x", path)


def test_cli_errors_for_profiles(config: Path, tmp_path: Path) -> None:
    env = {"KINSPECT_CONFIG": str(config), "KINSPECT_UNIT_PW": "hunter2-long-secret"}
    proc = kinspect("health", "--profile", "staging", env=env, check=False)
    assert proc.returncode == 2 and "no profile 'staging'" in proc.stderr
    assert "profiles: prod" in proc.stderr and "Traceback" not in proc.stderr
    missing = kinspect("health", "--profile", "x", "--config", str(tmp_path / "none.toml"),
                       check=False)
    assert missing.returncode == 2 and "no config file" in missing.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["snapshot", "-X", "foo=bar"], 'No such configuration property: "foo"'),
    (["health", "-X", "security.protocol=BOGUS"], 'Invalid value "BOGUS"'),
    (["snapshot", "--zookeeper", "127.0.0.1:abc"], "--zookeeper wants host:port"),
])
def test_bad_client_settings_are_one_line(args: list[str], message: str) -> None:
    """librdkafka and kazoo refuse these in constructors; the user sees one line, exit 2."""
    proc = kinspect(*args[:1], "--bootstrap", "127.0.0.1:1", *args[1:], check=False, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_config_that_is_not_text_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(KinspectError, match="not valid TOML"):
        load_profile("x", path)


def test_health_verdicts_from_a_recorded_snapshot() -> None:
    # __consumer_offsets with replication factor 1 under min.insync.replicas=2: it can never
    # take an acks=all write (critical), and its one broker is a single point of failure (risky).
    snapshot = demo_snapshot()
    result = health_json(snapshot, None)
    assert result["verdict"] == "critical" and result["under_min_isr"] == ["__consumer_offsets-0"]
    assert any("replication factor 1" in p for p in result["risky_settings"])
    isolated = health_json(demo_snapshot(isolated_leader=True), None)
    assert isolated["verdict"] in ("warning", "critical") and isolated["under_replicated"]
    assert "test1-0" in isolated["under_replicated"]  # the partition whose leader was cut off
    assert "test1-0" not in result["under_replicated"]
    no_zk = health_json(snapshot, "cannot reach ZooKeeper at zk1:2181")
    assert no_zk["verdict"] == "critical" and "ZooKeeper" in no_zk["problems"][0]
    gone = dataclasses.replace(snapshot, admin_state="error", admin_error="timed out",
                               zookeeper_state=None)
    assert health_json(gone, "cannot reach ZooKeeper")["verdict"] == "unreachable"
