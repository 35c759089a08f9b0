"""The Spark job: ledger x final log by message identity, with one big shuffle.

Plan, chosen for a 2-core laptop and for a cluster alike (no Python UDFs, nothing big
collected): the ledger, the final log and the seqs the ledger's metadata says were sent are
unioned as slim rows on one long key (producer << 40 | seq) and grouped once; that is the
join. Only the slim result (key, status, copies, partition) is cached; every count comes
from one aggregation over it, and the few lost ids get their details back from the ledger
(see queries.py). Only small results reach the driver.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kinspect.load.rundir import FINAL_LOG_DIR, LEDGER_DIR
from kinspect.postmortem.inputs import RunInputs

KEY_SHIFT = 40
ACKED, FAILED, UNKNOWN, CANDIDATE, LOG_COPY = 0, 1, 2, 3, 4
SOURCE_SHIFT = 20  # partitions below 2**20 - 1
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

    from kinspect.postmortem import cluster

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


def _key(producer: Any, seq: Any) -> Any:
    from pyspark.sql import functions as F

    return F.shiftleft(producer.cast("long"), KEY_SHIFT).bitwiseOR(seq)


def ledger_frame(spark: Any, inputs: RunInputs) -> Any:
    """The ledger with its status coded and the id packed into one long key."""
    from pyspark.sql import functions as F

    from kinspect.load.ledger import LEDGER_SCHEMA

    raw = (spark.read.schema(_schema(LEDGER_SCHEMA)).option("pathGlobFilter", "p*.parquet")
           .parquet(str(inputs.run_dir / LEDGER_DIR)))
    status = (F.when(F.col("status") == "acked", ACKED).when(F.col("status") == "failed", FAILED)
              .otherwise(UNKNOWN))
    return raw.select(_key(F.col("producer"), F.col("seq")).alias("key"),
                      F.col("partition").alias("l_part"), "offset",
                      F.col("leader_epoch").alias("epoch"), status.alias("st"), "send_ts", "ack_ts")


def candidates(spark: Any, inputs: RunInputs, progress: Progress) -> list[Any]:
    """Seqs that may have been sent without a ledger row (sent_upto says so): grouping them
    with the ledger marks those with no row as unknown, without a separate anti-join."""
    from pyspark.sql import functions as F

    out = []
    for producer, meta in sorted(inputs.producers.items()):
        if meta.rows >= meta.sent_upto + 1:
            continue
        contiguous = 0 <= meta.max_seq == meta.rows - 1  # rows are 0..max_seq: only a tail is missing
        lo = meta.max_seq + 1 if contiguous else 0
        progress(f"producer {producer}: {meta.sent_upto + 1 - meta.rows:,} sent seqs have no ledger "
                 "row: counting them as unknown")
        out.append(spark.range(lo, meta.sent_upto + 1).select(
            _key(F.lit(producer), F.col("id")).alias("key")))
    return out


def final_log_frame(spark: Any, inputs: RunInputs) -> Any:
    """Every record the cluster kept, of any run (the `run` column tells whose)."""
    from kinspect.load.verify import FINAL_LOG_SCHEMA

    return (spark.read.schema(_schema(FINAL_LOG_SCHEMA)).option("pathGlobFilter", "part-*.parquet")
            .parquet(str(inputs.run_dir / FINAL_LOG_DIR))
            .select("partition", "offset", "producer", "seq", "leader_epoch", "run"))


def is_ours(run_id: str | None) -> Any:
    """This run's records: its run id, or (a run dir made before run ids) none at all."""
    from pyspark.sql import functions as F

    return F.col("run") == run_id if run_id else F.col("run").isNull()


def held_frame(spark: Any, path: Path, run_id: str | None) -> Any:
    """The run's messages found in kept replica snapshots: key, holder, batch epoch, when."""
    from pyspark.sql import functions as F

    from kinspect.postmortem.segments import HELD_SCHEMA

    held = spark.read.schema(_schema(HELD_SCHEMA)).parquet(str(path))
    return held.where(is_ours(run_id)).select(
        _key(F.col("producer"), F.col("seq")).alias("key"),
        F.regexp_extract("node", r"(\d+)$", 1).cast("int").alias("h_broker"),
        F.col("batch_epoch").alias("h_epoch"), "snapshot_ms")


def match(ledger: Any, final_log: Any, extra: list[Any]) -> Any:
    """One slim row per id: status (null: not in the ledger), copies in the log, partition.

    Each input row is shuffled as (key, v) with v = source << 20 | partition + 1, the source
    being the ledger status (0-2), a candidate seq (3) or a log copy (4): min(v) is the ledger's
    word, max(v) a log copy if any. Two columns instead of four make the one big shuffle small.
    """
    from pyspark.sql import functions as F

    def code(source: Any, part: Any) -> Any:
        return F.shiftleft(source, SOURCE_SHIFT).bitwiseOR(part + 1).alias("v")

    rows = ledger.select("key", code(F.col("st"), F.col("l_part")))
    rows = rows.unionByName(final_log.where(F.col("producer").isNotNull() & F.col("seq").isNotNull())
                            .select(_key(F.col("producer"), F.col("seq")).alias("key"),
                                    code(F.lit(LOG_COPY), F.col("partition"))))
    for frame in extra:
        rows = rows.unionByName(frame.select("key", code(F.lit(CANDIDATE), F.lit(-1))))
    mask = (1 << SOURCE_SHIFT) - 1
    grouped = rows.groupBy("key").agg(
        F.min("v").alias("lo"), F.max("v").alias("hi"),
        F.sum(F.when(F.shiftright("v", SOURCE_SHIFT) == LOG_COPY, 1).otherwise(0)).alias("copies"))
    first = F.shiftright("lo", SOURCE_SHIFT)
    st = F.when(first == CANDIDATE, UNKNOWN).when(first < CANDIDATE, first)
    pp = F.when(F.col("copies") > 0, F.col("hi").bitwiseAND(mask)).otherwise(
        F.col("lo").bitwiseAND(mask)) - 1
    return grouped.select("key", st.alias("st"), F.col("copies").cast("int").alias("copies"),
                          pp.alias("pp"))


def counts(slim: Any) -> list[dict[str, Any]]:
    """Every count, per partition (-1: never reached a partition), in one aggregation."""
    from pyspark.sql import functions as F

    st, copies = F.col("st"), F.col("copies")

    def n(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    rows = slim.groupBy("pp").agg(
        n(st.isNotNull()).alias("sent"), n(st == ACKED).alias("acked"),
        n(st == FAILED).alias("failed"), n(st == UNKNOWN).alias("unknown"),
        n(copies > 0).alias("in_log_ids"), n((st == ACKED) & (copies == 0)).alias("acked_lost"),
        n((st.isNull() | (st != ACKED)) & (copies > 0)).alias("unacked_present"),
        n((st == UNKNOWN) & (copies > 0)).alias("unknown_present"),
        n(st.isNull()).alias("not_in_ledger"),
        F.sum(F.greatest(copies - 1, F.lit(0))).alias("duplicates"),
        n(copies > 1).alias("duplicate_ids")).collect()
    return [r.asDict() for r in rows]
