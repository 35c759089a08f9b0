"""On call against a real lab: health exit codes, SASL profiles whose secret never shows,
and the lab recognised by the id it wrote, not by its address."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kinspect.lab.readiness import LAB_MARK
from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, lab_status, partition_state, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]


def health(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return kinspect("health", "--json", "--timeout", "10", *args, env=env, check=False)


def verdict_code(*args: str) -> int:
    proc = health(*args)
    assert proc.returncode == json.loads(proc.stdout)["exit_code"], proc.stdout
    return proc.returncode


@pytest.fixture
def fresh_lab(lab_session: Any) -> dict[str, Any]:
    """A reset lab (demo preset: min.insync.replicas=2) holding one replicated topic."""
    kinspect("lab", "reset", timeout=400)
    status = lab_status()
    create_topics(status["bootstrap"], {"health1": 3})
    return status


def test_health_exit_codes(fresh_lab: dict[str, Any]) -> None:
    zk = KazooClient(hosts=fresh_lab["zookeeper"])
    zk.start(timeout=20)
    try:
        wait_until(lambda: all(len(partition_state(zk, "health1", p)["isr"]) == 3
                               for p in range(3)), 60, "full ISRs")
    finally:
        zk.stop()
        zk.close()
    assert wait_until(lambda: verdict_code() == 0, 30, "healthy (exit 0)") is True
    try:
        kinspect("lab", "stop", "kafka3")
        wait_until(lambda: verdict_code() == 1, 60, "warning (exit 1) with one broker down")
        report = json.loads(health().stdout)
        assert report["verdict"] == "warning" and report["under_replicated"]
        assert any("broker 3" in p for p in report["problems"]), report["problems"]
        kinspect("lab", "stop", "kafka2")
        wait_until(lambda: verdict_code() == 2, 60, "critical (exit 2) with two brokers down")
        assert json.loads(health().stdout)["under_min_isr"]
    finally:
        kinspect("lab", "start", "kafka2", check=False)
        kinspect("lab", "start", "kafka3", check=False)
    unreachable = kinspect("health", "--bootstrap", "127.0.0.1:1", "--timeout", "3", check=False)
    assert unreachable.returncode == 3 and unreachable.stdout.startswith("UNREACHABLE")


def test_health_answers_while_zookeeper_is_down(fresh_lab: dict[str, Any]) -> None:
    kinspect("lab", "kill", "zk1")
    try:
        proc = health()
        report = json.loads(proc.stdout)
        assert proc.returncode == 2 and report["verdict"] == "critical"
        assert report["zookeeper"] == "unreachable"
        assert any("ZooKeeper" in p for p in report["problems"]), report["problems"]
        assert report["brokers"]["answering"], "the brokers still answer the AdminClient"
    finally:
        kinspect("lab", "start", "zk1")


def write_profile(path: Path, bootstrap: str, zookeeper: str, mechanism: str) -> None:
    path.write_text(f"""
[clusters.secure]
bootstrap = "{bootstrap}"
zookeeper = "{zookeeper}"
refresh_s = 2

[clusters.secure.kafka]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.mechanism" = "{mechanism}"
"sasl.username" = "kinspect"
"sasl.password" = "${{env:KINSPECT_TEST_PASSWORD}}"

[clusters.bare]
bootstrap = "{bootstrap}"
[clusters.bare.kafka]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.mechanism" = "{mechanism}"
"sasl.username" = "kinspect"
"sasl.password" = "${{file:{path.parent / 'pw'}}}"
""")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_sasl_profile_connects_and_the_secret_never_shows(lab_session: Any, tmp_path: Path,
                                                         mechanism: str) -> None:
    status = lab_status()
    if not (status.get("sasl") or {}).get("bootstrap"):
        kinspect("lab", "reset", "--sasl", "scram-sha-256", timeout=400)
        status = lab_status()
    sasl = status["sasl"]
    password = Path(sasl["password_file"]).read_text().strip()
    assert password not in json.dumps(status)
    (tmp_path / "pw").write_text(password)
    config = tmp_path / "config.toml"
    write_profile(config, sasl["bootstrap"], status["zookeeper"], mechanism)
    env = {"KINSPECT_CONFIG": str(config), "KINSPECT_TEST_PASSWORD": password}
    outputs = []
    for args in (["health", "--profile", "secure", "--json"],
                 ["health", "--profile", "bare"],
                 ["snapshot", "--profile", "secure", "--json"],
                 ["snapshot", "--profile", "bare"]):
        proc = kinspect(*args, env=env, check=False)
        outputs.append(proc.stdout + proc.stderr)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    snapshot = json.loads(kinspect("snapshot", "--profile", "secure", "--json", env=env).stdout)
    assert {b["id"] for b in snapshot["brokers"]} == {1, 2, 3}
    wrong = kinspect("health", "--profile", "bare", "-X", f"sasl.password={password}x",
                     "--timeout", "5", env=env, check=False)
    outputs.append(wrong.stdout + wrong.stderr)
    assert wrong.returncode == 3, wrong.stdout + wrong.stderr
    missing_env = kinspect("health", "--profile", "secure", env={"KINSPECT_CONFIG": str(config)},
                           check=False)
    assert missing_env.returncode == 2 and "KINSPECT_TEST_PASSWORD" in missing_env.stderr
    for text in outputs:
        assert password not in text


def test_only_the_lab_id_makes_a_cluster_the_lab(lab_session: Any) -> None:
    """Faults are refused on any cluster whose ZooKeeper does not hold our lab id."""
    from kinspect.cli import build_parser
    from kinspect.cli.common import resolve_cluster

    status = lab_status()
    args = build_parser().parse_args(["health", "--bootstrap", status["bootstrap"],
                                      "--zookeeper", status["zookeeper"]])
    assert os.environ["KINSPECT_HOME"]  # the session lab's home: running_lab() finds it
    assert resolve_cluster(args).lab is not None
    zk = KazooClient(hosts=status["zookeeper"])
    zk.start(timeout=20)
    try:
        zk.set(LAB_MARK, b"somebody-else")
        assert resolve_cluster(args).lab is None  # same address, not our lab: read-only
        bare = build_parser().parse_args(["health", "--bootstrap", status["bootstrap"]])
        assert resolve_cluster(bare).lab is None  # no ZooKeeper, no proof
    finally:
        zk.set(LAB_MARK, status["lab_id"].encode())
        zk.stop()
        zk.close()
