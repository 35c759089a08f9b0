"""`kinspect doctor` tells the truth about this machine: as root, as nobody, and without Docker.

The oracles are not kinspect: `id -u`, `java -version` parsed here, `docker info`'s exit code,
an `ip netns add` and qdiscs tried by the test itself, and `unshare` run as the same user.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab.host_checks import Check, Status, summarise
from tests.helpers.unprivileged import NOBODY, reachable, run_as, user_env, user_python

NO_ENGINE = "unix:///nonexistent"
FAULTS_PATH = "process lab with network faults"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the root checks need root")


def doctor(env: dict[str, str] | None = None, json_out: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kinspect", "doctor", *(["--json"] if json_out else [])]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def parsed(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode in (0, 1), done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    assert answer["schema"] == 1
    assert answer["summary"]["exit_code"] == done.returncode
    return answer


def check(answer: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in answer["checks"] if c["name"] == name]
    assert len(found) == 1, name
    assert set(found[0]) == {"name", "status", "found", "fix", "enables"}
    return found[0]


def path(answer: dict[str, Any], name: str) -> dict[str, Any]:
    paths: list[dict[str, Any]] = answer["summary"]["paths"]
    return next(p for p in paths if p["name"] == name)


def java_version() -> tuple[int, str] | None:
    """(major, version string) from `java -version`, read here, not by kinspect."""
    java = shutil.which("java")
    if not java:
        return None
    text = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    version = text.split('"')[1]  # openjdk version "17.0.15" 2025-04-15; java version "1.8.0_292"
    first, _, rest = version.partition(".")
    major = rest.partition(".")[0] if first == "1" else first
    return int("".join(ch for ch in major if ch.isdigit())), version


def kernel_takes(script: str) -> bool:
    """Whether `script` succeeds in a fresh network namespace of the test's own."""
    ns = f"ks-test-doctor-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script],
                              capture_output=True).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=True)


def without_docker() -> dict[str, str]:
    """This environment with no engine to reach and no docker command on PATH."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "docker").exists()]
    return {**os.environ, "DOCKER_HOST": NO_ENGINE, "PATH": os.pathsep.join(dirs)}


@needs_root
def test_as_root_the_findings_agree_with_the_machine() -> None:
    answer = parsed(doctor())
    uid = subprocess.run(["id", "-u"], capture_output=True, text=True, check=True).stdout.strip()
    assert uid == "0"
    assert check(answer, "root")["status"] == "ok" and "uid 0" in check(answer, "root")["found"]

    java = java_version()
    found = check(answer, "java")
    if java is None:
        assert found["status"] == "missing" and found["fix"]
    else:
        assert found["status"] == ("ok" if java[0] >= 17 else "missing")
        assert java[1] in found["found"]

    engine = subprocess.run(["docker", "info"], capture_output=True).returncode if shutil.which(
        "docker") else 1
    assert check(answer, "docker-engine")["status"] == ("ok" if engine == 0 else "missing")

    netns = subprocess.run(["ip", "netns", "add", f"ks-test-oracle-{os.getpid()}"], capture_output=True)
    if netns.returncode == 0:
        subprocess.run(["ip", "netns", "delete", f"ks-test-oracle-{os.getpid()}"], check=True)
    assert (check(answer, "partitions")["status"] == "ok") == (netns.returncode == 0)
    assert not [line for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
                .stdout.splitlines() if line.startswith("ks-doctor-")], "doctor left its namespace"

    if netns.returncode == 0:
        netem = kernel_takes("ip link set lo up && tc qdisc add dev lo root netem delay 1ms")
        ifb = kernel_takes("ip link add t-ifb type ifb")
        tbf = kernel_takes("ip link set lo up && tc qdisc add dev lo root tbf rate 1mbit burst 16kb "
                           "latency 100ms")
        slow = check(answer, "slow-links")
        assert slow["status"] == ("ok" if netem and ifb else "warn" if netem or tbf else "missing")
        assert ("no netem" in slow["found"]) == (not netem and tbf)

    if java and java[0] >= 17 and netns.returncode == 0 and check(answer, "memory")["status"] == "ok":
        assert answer["summary"]["network_faults"] == FAULTS_PATH
        assert path(answer, FAULTS_PATH)["via"] == ["root"]
        assert answer["summary"]["exit_code"] == 0


@needs_root
def test_the_docker_routing_check_agrees_with_the_routes() -> None:
    if not shutil.which("docker") or subprocess.run(["docker", "info"], capture_output=True).returncode:
        pytest.skip("no Docker engine answers")
    if subprocess.run(["docker", "ps", "-q", "--filter", "label=kinspect.lab"], capture_output=True,
                      text=True).stdout.strip():
        pytest.skip("a kinspect docker lab runs: doctor asks its broker instead")
    subnet = subprocess.run(["docker", "network", "inspect", "bridge", "--format",
                             "{{range .IPAM.Config}}{{.Subnet}} {{end}}"], capture_output=True,
                            text=True, check=True).stdout.split()[0]
    routed = bool(subprocess.run(["ip", "-4", "route", "show", "exact", subnet], capture_output=True,
                                 text=True).stdout.strip())
    found = check(parsed(doctor()), "docker-routing")
    assert found["status"] == ("ok" if routed else "missing"), found
    assert subnet in found["found"]


@needs_root
def test_without_docker_the_engine_is_missing_with_a_fix() -> None:
    env = without_docker()
    assert subprocess.run(["docker", "-H", NO_ENGINE, "info"], capture_output=True).returncode != 0 \
        if shutil.which("docker") else True
    answer = parsed(doctor(env))
    engine = check(answer, "docker-engine")
    assert engine["status"] == "missing" and NO_ENGINE in engine["found"] and engine["fix"]
    assert check(answer, "docker-routing")["status"] == "unknown"
    docker_lab = path(answer, "docker lab")
    assert not docker_lab["works"] and "docker-engine" in docker_lab["blocked_by"]
    process_lab = path(answer, FAULTS_PATH)
    assert answer["summary"]["exit_code"] == (0 if process_lab["works"] else 1)

    text = doctor(env, json_out=False)
    lines = text.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(r"\s+MISSING\s+docker-engine\s", line))
    assert lines[at + 1].strip() == f"fix: {engine['fix']}"
    assert "\033[" not in text.stdout  # not a terminal: no colour
    assert lines[-1].startswith(f"exit {text.returncode}:")


@pytest.fixture(scope="module")
def nobody(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python, home) for nobody: a venv they can run and a HOME of their own."""
    base = tmp_path_factory.mktemp("doctor-nobody")
    return user_python(base), base / "home"


def test_as_nobody_the_root_and_userns_checks_agree_with_unshare(nobody: tuple[Path, Path]) -> None:
    python, home = nobody
    env = user_env(home)
    done = run_as(NOBODY, NOBODY, [str(python), "-m", "kinspect", "doctor", "--json"], env)
    answer = parsed(done)
    root = check(answer, "root")
    assert root["status"] != "ok" and f"uid {NOBODY}" in root["found"]

    unshare = run_as(NOBODY, NOBODY, ["unshare", "--user", "--map-root-user", "--net", "true"], env)
    userns = check(answer, "user-namespaces")
    assert userns["status"] == ("ok" if unshare.returncode == 0 else "missing"), (userns, unshare.stderr)
    if unshare.returncode != 0:
        assert userns["fix"]

    engine = run_as(NOBODY, NOBODY, ["docker", "info"], {**env, "PATH": env["PATH"] + ":/usr/local/bin"})
    assert check(answer, "docker-engine")["status"] == ("ok" if engine.returncode == 0 else "missing")
    if unshare.returncode == 0 and check(answer, "partitions")["status"] == "ok":
        assert path(answer, FAULTS_PATH)["via"] == ["user-namespaces"]


def test_as_nobody_without_unshare_or_docker_exit_1_names_what_is_missing(
        nobody: tuple[Path, Path], tmp_path: Path) -> None:
    """No user namespaces (no unshare on PATH), no root, no engine: no lab with network faults."""
    python, home = nobody
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("java", "mvn", "ip", "tc", "iptables", "sh"):
        if shutil.which(tool):
            (tools / tool).symlink_to(shutil.which(tool))  # type: ignore[arg-type]
    reachable(tools)
    env = user_env(home, path=str(tools), DOCKER_HOST=NO_ENGINE)
    done = run_as(NOBODY, NOBODY, [str(python), "-m", "kinspect", "doctor", "--json"], env)
    answer = parsed(done)
    assert done.returncode == 1
    assert answer["summary"]["network_faults"] is None
    assert "root or user-namespaces" in answer["summary"]["missing"]
    assert "docker-engine" in answer["summary"]["missing"]
    assert check(answer, "user-namespaces")["status"] == "missing"
    assert check(answer, "partitions")["status"] == "unknown"
    text = run_as(NOBODY, NOBODY, [str(python), "-m", "kinspect", "doctor"], env)
    assert text.returncode == 1
    assert text.stdout.splitlines()[-1].startswith("exit 1: no lab with network faults here; missing: ")


def test_a_path_needs_root_ok_not_a_warned_root() -> None:
    """Root's WARN ("not root") does not stand in for root; the user namespace does."""
    base = [Check(name, Status.OK, "") for name in (
        "network-tools", "partitions", "slow-links", "java", "kafka-jars", "memory", "ports")]
    not_root = Check("root", Status.WARN, "uid 1000 (not root)")
    blocked = summarise([*base, not_root, Check("user-namespaces", Status.MISSING, "")])
    assert blocked.exit_code == 1 and blocked.missing == ("root or user-namespaces",)
    rootless = summarise([*base, not_root, Check("user-namespaces", Status.OK, "")])
    assert rootless.exit_code == 0 and rootless.faults_path is not None
    assert rootless.faults_path.via == ("user-namespaces",)


def test_a_light_install_names_the_extras_to_install() -> None:
    """Without the docker SDK and pyspark (imports made to fail, as in a light install)."""
    code = ("import sys; sys.modules['docker'] = None; sys.modules['pyspark'] = None; "
            "from kinspect.cli import main; sys.exit(main(['doctor', '--json']))")
    answer = parsed(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   timeout=120))
    assert check(answer, "docker-sdk")["status"] == "missing"
    assert check(answer, "docker-sdk")["fix"] == "pip install 'kinspect[lab]'"
    assert check(answer, "pyspark")["fix"] == "pip install 'kinspect[postmortem]'"
    assert check(answer, "docker-routing")["status"] == "unknown"
    assert check(answer, "extras")["status"] == "warn"
    assert "docker-sdk" in path(answer, "docker lab")["blocked_by"]
    assert path(answer, "post-mortem")["blocked_by"] == ["pyspark"]
