"""The warm engine's socket, with a stand-in server (named as such) instead of Spark: what the
client believes, and whose socket it agrees to ask."""

from __future__ import annotations

import json
import os
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinspect.postmortem.spark.spark_client import engine_socket, engine_status, postmortem_if_warm


class FakeEngineHandler(socketserver.StreamRequestHandler):
    """A fake engine: `ready` to every status question; a job it starts, then dies."""

    def handle(self) -> None:
        request = json.loads(self.rfile.readline())
        if request["op"] == "status":
            answer = {"state": "ready", "master": "local[2]", "pid": 4242, "jobs": 3}
            self.wfile.write(json.dumps(answer).encode() + b"\n")
        else:
            self.wfile.write(b'{"say": "reading ledger"}\n')


@pytest.fixture
def fake_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("KINSPECT_HOME", str(tmp_path / "home"))
    path = engine_socket()
    server = socketserver.UnixStreamServer(str(path), FakeEngineHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield path
    server.shutdown()
    server.server_close()


def test_a_running_engine_says_its_state(fake_engine: Path) -> None:
    status = engine_status(fake_engine)
    assert status is not None
    assert (status.state, status.master, status.pid, status.jobs) == ("ready", "local[2]", 4242, 3)
    assert status.usable


def test_an_engine_that_dies_mid_job_leaves_the_job_to_a_cold_run(fake_engine: Path,
                                                                  tmp_path: Path) -> None:
    said: list[str] = []
    assert postmortem_if_warm(tmp_path, say=said.append) is None
    assert said[0] == "post-mortem on the warm Spark engine (pid 4242, ready)"
    assert "reading ledger" in said
    assert said[-1].startswith("the warm Spark engine went away during the post-mortem: running")


def test_an_engine_on_another_master_is_not_asked(fake_engine: Path, tmp_path: Path) -> None:
    said: list[str] = []
    assert postmortem_if_warm(tmp_path, say=said.append, master="spark://elsewhere:7077") is None
    assert said == []


def test_no_engine_is_none_not_an_error(tmp_path: Path) -> None:
    assert engine_status(tmp_path / "absent.sock") is None
    (tmp_path / "not-a-socket.sock").write_text("")
    assert engine_status(tmp_path / "not-a-socket.sock") is None


@pytest.mark.skipif(os.getuid() != 0, reason="making a socket another user's needs root")
def test_another_users_socket_is_not_asked(fake_engine: Path) -> None:
    os.chown(fake_engine, 65534, 65534)
    assert engine_status(fake_engine) is None
