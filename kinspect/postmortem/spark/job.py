"""The Spark session and the job's inputs as DataFrames (ledger, final log, kept replicas).

Plan, chosen for a 2-core laptop and for a cluster alike (no Python UDFs, nothing big
collected): a message id is one long key (producer << 40 | seq); the match of ledger and
final log is one aggregate per side into runs of 64 ids (match.py), the rest by small
queries (queries.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kinspect.load.rundir import FINAL_LOG_DIR, LEDGER_DIR
from kinspect.postmortem.evidence.inputs import RunInputs

KEY_SHIFT = 40
ACKED, FAILED, UNKNOWN = 0, 1, 2
Progress = Callable[[str], None]
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
    import re

    from pyspark.sql import SparkSession

    from kinspect.postmortem.spark import cluster, jvm_archive

    local = master.startswith("local")
    cluster.check_master(master)
    if master.startswith("sc://"):  # Spark Connect: no JVM here, the server's session
        return cluster.connect(master, conf or {})
    extra = cluster.cluster_conf(master, conf or {})
    cluster.executor_python(extra)
    builder = (SparkSession.builder.master(master).appName("kinspect-postmortem")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4" if local else "64")
               .config("spark.driver.memory", memory)
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC"))
    if local:
        builder = builder.config("spark.default.parallelism", "4")
    else:  # parallelism: Spark's own (the executors' cores); AQE may shrink cached results too
        builder = builder.config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
    # A batch job on a small heap: the throughput collector beats G1 here (~20 % on the bench),
    # unless a collector was asked for (two make the JVM refuse to start). On a cluster the
    # executors' JVMs and logs are the cluster's: only the driver is ours.
    keys = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
    for key in keys if local else keys[:1]:
        given = extra.get(key, "")
        options = ["-XX:+UseParallelGC"] if local and not re.search(r"-XX:\+Use\w*GC\b", given) else []
        if key == keys[0]:  # the driver's classes from their archive (jvm_archive.py)
            options += jvm_archive.driver_options()
        if not verbose:
            options.append(f"-Dlog4j2.configurationFile=file:{_quiet_log4j()}")
        if options:
            extra[key] = " ".join([given, *options] if given else options)
    for key, value in extra.items():
        builder = builder.config(key, value)
    with _quiet_fd2(not verbose):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    if not local:
        cluster.wait_for_executors(spark, master)
    return spark


def _schema(arrow_schema: Any) -> Any:
    from pyspark.sql import types as T

    kinds = {"string": T.StringType(), "int32": T.IntegerType(), "int64": T.LongType()}
    return T.StructType([T.StructField(f.name, kinds[str(f.type)], True) for f in arrow_schema])


def message_key(producer: Any, seq: Any) -> Any:
    """A message id as one long: producer << KEY_SHIFT | seq."""
    from pyspark.sql import functions as F

    return F.shiftleft(producer.cast("long"), KEY_SHIFT).bitwiseOR(seq)


def ledger_frame(spark: Any, inputs: RunInputs) -> Any:
    """The ledger with its status coded and the id packed into one long key."""
    from pyspark.sql import functions as F

    from kinspect.load.ack_ledger import LEDGER_SCHEMA

    raw = (spark.read.schema(_schema(LEDGER_SCHEMA)).option("pathGlobFilter", "p*.parquet")
           .parquet(str(inputs.run_dir / LEDGER_DIR)))
    status = (F.when(F.col("status") == "acked", ACKED).when(F.col("status") == "failed", FAILED)
              .otherwise(UNKNOWN))
    return raw.select(message_key(F.col("producer"), F.col("seq")).alias("key"),
                      F.col("partition").alias("l_part"), "offset",
                      F.col("leader_epoch").alias("epoch"), status.alias("st"), "send_ts", "ack_ts")


def final_log_frame(spark: Any, inputs: RunInputs) -> Any:
    """Every record the cluster kept, of any run (the `run` column tells whose), with each
    record's previous seq when verify wrote it."""
    from kinspect.load.verify import FINAL_LOG_FILE_SCHEMA, FINAL_LOG_SCHEMA

    schema = FINAL_LOG_FILE_SCHEMA if inputs.final_log_ordered else FINAL_LOG_SCHEMA
    columns = ["partition", "offset", "producer", "seq", "leader_epoch", "run"]
    return (spark.read.schema(_schema(schema)).option("pathGlobFilter", "part-*.parquet")
            .parquet(str(inputs.run_dir / FINAL_LOG_DIR))
            .select(*columns, *(["prev_seq"] if inputs.final_log_ordered else [])))


def is_ours(run_id: str | None) -> Any:
    """This run's records: its run id, or (a run dir made before run ids) none at all."""
    from pyspark.sql import functions as F

    return F.col("run") == run_id if run_id else F.col("run").isNull()


def held_frame(spark: Any, path: Path, run_id: str | None) -> Any:
    """The run's messages found in kept replica snapshots: key, holder, batch epoch, when."""
    from pyspark.sql import functions as F

    from kinspect.postmortem.evidence.segments import HELD_SCHEMA

    held = spark.read.schema(_schema(HELD_SCHEMA)).parquet(str(path))
    return held.where(is_ours(run_id)).select(
        message_key(F.col("producer"), F.col("seq")).alias("key"),
        F.regexp_extract("node", r"(\d+)$", 1).cast("int").alias("h_broker"),
        F.col("batch_epoch").alias("h_epoch"), "snapshot_ms")
