"""The consumer side of the post-mortem: what the group took responsibility for, and did.

The group is responsible for the records between its committed offsets at the start and at
the end of the run (consumer/offsets.json): having committed past a record, it will never be
delivered again. Each such record (from the final log) is matched by (partition, offset) with
the consumer ledger's processing lines in Spark; a record with no successful processing is
lost for the business, one processed twice is a duplicate. With a transactional output, the
output topic read with read_committed is the evidence of processing instead (a line written
after commit_transaction returned could be missing after a crash; the output cannot).
The few records that need words (never processed) come back to the driver with their
offsets; consumer_story.py finds why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.load.consumers.consumer_ledger import KINDS, ledger_path
from kinspect.load.consumers.group_run import OFFSETS_FILE
from kinspect.load.consumers.settings import (
    OUTPUT_ALL_DIR,
    OUTPUT_COMMITTED_DIR,
    ConsumeSettings,
    consumer_dir,
)
from kinspect.postmortem.story.values import ConsumerPartition, OutputCounts

DETAIL_LIMIT = 1_000_000  # never-processed offsets brought back for words, at most


@dataclass(frozen=True)
class ConsumerInputs:
    settings: ConsumeSettings
    ranges: dict[int, tuple[int, int]]  # partition -> [first, end) the group answered for
    unconsumed: int  # records past the group's last commit at the end (its lag)


@dataclass(frozen=True)
class ConsumerCounts:
    """What Spark counted of the group: per partition, the never-processed offsets
    (partition, offset, failed tries, aborted tries) for words, and the output's counts."""

    partitions: list[ConsumerPartition]
    never: list[tuple[int, int, int, int]]
    output: OutputCounts | None


def consumer_inputs(run_dir: Path) -> ConsumerInputs | None:
    """None when no consumer ran in this run dir; a garbled offsets file is one line."""
    folder = consumer_dir(run_dir)
    if not (folder / "settings.json").is_file():
        return None
    settings = ConsumeSettings.load(run_dir)
    path = folder / OFFSETS_FILE
    try:
        offsets = json.loads(path.read_text())
        start = {p["partition"]: p for p in offsets["start"]["partitions"]}
        end = {p["partition"]: p for p in offsets["end"]["partitions"]}
    except FileNotFoundError:
        raise KinspectError(f"{path} is missing: the consumers of {run_dir} did not finish "
                            "(stop them with `kinspect consume stop`, then verify again)") from None
    except (OSError, ValueError, KeyError, TypeError):
        raise KinspectError(f"{path} is not a kinspect offsets file") from None
    ranges, unconsumed = {}, 0
    for partition, first in start.items():
        lo = first["committed"] if first["committed"] is not None else first["log_start"]
        last = end.get(partition, first)
        hi = last["committed"] if last["committed"] is not None else lo
        ranges[int(partition)] = (int(lo), int(max(lo, hi)))
        unconsumed += max(0, int(last["high_watermark"]) - int(max(lo, hi)))
    return ConsumerInputs(settings, ranges, unconsumed)


def consumer_counts(spark: Any, run_dir: Path, inputs: ConsumerInputs,
                    final_log: Any) -> ConsumerCounts:
    """Per partition and in total: answered for, processed, never processed, processed more
    than once; the never-processed offsets (partition, offset, failed, aborted) for words."""
    from pyspark.sql import functions as F

    from kinspect.postmortem.matching.frames import message_key, spark_schema

    ranges = spark.createDataFrame(
        [(p, lo, hi) for p, (lo, hi) in sorted(inputs.ranges.items())],
        "partition int, lo long, hi long")
    answered = (final_log.join(F.broadcast(ranges), "partition")
                .where((F.col("offset") >= F.col("lo")) & (F.col("offset") < F.col("hi")))
                .select("partition", "offset", "producer", "seq"))
    records = (spark.read.schema(spark_schema(KINDS["records"])).option("header", True)
               .csv(str(ledger_path(run_dir) / "c*-i*.records.csv")))
    tries = records.groupBy("partition", "offset").agg(
        F.sum(F.when(F.col("outcome") == "processed", 1).otherwise(0)).alias("ledger_ok"),
        F.sum(F.when(F.col("outcome") == "failed", 1).otherwise(0)).alias("failed"),
        F.sum(F.when(F.col("outcome") == "aborted", 1).otherwise(0)).alias("aborted"))
    joined = answered.join(tries, ["partition", "offset"], "left")
    if inputs.settings.output is not None:  # the committed output is the evidence
        output = _output_frame(spark, run_dir / OUTPUT_COMMITTED_DIR)
        copies = (output.where(F.col("seq").isNotNull())
                  .groupBy(message_key(F.col("producer"), F.col("seq")).alias("key"))
                  .agg(F.count("*").alias("ok")))
        joined = (joined.withColumn("key", message_key(F.col("producer"), F.col("seq")))
                  .join(copies, "key", "left"))
    else:
        joined = joined.withColumn("ok", F.col("ledger_ok"))
    ok = F.coalesce(F.col("ok"), F.lit(0))
    joined = joined.select("partition", "offset", ok.alias("ok"),
                           F.coalesce(F.col("failed"), F.lit(0)).alias("failed"),
                           F.coalesce(F.col("aborted"), F.lit(0)).alias("aborted")).cache()
    try:
        rows = joined.groupBy("partition").agg(
            F.count("*").alias("answered_for"),
            F.sum(F.when(F.col("ok") > 0, 1).otherwise(0)).alias("processed"),
            F.sum(F.when(F.col("ok") == 0, 1).otherwise(0)).alias("never_processed"),
            F.sum(F.when(F.col("ok") > 1, 1).otherwise(0)).alias("processed_twice"),
            F.sum(F.greatest(F.col("ok") - 1, F.lit(0))).alias("extra_processings"),
            F.sum(F.when((F.col("ok") == 0) & (F.col("failed") > 0), 1).otherwise(0))
            .alias("failed_not_retried"),
            F.sum(F.when((F.col("ok") == 0) & (F.col("aborted") > 0), 1).otherwise(0))
            .alias("aborted_not_retried")).collect()
        never = (joined.where(F.col("ok") == 0).orderBy("partition", "offset")
                 .limit(DETAIL_LIMIT).collect())
    finally:
        joined.unpersist()
    partitions = sorted((ConsumerPartition(**{k: int(v or 0) for k, v in r.asDict().items()})
                         for r in rows), key=lambda p: p.partition)
    return ConsumerCounts(partitions,
                          [(r.partition, r.offset, r.failed, r.aborted) for r in never],
                          _output_counts(spark, run_dir) if inputs.settings.output is not None else None)


def _output_frame(spark: Any, folder: Path) -> Any:
    from kinspect.load.verify import FINAL_LOG_SCHEMA
    from kinspect.postmortem.matching.frames import spark_schema

    if not folder.is_dir():
        raise KinspectError(f"{folder} is missing: verify the run again (it reads the output "
                            "topic back, committed and all)")
    return (spark.read.schema(spark_schema(FINAL_LOG_SCHEMA)).option("pathGlobFilter", "part-*.parquet")
            .parquet(str(folder)))


def _output_counts(spark: Any, run_dir: Path) -> OutputCounts:
    """The output topic as read_committed and read_uncommitted consumers see it."""
    committed = _output_frame(spark, run_dir / OUTPUT_COMMITTED_DIR).count()
    everything = _output_frame(spark, run_dir / OUTPUT_ALL_DIR).count()
    return OutputCounts(committed, everything)
