"""The job's inputs as Spark DataFrames: the ledger, the final log and the kept replicas.

Plan, chosen for a 2-core laptop and for a cluster alike (no Python UDFs, nothing big
collected): a message id is one long key (producer << 40 | seq); the match of ledger and
final log is one aggregate per side into runs of 64 ids (match.py), the rest by small
queries (queries.py). In: a Spark session and a run dir's inputs. Out: the frames the
matching reads, the status codes and the id packing they share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinspect.load.rundir import FINAL_LOG_DIR, LEDGER_DIR
from kinspect.model.sends import ACKED_STATUS, FAILED_STATUS, INDEFINITE_ERRORS
from kinspect.postmortem.evidence.inputs import RunInputs

KEY_SHIFT = 40
# A ledger row's status coded, best first: acknowledged, failed with a definite error, failed
# with an error that leaves it open (model/sends.py), never answered.
ACKED, FAILED, INDEFINITE, UNKNOWN = 0, 1, 2, 3


def spark_schema(arrow_schema: Any) -> Any:
    """An Arrow schema (the ledger's, the final log's, a snapshot's) as Spark's, every field nullable."""
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

    raw = (spark.read.schema(spark_schema(LEDGER_SCHEMA)).option("pathGlobFilter", "p*.parquet")
           .parquet(str(inputs.run_dir / LEDGER_DIR)))
    failed = F.col("status") == FAILED_STATUS
    status = (F.when(F.col("status") == ACKED_STATUS, ACKED)
              .when(failed & F.col("error").isin(*INDEFINITE_ERRORS), INDEFINITE)
              .when(failed, FAILED).otherwise(UNKNOWN))
    return raw.select(message_key(F.col("producer"), F.col("seq")).alias("key"),
                      F.col("partition").alias("l_part"), "offset",
                      F.col("leader_epoch").alias("epoch"), status.alias("st"), "send_ts", "ack_ts")


def final_log_frame(spark: Any, inputs: RunInputs) -> Any:
    """Every record the cluster kept, of any run (the `run` column tells whose), with each
    record's previous seq when verify wrote it."""
    from kinspect.load.verify import FINAL_LOG_FILE_SCHEMA, FINAL_LOG_SCHEMA

    schema = FINAL_LOG_SCHEMA
    columns = ["partition", "offset", "producer", "seq", "leader_epoch", "run"]
    if inputs.final_log_ordered:
        schema = FINAL_LOG_FILE_SCHEMA
        columns.append("prev_seq")
    return (spark.read.schema(spark_schema(schema)).option("pathGlobFilter", "part-*.parquet")
            .parquet(str(inputs.run_dir / FINAL_LOG_DIR))
            .select(*columns))


def is_ours(run_id: str | None) -> Any:
    """This run's records: its run id, or (a run dir made before run ids) none at all."""
    from pyspark.sql import functions as F

    if run_id:
        return F.col("run") == run_id
    return F.col("run").isNull()


def held_frame(spark: Any, path: Path, run_id: str | None) -> Any:
    """The run's messages found in kept replica snapshots: key, holder, batch epoch, when."""
    from pyspark.sql import functions as F

    from kinspect.postmortem.evidence.segments import HELD_SCHEMA

    held = spark.read.schema(spark_schema(HELD_SCHEMA)).parquet(str(path))
    return held.where(is_ours(run_id)).select(
        message_key(F.col("producer"), F.col("seq")).alias("key"),
        F.regexp_extract("node", r"(\d+)$", 1).cast("int").alias("h_broker"),
        F.col("batch_epoch").alias("h_epoch"), "snapshot_ms")
