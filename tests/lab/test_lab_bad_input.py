"""Bad input: one line on stderr, exit code 2, no traceback, the lab left as it was."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kinspect
from tests.helpers.errors import one_line_error

pytestmark = pytest.mark.backends("process", "docker")  # refused alike on both


@pytest.mark.lab
def test_unknown_node_and_bad_groups(lab: dict[str, Any]) -> None:
    assert "unknown node 'kafka9'" in one_line_error(kinspect("lab", "kill", "kafka9",
                                                              check=False))
    assert "names a node twice" in one_line_error(
        kinspect("lab", "partition", "kafka1,kafka1", check=False))
    assert "unknown node" in one_line_error(kinspect("lab", "partition", "kafka1,nope",
                                                     check=False))
    assert "nothing would be cut" in one_line_error(
        kinspect("lab", "partition", "zk1,kafka1,kafka2,kafka3", check=False))
    assert "already running" in one_line_error(kinspect("lab", "start", "kafka1", check=False))
    assert "--broker-config expects key=value" in one_line_error(
        kinspect("lab", "reset", "--broker-config", "oops", check=False))
    after = kinspect("lab", "status", "--json").stdout
    assert after.count('"running"') == 4 and '"groups": []' in after


def test_no_lab_running(tmp_path: Path) -> None:
    env = {"KINSPECT_HOME": str(tmp_path)}
    for args in (["lab", "status"], ["lab", "kill", "kafka1"], ["lab", "heal"]):
        assert "no lab is running" in one_line_error(kinspect(*args, env=env, check=False))
    assert kinspect("lab", "down", env=env).returncode == 0


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    env = {"KINSPECT_HOME": str(tmp_path)}
    one_line_error(kinspect("lab", "up", "--preset", "nope", env=env, check=False))
    one_line_error(kinspect("lab", "isolate", "kafka1", "--from", "moon", env=env, check=False))
    assert "between 1 and 9" in one_line_error(
        kinspect("lab", "up", "--brokers", "0", env=env, check=False))


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {"KINSPECT_HOME": str(tmp_path)}
        proc = kinspect("lab", "up", "--network", "loopback", "--base-port", str(port),
                        env=env, check=False)
        assert "already in use" in one_line_error(proc)
    assert not (tmp_path / "lab" / "state.json").exists()


def _bin_with(tmp_path: Path, **tools: str) -> str:
    """A PATH holding only the named tools (scripts standing in for missing or broken ones)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, script in tools.items():
        path = bin_dir / name
        path.write_text(script)
        path.chmod(0o755)
    return str(bin_dir)


def test_java_missing(tmp_path: Path) -> None:
    env = {"PATH": _bin_with(tmp_path), "KINSPECT_CACHE": str(tmp_path / "cache")}
    assert "Java is not installed" in one_line_error(kinspect("lab", "fetch", env=env,
                                                              check=False))


def test_maven_missing(tmp_path: Path) -> None:
    java = "#!/bin/sh\nexec /usr/bin/java \"$@\"\n"
    env = {"PATH": _bin_with(tmp_path, java=java), "KINSPECT_CACHE": str(tmp_path / "cache")}
    assert "Maven is not installed" in one_line_error(kinspect("lab", "fetch", env=env,
                                                               check=False))


def test_failed_fetch(tmp_path: Path) -> None:
    """A stand-in `mvn` that fails as Maven does when Maven Central cannot be reached."""
    fake_mvn = ("#!/bin/sh\necho '[ERROR] Failed to execute goal: Could not resolve "
                "dependencies: Network is unreachable'\nexit 1\n")
    java = "#!/bin/sh\nexec /usr/bin/java \"$@\"\n"
    env = {"PATH": _bin_with(tmp_path, java=java, mvn=fake_mvn),
           "KINSPECT_CACHE": str(tmp_path / "cache")}
    line = one_line_error(kinspect("lab", "fetch", env=env, check=False))
    assert "fetching Kafka" in line and "Could not resolve" in line
    assert not any((tmp_path / "cache").glob("kafka-*/.complete"))
    assert os.path.exists(tmp_path / "cache")


def test_no_docker_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--backend docker without an engine is a one-line error; auto falls back and says why."""
    from kinspect.lab import choose_backend

    env = {"KINSPECT_HOME": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock",
           "KINSPECT_BACKEND": ""}
    line = one_line_error(kinspect("lab", "up", "--backend", "docker", env=env, check=False))
    assert "no Docker engine answers at unix://" in line
    assert not (tmp_path / "lab" / "state.json").exists()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    said: list[str] = []
    assert choose_backend(said.append) == "process"
    assert said and said[0].startswith("backend: process (no Docker engine answers")
    # a bad option is refused before any backend is chosen: one line, no backend line
    assert "between 1 and 9" in one_line_error(kinspect("lab", "up", "--brokers", "0", env=env,
                                                        check=False))


def test_auto_prefers_a_docker_engine_that_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from kinspect.lab import choose_backend
    from kinspect.lab.docker_engine import engine_problem

    if engine_problem():
        pytest.skip("no Docker engine answers here")
    said: list[str] = []
    monkeypatch.setenv("KINSPECT_BACKEND", "")
    assert choose_backend(said.append) == "docker"
    assert said[-1].startswith("backend: docker (a Docker engine answers")
    monkeypatch.setenv("KINSPECT_BACKEND", "process")
    assert choose_backend(said.append) == "process"
    assert said[-1] == "backend: process (KINSPECT_BACKEND)"
