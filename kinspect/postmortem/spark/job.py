"""The Spark session a post-mortem runs on: quiet, on small heaps, local or on a cluster.

In: a master URL, memory and extra settings. Out: a SparkSession. The job's frames (ledger,
final log, kept replicas) are the matching's (kinspect/postmortem/matching/frames.py).
"""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

QUIET_LOG4J2 = """status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
"""


def _quiet_log4j() -> Path:
    """Written at run time, so it works from a wheel, a checkout or a zip alike."""
    path = Path(tempfile.gettempdir()) / f"kinspect-log4j2-quiet-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != QUIET_LOG4J2:
        path.write_text(QUIET_LOG4J2)
    return path


@contextmanager
def _quiet_fd2(quiet: bool) -> Any:
    """The JVM inherits fd 2 at launch; pointing it at /dev/null keeps Spark's noise out."""
    if not quiet:
        yield
        return
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def start_spark(master: str = "local[2]", verbose: bool = False, memory: str = "2g",
                conf: dict[str, str] | None = None) -> Any:
    """A SparkSession that stays quiet: no UI, no progress bars, log4j at ERROR.

    On a cluster (spark://, yarn, k8s://) the master is checked first, executors get this
    Python, and the session comes back once an executor registered (cluster.py says why);
    sc://… is a Spark Connect server's session.
    """
    from pyspark.sql import SparkSession

    from kinspect.postmortem.spark import cluster

    cluster.check_master(master)
    if master.startswith("sc://"):  # Spark Connect: no JVM here, the server's session
        return cluster.connect(master, conf or {})
    local = master.startswith("local")
    extra = cluster.cluster_conf(master, conf or {})
    cluster.executor_python(extra)
    _add_java_options(extra, local, verbose)
    builder = _configured(SparkSession.builder.master(master), memory, local)
    for key, value in extra.items():
        builder = builder.config(key, value)
    with _quiet_fd2(not verbose):
        spark = builder.getOrCreate()
    level = "ERROR"
    if verbose:
        level = "INFO"
    spark.sparkContext.setLogLevel(level)
    if not local:
        cluster.wait_for_executors(spark, master)
    return spark


def _configured(builder: Any, memory: str, local: bool) -> Any:
    """The session's own settings; a cluster keeps Spark's parallelism (its executors' cores),
    and AQE may shrink cached results there too."""
    shuffle_partitions = "64"
    if local:
        shuffle_partitions = "4"
    builder = (builder.appName("kinspect-postmortem")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", shuffle_partitions)
               .config("spark.driver.memory", memory)
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC"))
    if local:
        return builder.config("spark.default.parallelism", "4")
    return builder.config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")


DRIVER_OPTIONS, EXECUTOR_OPTIONS = "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"


def _add_java_options(extra: dict[str, str], local: bool, verbose: bool) -> None:
    """The JVMs' options, after any given. On a cluster the executors' JVMs and logs are the
    cluster's: only the driver is ours."""
    from kinspect.postmortem.spark import jvm_archive

    keys = [DRIVER_OPTIONS]
    if local:
        keys.append(EXECUTOR_OPTIONS)
    for key in keys:
        given = extra.get(key, "")
        options = _collector(given, local)
        if key == DRIVER_OPTIONS:  # the driver's classes from their archive (jvm_archive.py)
            options += jvm_archive.driver_options()
        if not verbose:
            options.append(f"-Dlog4j2.configurationFile=file:{_quiet_log4j()}")
        if not options:
            continue
        if given:
            options.insert(0, given)
        extra[key] = " ".join(options)


def _collector(given: str, local: bool) -> list[str]:
    """A batch job on a small heap: the throughput collector beats G1 here (~20 % on the
    bench), unless a collector was asked for (two make the JVM refuse to start)."""
    if not local:
        return []
    if re.search(r"-XX:\+Use\w*GC\b", given):
        return []
    return ["-XX:+UseParallelGC"]
