"""The post-mortem on a real Spark cluster: a standalone master and two workers from pyspark's own
jars, on loopback. The same run dir must give the same report there as on local[2]; and through
a Spark Connect server too, where pyspark[connect]'s packages are installed.

The workers' PATH has no Python at all: executors run Python (a DataFrame made from a list is
unpickled there), so the job passes only if kinspect hands them its own interpreter.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinspect.errors import KinspectError
from tests.helpers.rundirs import EXPECTED_A, clean_run, scenario_a
from tests.helpers.standalone import SHORT_LIVED_JVM, SparkServices

VOLATILE = {"out", "seconds"}  # where the report was written and how long it took
SAME_ANSWERS_LESS_CPU = ["--conf", f"spark.driver.extraJavaOptions={SHORT_LIVED_JVM}"]


def postmortem(run: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """`kinspect postmortem RUN --json` with nothing of the environment's Spark or engine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["KINSPECT_HOME"] = str(cwd / "home")  # no warm engine of anyone's
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # this checkout's kinspect
    return subprocess.Popen([sys.executable, "-m", "kinspect", "postmortem", str(run), "--json",
                             "--no-chart", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)


def finished(proc: subprocess.Popen[str], timeout_s: float = 300) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "WARN" not in err, err
    report: dict[str, Any] = json.loads(out)
    return report


def assert_same_report(reference: dict[str, Any], other: dict[str, Any]) -> None:
    assert {k: reference[k] for k in EXPECTED_A} == EXPECTED_A  # real loss, known exactly
    differ = sorted(k for k in reference.keys() | other.keys()
                    if k not in VOLATILE and reference.get(k) != other.get(k))
    assert not differ, {k: (reference.get(k), other.get(k)) for k in differ}


def services(root: Path, start: str) -> Iterator[SparkServices]:
    """Started, yielded, stopped, and checked gone: no JVM of ours survives the test."""
    spark = SparkServices(root)
    try:
        if start == "standalone":
            spark.start(workers=2, cores=1, memory="1g")
        else:
            spark.start_connect("local[2]")
        yield spark
    finally:
        spark.stop()
    left = spark.leftovers()
    assert not left, f"processes of the {start} services survived: {left}"


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkServices]:
    """A master and two workers (1 core, 1 GiB each)."""
    yield from services(tmp_path_factory.mktemp("standalone"), "standalone")


@pytest.fixture
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkServices]:
    yield from services(tmp_path_factory.mktemp("connect"), "connect")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.extended  # ~50 s of a Spark master and worker: make matrix runs it
def test_a_standalone_cluster_gives_the_local_report(tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    run = scenario_a(tmp_path / "run").resolve()
    started = time.monotonic()
    local = postmortem(run, tmp_path, "--out", str(tmp_path / "out-local"), *SAME_ANSWERS_LESS_CPU)
    cluster: SparkServices = request.getfixturevalue("cluster")  # starts while local[2] runs
    up = time.monotonic() - started
    reference = finished(local)
    events = tmp_path / "events"
    events.mkdir()
    # A relative run dir: kinspect makes it absolute for the executors. Both executors are
    # waited for (cores.max, ratio 1) so the work is spread over the two workers.
    remote = finished(postmortem(Path("run"), tmp_path, "--master", cluster.url,
                                 "--out", "out-cluster", *SAME_ANSWERS_LESS_CPU,
                                 "--conf", "spark.executor.memory=512m",
                                 "--conf", f"spark.executor.extraJavaOptions={SHORT_LIVED_JVM}",
                                 "--conf", "spark.cores.max=2",
                                 "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
                                 "--conf", "spark.eventLog.enabled=true",
                                 "--conf", "spark.eventLog.compress=false",
                                 "--conf", f"spark.eventLog.dir={events.as_uri()}"))
    print(f"cluster up {up:.1f} s; local[2] {reference['seconds']} s; standalone "
          f"{remote['seconds']} s; test {time.monotonic() - started:.1f} s")
    assert remote["run_dir"] == str(run) and remote["out"] == str(tmp_path / "out-cluster")
    assert_same_report(reference, remote)
    executors = set()
    for log in events.rglob("events_*"):  # rolling event logs: a dir per application
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                executors.add((event["Task Info"]["Executor ID"], event["Task Info"]["Host"]))
    assert {host for _, host in executors} == {"127.0.0.1"} and len(executors) == 2, executors
    assert all(list((cluster.root / f"work{n}").glob("app-*/*/stderr")) for n in (1, 2))


@pytest.mark.spark
@pytest.mark.slow
def test_spark_connect_gives_the_local_report(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """`--remote sc://…`: the same job through a Spark Connect server's session."""
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:
        pytest.skip(f"pyspark[connect]'s packages are not installed: {exc}")
    run = scenario_a(tmp_path / "run").resolve()
    local = postmortem(run, tmp_path, "--out", str(tmp_path / "out-local"), *SAME_ANSWERS_LESS_CPU)
    server: SparkServices = request.getfixturevalue("connect_server")
    reference = finished(local)
    remote = finished(postmortem(Path("run"), tmp_path, "--remote", server.url,
                                 "--out", "out-connect"))
    assert remote["run_dir"] == str(run)
    assert_same_report(reference, remote)


def test_an_unreachable_master_is_one_line(tmp_path: Path) -> None:
    """Refused before any JVM starts, not after Spark's minute of retries."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    run = clean_run(tmp_path / "run")
    for flag, url, what in (("--master", f"spark://127.0.0.1:{port}", "Spark master"),
                            ("--remote", f"sc://127.0.0.1:{port}", "Spark Connect server")):
        started = time.monotonic()
        out, err = postmortem(run, tmp_path, flag, url).communicate(timeout=120)
        errors = [line for line in err.splitlines() if line.startswith("kinspect: error:")]
        assert errors == [f"kinspect: error: cannot start Spark ({url}): no {what} answers at "
                          f"127.0.0.1:{port} (Connection refused)"], err
        assert out == "" and "Traceback" not in err and time.monotonic() - started < 60


def test_a_run_dir_the_executors_cannot_read_is_named() -> None:
    """What Spark says when an executor cannot open a file the driver listed, turned into what
    to do about it (seen with a worker whose mount namespace hid the run dir)."""
    from kinspect.cli.postmortem import _shared_paths

    spark_says = ("An error occurred while calling o471.collectToPython.\n: org.apache.spark."
                  "SparkException: [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while "
                  "reading file file:///r/run/ledger/p000-000001.parquet. File does not exist.")
    with pytest.raises(KinspectError) as caught, _shared_paths("spark://10.0.0.1:7077"):
        try:
            raise RuntimeError(spark_says)
        except RuntimeError:
            raise KinspectError("the Spark job failed: An error occurred while calling "
                                "o471.collectToPython.") from None
    assert str(caught.value).startswith("the executors of spark://10.0.0.1:7077 cannot read "
                                        "file:///r/run/ledger/p000-000001.parquet: on a cluster "
                                        "the run dir (and --out) must be at the same path")
    with pytest.raises(KinspectError, match=r"^the Spark job failed"), _shared_paths("local[2]"):
        try:
            raise RuntimeError(spark_says)
        except RuntimeError:
            raise KinspectError("the Spark job failed") from None
