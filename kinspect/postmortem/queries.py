"""The Spark queries after the match: who acknowledged the lost ids, ack timing, the final
log's order. Lost ids are few: their details were fetched by the match (match.py) through a
broadcast join; timing comes from the ledger alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinspect.postmortem.job import ACKED, FAILED
from kinspect.postmortem.leadership import ROW_SCHEMA as LEADERSHIP_SCHEMA

GAP_MS = 1000  # no successful ack for this long while sending = unavailable
BUCKET_MS = 100
SLACK_MS = 1000  # an ack may land just after its broker logged the change (clock, flushing)
BROADCAST_ROWS = 1_000_000  # fewer lost ids than this: ship them to the ledger, not vice versa


def small_side(frame: Any, rows: int) -> Any:
    """Broadcast a table of exceptions when it is small; millions of lost ids (a 100 M-message
    run losing 3 %) go through a shuffle join instead of filling the driver's heap."""
    from pyspark.sql import functions as F

    return F.broadcast(frame) if rows <= BROADCAST_ROWS else frame


def lost_in() -> Any:
    """Whether a row joined on `key >> 6 == lw` to match.py's lost runs of 64 ids (lw, lm) is
    one of their ids: its bit in the run's mask. The few thousand runs of a 10 M-message run
    make a hash table that stays in cache; its 300,000 ids as keys took the join twice as long."""
    from pyspark.sql import functions as F

    return F.expr("shiftright(lm, CAST(key & 63 AS INT)) & 1 = 1")


def attribute(lost: Any, final_log: Any, held: Any, leaderships: list[tuple[Any, ...]],
              lost_rows: int = 0) -> Any:
    """Who acknowledged each lost message, at which leader epoch, and how we know.

    measured: the message was found in a kept replica snapshot (segment files copied before any
    broker could truncate); the batch's leader epoch is in the bytes, and the broker that led
    that epoch wrote it. inferred: from the brokers' own leadership history: among the brokers
    that believed they led the partition from at or below the ack's offset when the ack came,
    the one that later truncated its log below that offset (it lost the message), else the one
    whose epoch is older than the record the final log kept at that offset.
    """
    from pyspark.sql import functions as F

    spark = lost.sparkSession
    history = spark.createDataFrame(leaderships, LEADERSHIP_SCHEMA) if leaderships else None
    # One pass: each lost id beside its measured answer (if a snapshot held it) and its
    # inferred one (if the history names a leader); the measured one wins.
    out = lost
    if held is not None:
        out = out.join(_measured(lost, held, history), "key", "left")
    else:
        out = out.withColumn("m_epoch", F.lit(None).cast("int")) \
            .withColumn("m_broker", F.lit(None).cast("int"))
    if history is not None:
        out = out.join(_inferred(lost, final_log, history, lost_rows), "key", "left")
    else:
        out = out.withColumn("guess", F.lit(None).cast("int")) \
            .withColumn("i_broker", F.lit(None).cast("int"))
    measured = F.col("m_epoch").isNotNull()
    return out.select(
        "key", "pp", "offset", "ack_ts",
        F.when(measured, F.col("m_epoch")).otherwise(F.coalesce("epoch", "guess")).alias("epoch"),
        F.when(measured, F.col("m_broker")).otherwise(F.col("i_broker")).alias("broker"),
        F.when(measured, F.lit("measured")).otherwise(F.lit("inferred")).alias("method"))


def _measured(lost: Any, held: Any, history: Any) -> Any:
    """key, m_epoch, m_broker: the batch epoch a kept snapshot holds the id at, and the broker
    that led that epoch (the holder itself when the history does not say)."""
    from pyspark.sql import functions as F

    found = lost.select("key", "pp").join(held, "key")
    if history is not None:
        leaders = F.broadcast(history.select("pp", F.col("i_epoch").alias("h_epoch"),
                                             F.col("i_broker").alias("leader_of_epoch")))
        found = found.join(leaders, ["pp", "h_epoch"], "left")
    else:
        found = found.withColumn("leader_of_epoch", F.lit(None).cast("int"))
    # The copy its epoch's leader held first, else the earliest copy: the least of a struct
    # per id (a hash aggregate; a window would sort every copy).
    holder = F.col("h_broker") == F.col("leader_of_epoch")
    rank = F.when(holder, 0).when(~holder, 1).otherwise(2)
    first = F.min(F.struct(rank.alias("r"), "snapshot_ms", F.col("h_epoch").alias("e"),
                           F.coalesce("leader_of_epoch", "h_broker").alias("b"))).alias("f")
    return found.groupBy("key").agg(first).select(
        "key", F.col("f.e").alias("m_epoch"), F.col("f.b").alias("m_broker"))


def _inferred(lost: Any, final_log: Any, history: Any, lost_rows: int) -> Any:
    """key, guess, i_broker: among the brokers that believed they led the partition from at or
    below the ack's offset when the ack came, the one that later truncated below it, else the
    one whose epoch is older than the record the final log kept at that offset."""
    from pyspark.sql import functions as F

    # The final log's record at each lost id's offset: the lost offsets go to the log (a
    # broadcast while they are few), not the whole log to them.
    kept = final_log.select(F.col("partition").alias("pp"), "offset",
                            F.col("leader_epoch").alias("final_epoch")).join(
        small_side(lost.select("pp", "offset").distinct(), lost_rows), ["pp", "offset"])
    cand = (lost.join(kept, ["pp", "offset"], "left").join(F.broadcast(history), "pp")
            .where(((F.col("s_offset") < 0) | (F.col("s_offset") <= F.col("offset")))
                   & (F.col("start_ts") <= F.col("ack_ts") + SLACK_MS)
                   & (F.col("end_ts").isNull() | (F.col("ack_ts") <= F.col("end_ts") + SLACK_MS))
                   & (F.col("epoch").isNull() | (F.col("epoch") == F.col("i_epoch")))))
    truncated = (F.col("trunc_offset").isNotNull() & (F.col("trunc_offset") <= F.col("offset"))
                 & (F.col("trunc_ts") >= F.col("ack_ts")))
    older = F.col("final_epoch").isNull() | (F.col("i_epoch") < F.col("final_epoch"))
    score = F.when(truncated, 2).otherwise(0) + F.when(older, 1).otherwise(0)
    # The best score, then the latest start: the least of a struct per id, as in _measured.
    best = F.min(F.struct((-score).alias("s"), (-F.col("start_ts")).alias("t"),
                          F.col("i_epoch").alias("e"), F.col("i_broker").alias("b"))).alias("f")
    return cand.groupBy("key").agg(best).select(
        "key", F.col("f.e").alias("guess"), F.col("f.b").alias("i_broker"))


def lost_by_epoch(lost: Any) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    rows = lost.groupBy("pp", "epoch", "broker", "method").agg(
        F.count("*").alias("count"), F.min("ack_ts").alias("first_ack_ts"),
        F.max("ack_ts").alias("last_ack_ts"), F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset")).collect()
    return [r.asDict() for r in rows]


def ack_timing(ledger: Any, fault_ts: int | None, lost_words: Any = None, gap_ms: int = GAP_MS,
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Run bounds, acked/failed per second (the chart), per-partition gaps with no ack, and the
    first acks after the fault (any, and the first whose message the cluster kept).

    100 ms buckets keep gap edges exact: a gap of >= 1 s leaves the buckets inside it empty, so
    the last ack before it and the first after it are the max and min of neighbouring buckets.
    """
    from pyspark.sql import functions as F

    reported = ledger  # rows without an ack time (unknown) fall in bucket null: counted, not drawn
    kept = F.lit(True)
    if lost_words is not None and fault_ts is not None:  # made on the driver: no job waits
        reported = reported.join(lost_words, F.shiftright("key", 6) == F.col("lw"), "left")
        kept = ~F.coalesce(lost_in(), F.lit(False))
    acked = F.col("st") == ACKED
    after = acked & (F.col("ack_ts") > (fault_ts or 0))
    buckets = reported.groupBy(
        F.col("l_part").alias("pp"), F.floor(F.col("ack_ts") / BUCKET_MS).alias("b")).agg(
        F.sum(F.when(acked, 1).otherwise(0)).alias("acked"),
        F.sum(F.when(F.col("st") == FAILED, 1).otherwise(0)).alias("failed"),
        F.min(F.when(acked, F.col("ack_ts"))).alias("lo"),
        F.max(F.when(acked, F.col("ack_ts"))).alias("hi"),
        F.min(F.when(after, F.col("ack_ts"))).alias("after"),
        F.min(F.when(after & kept, F.col("ack_ts"))).alias("kept"))
    # One job: the buckets are few (partitions x 10 a second of the run: 600,000 for a run of
    # nearly three hours), so bounds, the chart's seconds and the gaps are folded here.
    return _fold_buckets(buckets.toArrow(), fault_ts is not None, gap_ms)


def _fold_buckets(table: Any, after_fault: bool, gap_ms: int) -> tuple[
        dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    parts = table.group_by("pp").aggregate(
        [("lo", "min"), ("hi", "max"), ("after", "min"), ("kept", "min")]).to_pylist()

    def pick(how: Any, column: str) -> Any:
        values = [r[column] for r in parts if r[column] is not None]
        return how(values) if values else None

    bounds = {"first_ack_ts": pick(min, "lo_min"), "last_ack_ts": pick(max, "hi_max"),
              "first_ack_after_fault_ts": pick(min, "after_min") if after_fault else None,
              "first_kept_ack_after_fault_ts": pick(min, "kept_min") if after_fault else None}
    timed = table.filter(pc.is_valid(table["b"]))
    seconds = timed["b"].to_numpy() * BUCKET_MS // 1000
    per_second = timed.select(["acked", "failed"]).append_column(
        "second", pa.array(seconds)).group_by("second").aggregate(
        [("acked", "sum"), ("failed", "sum")]).sort_by("second").to_pylist()
    acked = timed.filter(pc.greater(timed["acked"], 0))
    order = np.lexsort((acked["b"].to_numpy(), acked["pp"].to_numpy()))
    pp, lo, hi = (acked[c].to_numpy()[order] for c in ("pp", "lo", "hi"))
    after = np.flatnonzero((pp[1:] == pp[:-1]) & (lo[1:] - hi[:-1] >= gap_ms)) + 1
    gaps = [{"pp": int(pp[k]), "start": int(hi[k - 1]), "end": int(lo[k])} for k in after]
    return (bounds, [{"second": r["second"], "acked": r["acked_sum"], "failed": r["failed_sum"]}
                     for r in per_second], gaps)


def final_log_stats(final_log: Any, run_id: str | None) -> list[dict[str, Any]]:
    """Per partition: this run's records, foreign records, other runs' records, and this run's
    records behind their producer's previous seq. With verify's prev_seq column that is one
    pass; an older final log is sorted by (partition, producer, offset) here."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kinspect.postmortem.job import is_ours

    mine = F.coalesce(is_ours(run_id), F.lit(False))
    foreign = F.col("producer").isNull()
    if "prev_seq" in final_log.columns:
        behind = F.col("seq") < F.col("prev_seq")
    else:
        window = Window.partitionBy("partition", "producer", "run").orderBy("offset")
        behind = F.col("seq") < F.lag("seq").over(window)
        final_log = final_log.withColumn("behind", behind)
        behind = F.col("behind")

    def n(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    rows = final_log.groupBy("partition").agg(
        n(mine).alias("in_log"), n(mine & F.coalesce(behind, F.lit(False))).alias("reordered"),
        n(foreign).alias("foreign"), n(~foreign & ~mine).alias("other_runs")).collect()
    return [r.asDict() for r in rows]
