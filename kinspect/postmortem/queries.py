"""The smaller Spark queries: lost-message details, ack timing, the final log's order.

None of them needs the big join again: lost ids are few, so their details come from the
ledger through a (usually broadcast) join; timing comes from the ledger alone.
"""

from __future__ import annotations

from typing import Any

from kinspect.postmortem.job import ACKED, FAILED, KEY_SHIFT

RANGE_CAP = 50  # lost ranges listed per producer; the rest are counted
GAP_MS = 1000  # no successful ack for this long while sending = unavailable
BUCKET_MS = 100
BROADCAST_ROWS = 1_000_000  # fewer lost ids than this: ship them to the ledger, not vice versa


def lost_detail(slim: Any, ledger: Any, count: int) -> Any:
    """The acked-but-lost ids with what the ledger knows about their acknowledgement."""
    from pyspark.sql import functions as F

    lost = slim.where((F.col("st") == ACKED) & (F.col("copies") == 0)).select("key", "pp")
    if count <= BROADCAST_ROWS:
        lost = F.broadcast(lost)
    return ledger.select("key", "epoch", "ack_ts", "offset").join(lost, "key")


def infer_epochs(lost: Any, final_log: Any, starts: list[tuple[int, int, int, int]]) -> Any:
    """Fill in the leader epoch where the client did not report one (librdkafka's delivery
    reports usually don't), from the brokers' own "starts at leader epoch E from offset O" lines.

    An acknowledged record lost at offset o was overwritten by the final log's record at o, so
    it came from an earlier epoch: the latest epoch E that started at or below o and is older
    than the final record's epoch. Past the end of the final log, the latest epoch that had
    started (by offset and time) when the ack arrived.
    """
    from pyspark.sql import functions as F

    if not starts:
        return lost.withColumn("inferred", F.lit(False))
    spark = lost.sparkSession
    table = spark.createDataFrame(starts, "pp int, s_epoch int, s_offset long, s_ts long")
    kept = final_log.select(F.col("partition").alias("pp"), "offset",
                            F.col("leader_epoch").alias("final_epoch"))
    unknown = lost.where(F.col("epoch").isNull()).join(kept, ["pp", "offset"], "left")
    earlier = F.when(F.col("final_epoch").isNotNull(), F.col("s_epoch") < F.col("final_epoch")) \
        .otherwise(F.col("s_ts") <= F.col("ack_ts"))
    guesses = (unknown.join(F.broadcast(table), "pp")
               .where((F.col("s_offset") <= F.col("offset")) & earlier)
               .groupBy("key").agg(F.max("s_epoch").alias("guess")))
    return (lost.join(guesses, "key", "left")
            .withColumn("inferred", F.col("epoch").isNull() & F.col("guess").isNotNull())
            .withColumn("epoch", F.coalesce(F.col("epoch"), F.col("guess"))).drop("guess"))


def lost_by_epoch(lost: Any) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    rows = lost.groupBy("pp", "epoch").agg(
        F.max(F.col("inferred").cast("int")).cast("boolean").alias("inferred"),
        F.count("*").alias("count"), F.min("ack_ts").alias("first_ack_ts"),
        F.max("ack_ts").alias("last_ack_ts"), F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset")).collect()
    return [r.asDict() for r in rows]


def lost_ranges(lost: Any, cap: int = RANGE_CAP) -> list[dict[str, Any]]:
    """Gaps-and-islands: seq - row_number is constant along a run of consecutive lost seqs."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ids = lost.select(F.shiftright("key", KEY_SHIFT).cast("int").alias("producer"),
                      F.col("key").bitwiseAND((1 << KEY_SHIFT) - 1).alias("seq"))
    by_seq = Window.partitionBy("producer").orderBy("seq")
    islands = ids.withColumn("grp", F.col("seq") - F.row_number().over(by_seq)).groupBy(
        "producer", "grp").agg(F.min("seq").alias("lo"), F.max("seq").alias("hi"))
    by_lo = Window.partitionBy("producer").orderBy("lo")
    ranked = islands.select("producer", "lo", "hi", F.row_number().over(by_lo).alias("rank"),
                            F.count("*").over(Window.partitionBy("producer")).alias("ranges"))
    return [r.asDict() for r in ranked.where(F.col("rank") <= cap).orderBy("producer", "lo").collect()]


def ack_timing(ledger: Any, fault_ts: int | None, lost: Any = None, lost_count: int = 0,
               gap_ms: int = GAP_MS) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Run bounds, acked/failed per second (the chart), per-partition gaps with no ack, and the
    first acks after the fault (any, and the first whose message the cluster kept).

    100 ms buckets keep gap edges exact: a gap of >= 1 s leaves the buckets inside it empty, so
    the last ack before it and the first after it are the max and min of neighbouring buckets.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    reported = ledger.where(F.col("ack_ts").isNotNull() & F.col("st").isin(ACKED, FAILED))
    kept = F.lit(True)
    if lost is not None and fault_ts is not None:
        keys = lost.select("key", F.lit(True).alias("was_lost"))
        keys = F.broadcast(keys) if lost_count <= BROADCAST_ROWS else keys
        reported = reported.join(keys, "key", "left")
        kept = F.col("was_lost").isNull()
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
    buckets = buckets.cache()
    try:
        bounds = buckets.agg(F.min("lo").alias("first_ack_ts"), F.max("hi").alias("last_ack_ts"),
                             F.min("after").alias("first_ack_after_fault_ts"),
                             F.min("kept").alias("first_kept_ack_after_fault_ts")).first().asDict()
        if fault_ts is None:
            bounds["first_ack_after_fault_ts"] = bounds["first_kept_ack_after_fault_ts"] = None
        per_second = buckets.groupBy(F.floor(F.col("b") * BUCKET_MS / 1000).alias("second")).agg(
            F.sum("acked").alias("acked"), F.sum("failed").alias("failed")).orderBy("second").collect()
        window = Window.partitionBy("pp").orderBy("b")
        gaps = (buckets.where(F.col("acked") > 0)
                .select("pp", F.lag("hi").over(window).alias("start"), F.col("lo").alias("end"))
                .where(F.col("end") - F.col("start") >= gap_ms).orderBy("pp", "start").collect())
    finally:
        buckets.unpersist()
    return bounds, [r.asDict() for r in per_second], [r.asDict() for r in gaps]


def final_log_stats(final_log: Any) -> list[dict[str, Any]]:
    """Per partition: records, foreign records, and records behind their producer's previous seq."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window = Window.partitionBy("partition", "producer").orderBy("offset")
    marked = final_log.select("partition", "producer", (F.col("seq") < F.lag("seq").over(window))
                              .alias("behind"))
    rows = marked.groupBy("partition").agg(
        F.count("*").alias("in_log"),
        F.sum(F.when(F.col("producer").isNull(), 1).otherwise(0)).alias("foreign"),
        F.sum(F.when(F.col("behind"), 1).otherwise(0)).alias("reordered")).collect()
    return [r.asDict() for r in rows]
