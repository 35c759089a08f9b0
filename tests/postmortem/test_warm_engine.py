"""The warm engine (`kinspect postmortem --serve`) as the TUI uses it: a process of its own,
warmed once, then post-mortems through its socket that say exactly what a cold run says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinspect.postmortem.spark.spark_client import engine_socket, engine_status
from kinspect.postmortem.warm import LOST_FROM, LOST_TO, make_warmup_run
from tests.helpers.rundirs import EXPECTED_A, scenario_a

pytestmark = [pytest.mark.spark, pytest.mark.slow]
READY_WITHIN_S = 240  # a JVM and the warm-up run on a busy 2-core machine


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinspect", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "KINSPECT_HOME": str(home)})


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    home = tmp_path_factory.mktemp("home")
    sleeper = subprocess.Popen(["sleep", "600"])  # stands in for the TUI: the engine's parent
    log = open(home / "engine.log", "wb")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen([sys.executable, "-m", "kinspect", "postmortem", "--serve",
                             "--parent", str(sleeper.pid)], stdout=log, stderr=log,
                            env={**os.environ, "KINSPECT_HOME": str(home)},
                            start_new_session=True)
    socket = engine_socket(home)
    deadline = time.monotonic() + READY_WITHIN_S
    status = None
    while time.monotonic() < deadline:
        status = engine_status(socket)
        if status is not None and status.state != "starting":
            break
        time.sleep(1)
    try:
        assert status is not None and status.state == "ready", (home / "engine.log").read_text()
        yield home, sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()
        try:
            proc.wait(timeout=60)  # its parent is gone: it ends by itself
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()
        assert not socket.exists()


def test_a_post_mortem_on_the_warm_engine_says_what_a_cold_one_says(
        engine: tuple[Path, int], tmp_path: Path) -> None:
    home, _ = engine
    run = scenario_a(tmp_path / "run")
    warm = _cli("postmortem", str(run), "--json", home=home)
    assert warm.returncode == 0, warm.stderr
    assert "on the warm Spark engine" in warm.stderr
    report = json.loads(warm.stdout)
    assert {k: report[k] for k in EXPECTED_A} == EXPECTED_A
    assert (run / "postmortem" / "report.json").is_file()
    cold = _cli("postmortem", str(run), "--json", "--cold", "--out", str(tmp_path / "cold"),
                home=home)
    assert cold.returncode == 0, cold.stderr
    assert "on the warm Spark engine" not in cold.stderr
    cold_report = json.loads(cold.stdout)
    for key in ("sent", "acked", "acked_lost", "partitions", "lost_ranges", "attribution",
                "timeline", "unavailable", "explanation"):
        assert report[key] == cold_report[key], key
    assert engine_status(engine_socket(home)).jobs >= 1  # type: ignore[union-attr]


def test_bad_input_is_one_line_and_the_engine_keeps_serving(engine: tuple[Path, int],
                                                           tmp_path: Path) -> None:
    home, _ = engine
    not_a_run = tmp_path / "empty"
    not_a_run.mkdir()
    bad = _cli("postmortem", str(not_a_run), home=home)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith("kinspect: error: ")
    second = _cli("postmortem", "--serve", home=home)
    assert second.returncode == 2 and "already runs" in second.stderr
    run = make_warmup_run(tmp_path / "run")
    good = _cli("postmortem", str(run), "--json", "--no-chart", home=home)
    assert good.returncode == 0, good.stderr
    # the warm-up run's planted window, less the sends it failed (every 97th, from the 5th)
    planted = sum(1 for seq in range(LOST_FROM, LOST_TO) if seq % 97 != 5)
    assert json.loads(good.stdout)["acked_lost"] == planted
