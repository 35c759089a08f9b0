"""Spark services for tests, from pyspark's own jars: a standalone cluster (one master and N
workers) or a Spark Connect server (its jar ships with pyspark 4, no download).

Everything listens on 127.0.0.1 only, on ports the JVMs pick (port 0; the master's log says
which), so two runs never collide. Each JVM leads a process group of its own, which holds the
executors a worker starts too: stopping kills the groups, and `leftovers` says if any survived.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MASTER_AT = re.compile(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")
CONNECT_AT = re.compile(r"Spark Connect server started at: (127\.0\.0\.1:\d+)")
REGISTERED = "Registering worker 127.0.0.1:"
# For JVMs that live a minute: C1 only halves the CPU a test run takes (70 s -> 33 s here).
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def java_home() -> str:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("no java on PATH and no JAVA_HOME")
    return str(Path(java).resolve().parent.parent)


def cluster_env(root: Path) -> dict[str, str]:
    """Loopback only, no spark-env.sh or config of anyone else's, and on PATH a `python3` and a
    `python` that refuse to run: executors get the driver's interpreter only if kinspect names
    it (PYSPARK_PYTHON), as they must on a machine whose python3 is another one."""
    (root / "conf").mkdir(parents=True, exist_ok=True)
    (root / "bin").mkdir(exist_ok=True)
    for name in ("python3", "python"):
        stub = root / "bin" / name
        stub.write_text("#!/bin/sh\necho 'not this Python: the driver names its own' >&2\nexit 3\n")
        stub.chmod(0o755)
    return {
        "PATH": os.pathsep.join([str(root / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(root), "LANG": "C.UTF-8", "TZ": "UTC",
        "JAVA_HOME": java_home(), "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(root / "conf"), "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(root / "tmp"), "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": SHORT_LIVED_JVM,
        # the REST submission server would take the fixed port 6066
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


@dataclass
class SparkServices:
    root: Path
    url: str = ""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _spawn(self, name: str, *args: str, script: str = "spark-class",
               env: dict[str, str] | None = None) -> None:
        (self.root / "tmp").mkdir(exist_ok=True)
        with open(self.root / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                ["/bin/bash", str(spark_home() / "bin" / script), *args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.root,
                env={**cluster_env(self.root), **(env or {})}, start_new_session=True)

    def _wait(self, what: str, done: Callable[[], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            dead = [name for name, p in self.procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                tails = "\n".join(f"--- {n}\n" + self.log(n)[-2000:] for n in self.procs)
                raise RuntimeError(f"spark services: waiting for {what}: "
                                   f"{'exited: ' + ', '.join(dead) if dead else 'timed out'}\n{tails}")
            time.sleep(0.2)

    def start(self, workers: int = 2, cores: int = 1, memory: str = "1g",
              timeout_s: float = 120.0) -> None:
        """The master, then the workers; back when every worker registered with the master."""
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", "0", "--webui-port", "0")
        self._wait("the master", lambda: MASTER_AT.search(self.log("master")) is not None,
                   timeout_s)
        match = MASTER_AT.search(self.log("master"))
        assert match is not None
        self.url = match.group(1)
        for n in range(1, workers + 1):
            work = self.root / f"work{n}"
            work.mkdir(exist_ok=True)
            self._spawn(f"worker{n}", "org.apache.spark.deploy.worker.Worker", self.url,
                        "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                        "--cores", str(cores), "--memory", memory, "--work-dir", str(work))
        self._wait(f"{workers} workers registering",
                   lambda: self.log("master").count(REGISTERED) >= workers, timeout_s)

    def start_connect(self, master: str = "local[2]", timeout_s: float = 120.0) -> None:
        """A Spark Connect server (its own driver, on `master`); url is its sc://."""
        self._spawn("connect", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                    "--name", "Spark Connect server", "--master", master,
                    "--driver-java-options", SHORT_LIVED_JVM,
                    "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                    "--conf", "spark.connect.grpc.binding.port=0", "--conf", "spark.ui.enabled=false",
                    "spark-internal", script="spark-submit",
                    env={"SPARK_DAEMON_MEMORY": "1g"})  # it runs the job: a driver's heap
        self._wait("the Connect server", lambda: CONNECT_AT.search(self.log("connect")) is not None,
                   timeout_s)
        match = CONNECT_AT.search(self.log("connect"))
        assert match is not None
        self.url = f"sc://{match.group(1)}"

    def stop(self) -> None:
        """SIGTERM to every group, SIGKILL to what is left after 10 s."""
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            for proc in self.procs.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + grace
            while self.leftovers() and time.monotonic() < deadline:
                time.sleep(0.2)
            if not self.leftovers():
                break
        for proc in self.procs.values():
            proc.wait(timeout=5)

    def leftovers(self) -> list[str]:
        """`ps` lines of processes still in our groups (the executors included)."""
        groups = {str(p.pid) for p in self.procs.values()}
        out = subprocess.run(["ps", "-eo", "pgid=,pid=,stat=,args="], capture_output=True,
                             text=True, check=True).stdout
        rows = [line.split(None, 3) for line in out.splitlines()]
        return [" ".join(row)[:160] for row in rows  # zombies: dead, waiting for our wait()
                if len(row) >= 3 and row[0] in groups and not row[2].startswith("Z")]
