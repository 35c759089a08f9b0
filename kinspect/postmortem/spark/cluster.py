"""What the post-mortem needs on a Spark cluster that local mode gives for free.

In local[…] everything runs in this process. On a cluster (spark://, yarn, k8s://) executors are
other processes, maybe on other machines: they must run a Python that matches ours (a DataFrame
made from a Python list is unpickled there), reach the driver, and exist at all. A standalone
master with no worker free for us leaves a job waiting forever, and Spark says so only in a
warning our quiet logging hides; so the session is handed back only once an executor is there.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from kinspect.errors import KinspectError

EXECUTOR_WAIT_S = 120.0
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
CONNECT_PORT = 15002  # Spark Connect's default


def master_addresses(master: str) -> list[tuple[str, int]]:
    """host:port of each master of spark://h1:p1[,h2:p2] (several with ZooKeeper HA), or of
    the Spark Connect server of sc://host[:port][/;params]."""
    if master.startswith("sc://"):
        items, default = [master.removeprefix("sc://").split("/", 1)[0]], CONNECT_PORT
    elif master.startswith("spark://"):
        items, default = master.removeprefix("spark://").split(","), None
    else:
        return []
    out = []
    for item in items:
        host, colon, port = item.rpartition(":") if not item.endswith("]") else (item, "", "")
        if not colon and default:
            host, port = item, str(default)
        if not host or not port.isdigit():
            raise KinspectError(f"{master!r}: {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    return out


def check_master(master: str, timeout_s: float = 3.0) -> None:
    """Refuse at once a standalone master nobody answers for: Spark itself retries for a minute
    and then fails with a stopped context, far from the cause."""
    addresses = master_addresses(master)
    reasons = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            return
        except OSError as exc:
            reasons.append(f"{host}:{port} ({exc.strerror or type(exc).__name__})")
    if addresses:
        what = "Spark Connect server" if master.startswith("sc://") else "Spark master"
        raise KinspectError(f"no {what} answers at {', '.join(reasons)}")


def connect(url: str, conf: dict[str, str]) -> Any:
    """A Spark Connect session. The server owns the JVM, the executors and their logs; from
    here only this session's SQL settings can be set."""
    import pyspark

    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:
        raise KinspectError(f"Spark Connect needs the packages of pyspark[connect]: "
                            f"{str(exc).strip().splitlines()[0]} (pip install "
                            f"'pyspark[connect]=={pyspark.__version__}')") from None
    from pyspark.sql import SparkSession

    settings = {"spark.sql.shuffle.partitions": "64", "spark.sql.adaptive.enabled": "true",
                "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
                "spark.sql.session.timeZone": "UTC", **conf}
    builder = SparkSession.builder.remote(url)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def cluster_conf(master: str, conf: dict[str, str]) -> dict[str, str]:
    """conf plus what a cluster needs unless asked otherwise: a master on loopback has its
    executors on this machine, so the driver listens there too, not on every interface."""
    out = dict(conf)
    hosts = {host for host, _ in master_addresses(master)}
    if hosts and hosts <= LOOPBACK:
        out.setdefault("spark.driver.host", "127.0.0.1")
        out.setdefault("spark.driver.bindAddress", "127.0.0.1")
    return out


def executor_python(conf: dict[str, str]) -> None:
    """Executors run the Python the driver names, which pyspark takes from PYSPARK_PYTHON only
    (default: whatever `python3` is on their PATH). spark.pyspark.python wins, as with
    spark-submit; else this interpreter, the one that has pyspark."""
    python = conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ["PYSPARK_PYTHON"] = python


def wait_for_executors(spark: Any, master: str, timeout_s: float = EXECUTOR_WAIT_S) -> None:
    """Return once one executor registered; else stop the session and say why."""
    sc = spark.sparkContext
    if sc.getConf().get("spark.dynamicAllocation.enabled", "false") == "true":
        return  # executors come with the first job, not before
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sc._jsc.sc().isStopped():
            raise KinspectError(f"{master} ended the application before it ran")
        if len(sc._jsc.sc().statusTracker().getExecutorInfos()) > 1:  # the driver is one
            return
        time.sleep(0.25)
    memory = sc.getConf().get("spark.executor.memory", "1g")
    spark.stop()
    raise KinspectError(f"no executor registered with {master} in {timeout_s:.0f} s: does the "
                        f"cluster have a worker with a free core and {memory} (spark.executor."
                        "memory) for it?")
