"""On call against a real lab: health exit codes, SASL profiles (over TLS, with the lab's own
CA, as on the clusters people run) whose secret never shows, and the lab recognised by the id it
wrote, not by its address."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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


@pytest.fixture(scope="module")
def fresh_lab(lab_session: Any) -> dict[str, Any]:
    """A reset lab (demo preset: min.insync.replicas=2) holding one replicated topic; made once
    for the module: each test restarts what it stops."""
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


def write_profile(path: Path, bootstrap: str, zookeeper: str, mechanism: str, ca: str) -> None:
    """Profiles `secure` (with ZooKeeper, the password from the environment) and `bare` (the
    password from a file), both SASL_SSL trusting the lab's CA."""
    path.write_text(f"""
[clusters.secure]
bootstrap = "{bootstrap}"
zookeeper = "{zookeeper}"
refresh_s = 2

[clusters.secure.kafka]
"security.protocol" = "SASL_SSL"
"ssl.ca.location" = "{ca}"
"sasl.mechanism" = "{mechanism}"
"sasl.username" = "kinspect"
"sasl.password" = "${{env:KINSPECT_TEST_PASSWORD}}"

[clusters.bare]
bootstrap = "{bootstrap}"
[clusters.bare.kafka]
"security.protocol" = "SASL_SSL"
"ssl.ca.location" = "{ca}"
"sasl.mechanism" = "{mechanism}"
"sasl.username" = "kinspect"
"sasl.password" = "${{file:{path.parent / 'pw'}}}"
""")


def sasl_lab() -> tuple[dict[str, Any], str]:
    """The lab with its SASL_SSL listener (reset with --tls if it has none: the tests using it
    are marked shares_lab("tls") and find the TLS lab), and the password. `bootstrap` of the
    returned status's "secure" entry is the SASL_SSL listeners'."""
    current = kinspect("lab", "status", "--json", check=False)
    status = json.loads(current.stdout) if current.returncode == 0 else {}
    if not (status.get("tls") or {}).get("sasl_ssl_bootstrap") or \
            status.get("mode", "zookeeper") != "zookeeper":
        kinspect("lab", "reset", "--tls", timeout=400)
        status = lab_status()
    status["secure"] = {"bootstrap": status["tls"]["sasl_ssl_bootstrap"],
                        "ca": status["tls"]["ca"]}
    return status, Path(status["sasl"]["password_file"]).read_text().strip()


@pytest.mark.shares_lab("tls")
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_sasl_profile_connects_and_the_secret_never_shows(lab_session: Any, tmp_path: Path,
                                                         mechanism: str) -> None:
    status, password = sasl_lab()
    secure = status["secure"]
    assert password not in json.dumps(status)
    create_topics(status["bootstrap"], {"sasl-probe": 2})  # replicas for the brokers to answer
    (tmp_path / "pw").write_text(password)
    config = tmp_path / "config.toml"
    write_profile(config, secure["bootstrap"], status["zookeeper"], mechanism, secure["ca"])
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
    # each broker was asked directly over SASL_SSL too: every replica's own log end is there
    logs = [r for t in snapshot["topics"] for p in t["partitions"] for r in p["replica_logs"]]
    assert logs and all(r["log_end"] is not None for r in logs), snapshot["topics"][:1]
    wrong = kinspect("health", "--profile", "bare", "-X", f"sasl.password={password}x",
                     "--timeout", "5", env=env, check=False)
    outputs.append(wrong.stdout + wrong.stderr)
    assert wrong.returncode == 3, wrong.stdout + wrong.stderr
    missing_env = kinspect("health", "--profile", "secure", env={"KINSPECT_CONFIG": str(config)},
                           check=False)
    assert missing_env.returncode == 2 and "KINSPECT_TEST_PASSWORD" in missing_env.stderr
    for text in outputs:
        assert password not in text


def files_holding(root: Path, secret: str) -> list[str]:
    """Every file under root whose bytes hold the secret; Parquet files are also read back
    (values and metadata), since their pages may be compressed."""
    import pyarrow.parquet as pq

    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        texts = [path.read_bytes()]
        if path.suffix == ".parquet":
            parquet = pq.ParquetFile(path)
            texts.append(repr(parquet.metadata.metadata).encode())
            texts.append(repr(parquet.read().to_pylist()).encode())
        if any(secret.encode() in text for text in texts):
            found.append(str(path.relative_to(root)))
    return found


@pytest.mark.extended  # CI: tests/load/test_run_dir_secrets.py (the same rules, no lab)
def test_a_sasl_run_leaves_no_secret_in_its_run_dir(lab_session: Any, tmp_path: Path) -> None:
    """load run + verify + postmortem through the SASL listener, the password given by
    ${env:} in a profile (run A, with a broker restarted meanwhile: faults, replica snapshots)
    and as a literal -X (run B): no file either run writes holds the password."""
    status, password = sasl_lab()
    create_topics(status["bootstrap"], {"secret1": 3})
    config = tmp_path / "config.toml"
    write_profile(config, status["secure"]["bootstrap"], status["zookeeper"], "SCRAM-SHA-256",
                  status["secure"]["ca"])
    env = {"KINSPECT_CONFIG": str(config), "KINSPECT_TEST_PASSWORD": password}
    literal = ["--bootstrap", status["secure"]["bootstrap"], "--zookeeper", status["zookeeper"],
               "-X", "security.protocol=SASL_SSL", "-X", f"ssl.ca.location={status['secure']['ca']}",
               "-X", "sasl.mechanism=SCRAM-SHA-256",
               "-X", "sasl.username=kinspect", "-X", f"sasl.password={password}"]
    runs = {"A": (tmp_path / "run-a", ["--profile", "secure"]),
            "B": (tmp_path / "run-b", literal)}
    printed = []
    for name, (run_dir, cluster) in runs.items():
        amount = ["--duration", "15", "--rate", "200"] if name == "A" else ["--count", "2000"]
        command = ["load", "run", "--topic", "secret1", "--acks", "all", "--run-dir",
                   str(run_dir), "--json", *amount, *cluster]
        load = subprocess.Popen([sys.executable, "-m", "kinspect", *command], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, **env})
        if name == "A":
            time.sleep(4)
            kinspect("lab", "stop", "kafka3")
            kinspect("lab", "start", "kafka3", timeout=200)
        out, err = load.communicate(timeout=300)
        printed.append(out + err)
        assert load.returncode == 0, out + err
        summary = json.loads(out)
        assert summary["acked"] > 0 and summary["sent"] > 0, summary
        # verify has no --zookeeper: the profile makes it the lab's (faults, broker logs kept)
        for step in (["verify", "--topic", "secret1", "--run-dir", str(run_dir), "--profile",
                      "secure", *(["-X", f"sasl.password={password}"] if name == "B" else [])],
                     ["postmortem", str(run_dir), "--json"]):
            proc = kinspect(*step, env=env, timeout=400)
            printed.append(proc.stdout + proc.stderr)
        report = json.loads(proc.stdout)  # the post-mortem read the run back
        assert report["sent"] == summary["sent"] and report["acked_lost"] == 0, report
    a_dir, b_dir = runs["A"][0], runs["B"][0]
    settings_a = json.loads((a_dir / "settings.json").read_text())
    settings_b = json.loads((b_dir / "settings.json").read_text())
    assert settings_a["extra"]["sasl.password"] == "${env:KINSPECT_TEST_PASSWORD}"
    pw_file = Path(status["sasl"]["password_file"]).resolve()
    assert settings_b["extra"]["sasl.password"] == f"${{file:{pw_file}}}"
    for run_dir in (a_dir, b_dir):
        written = {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}
        for expected in ("run.json", "settings.json", "summary.json", "timeline.jsonl",
                         "verify.json", "faults.jsonl", "stats/p000.json",
                         "postmortem/report.json", "postmortem/report.md"):
            assert expected in written, sorted(written)
        for prefix in ("ledger/", "final_log/", "broker-logs/kafka1/"):
            assert any(w.startswith(prefix) for w in written), (prefix, sorted(written))
        assert files_holding(run_dir, password) == [], run_dir
    assert any(w.startswith("replicas/") for w in
               (str(p.relative_to(a_dir)) for p in a_dir.rglob("*") if p.is_file()))
    assert json.loads((a_dir / "faults.jsonl").read_text().splitlines()[0])["action"]
    for text in printed:
        assert password not in text


@pytest.mark.shares_lab("tls")
def test_a_wrong_password_is_said_in_one_line(lab_session: Any, tmp_path: Path) -> None:
    """Each command says "authentication failed" once, with librdkafka's reason and a hint,
    and no librdkafka FAIL line, no traceback."""
    status, password = sasl_lab()
    create_topics(status["bootstrap"], {"secret2": 1})
    run_dir = tmp_path / "run"
    kinspect("load", "run", "--bootstrap", status["bootstrap"], "--topic", "secret2",
             "--count", "10", "--run-dir", str(run_dir), "--no-timeline")
    config = tmp_path / "config.toml"
    write_profile(config, status["secure"]["bootstrap"], status["zookeeper"], "SCRAM-SHA-256",
                  status["secure"]["ca"])
    (tmp_path / "pw").write_text(password)
    env = {"KINSPECT_CONFIG": str(config), "KINSPECT_TEST_PASSWORD": password}
    wrong = ["-X", "sasl.password=not-the-password"]
    cases = [(["load", "run", "--profile", "bare", "--topic", "secret2", "--count", "10",
               "--run-dir", str(tmp_path / "new")], 2),
             (["load", "slow", "--profile", "bare", "--topic", "secret2", "--count", "1"], 2),
             (["verify", "--profile", "bare", "--topic", "secret2", "--run-dir", str(run_dir)], 2),
             (["snapshot", "--profile", "bare"], 2),
             (["snapshot", "--profile", "secure"], 2),  # ZooKeeper answering changes nothing
             (["watch", "--profile", "bare"], 2),
             (["health", "--profile", "bare", "--timeout", "10"], 3)]
    for args, code in cases:
        started = time.monotonic()
        proc = kinspect(*args, *wrong, env=env, check=False, timeout=120)
        said = proc.stdout + proc.stderr
        assert proc.returncode == code, (args, said)
        lines = [line for line in said.splitlines() if "authentication failed" in line]
        assert len(lines) == 1, (args, said)
        assert "SASL authentication error" in lines[0] and "sasl.password" in lines[0], said
        assert "FAIL" not in said and "Traceback" not in said and password not in said
        if code == 2:  # the error is the last line; before it at most kinspect's progress
            assert proc.stdout == "" and proc.stderr.splitlines()[-1] == \
                f"kinspect: error: {lines[0].partition('kinspect: error: ')[2]}", said
            assert len(proc.stderr.splitlines()) <= (2 if args[0] == "verify" else 1), said
        else:
            assert proc.stdout.startswith("UNREACHABLE") and proc.stderr == "", said
        assert time.monotonic() - started < 30, (args, "took", time.monotonic() - started)
    assert not (tmp_path / "new" / "ledger").exists()  # refused before any worker started


def set_scram_password(bootstrap: str, password: str) -> None:
    """The SCRAM credential of user kinspect in ZooKeeper, through the PLAINTEXT listener."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    from kinspect.clients.kafka import quiet_admin

    upsert = UserScramCredentialUpsertion(
        "kinspect", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password.encode())
    admin = quiet_admin(bootstrap)  # held until the answers came: a dropped client cancels them
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)


@pytest.mark.shares_lab("tls")
def test_a_login_refused_mid_run_stops_the_load_and_says_so(lab_session: Any,
                                                            tmp_path: Path) -> None:
    """A password rotated under a running load: as the brokers restart, every new connection is
    refused. The load stops at once (not minutes later with every send timed out), keeps what it
    recorded, and says why in one line, exit 2."""
    status, password = sasl_lab()
    create_topics(status["bootstrap"], {"rotated": 1})
    config = tmp_path / "config.toml"
    write_profile(config, status["secure"]["bootstrap"], status["zookeeper"], "SCRAM-SHA-256",
                  status["secure"]["ca"])
    run_dir = tmp_path / "run"
    runner = subprocess.Popen(
        [sys.executable, "-m", "kinspect", "load", "run", "--profile", "secure", "--topic",
         "rotated", "--duration", "600", "--rate", "500", "--run-dir", str(run_dir), "--json",
         "--no-timeline"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "KINSPECT_CONFIG": str(config), "KINSPECT_TEST_PASSWORD": password})
    try:
        wait_until(lambda: (run_dir / "ledger").is_dir() and any((run_dir / "ledger").glob("p*")),
                   60, "the load under way")
        set_scram_password(status["bootstrap"], password + "-rotated")
        for node in ("kafka1", "kafka2", "kafka3"):  # every connection must log in again
            kinspect("lab", "restart", node, timeout=120)
            if runner.poll() is not None:
                break
        out, err = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
        set_scram_password(status["bootstrap"], password)
    assert runner.returncode == 2, err
    assert out == "" and "FAIL" not in err and "Traceback" not in err and password not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kinspect: error: authentication failed at "), err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["failure"].startswith("authentication failed") and summary["acked"] > 0
    assert summary["sent"] == summary["acked"] + summary["failed"] + summary["unknown"]


@pytest.mark.shares_lab("tls")
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
