"""The Spark queries after the match: who acknowledged the lost ids, and ack timing. The lost
ids' acknowledgements come from the match (match.py: the ledger joined with their runs of 64
ids); timing comes from the ledger alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinspect.postmortem.matching.frames import ACKED, FAILED, INDEFINITE, UNKNOWN
from kinspect.postmortem.matching.leadership import ROW_SCHEMA as LEADERSHIP_SCHEMA
from kinspect.postmortem.matching.results import AckBounds, AckTiming, Gap, LostEpoch
from kinspect.postmortem.story.values import Second

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
    whose epoch is older than the record the final log kept at that offset. `lost_rows`: how
    many lost ids (0: unknown, few).

    One aggregate: every candidate answer of every lost id (each copy a snapshot held, each
    leader the history names, and "no answer") is a struct ordered best first, and each id
    keeps its least (a hash aggregate; the measured answers sort before the inferred ones).
    """
    from functools import reduce

    from pyspark.sql import functions as F

    spark = lost.sparkSession
    history = spark.createDataFrame(leaderships, LEADERSHIP_SCHEMA) if leaderships else None
    details = lost.select("key", "pp", "offset", "ack_ts", F.col("epoch").alias("l_epoch"))
    nothing = details.withColumn("c", _answer(NO_ANSWER, F.lit(0), F.lit(0), F.lit(None),
                                              F.lit(None)))
    answers = [nothing]
    if held is not None:
        answers.append(_measured(details, held, history, lost_rows))
    if history is not None:
        answers.append(_inferred(details, final_log, history, lost_rows))
    best = reduce(lambda a, b: a.unionByName(b), answers).groupBy(
        "key", "pp", "offset", "ack_ts", "l_epoch").agg(F.min("c").alias("c"))
    kind = F.col("c.k")
    return best.select(
        "key", "pp", "offset", "ack_ts",
        F.when(kind == MEASURED, F.col("c.e")).otherwise(
            F.coalesce("l_epoch", F.when(kind == INFERRED, F.col("c.e")))).alias("epoch"),
        F.when(kind != NO_ANSWER, F.col("c.b")).alias("broker"),
        F.when(kind == MEASURED, F.lit("measured")).otherwise(F.lit("inferred")).alias("method"))


MEASURED, INFERRED, NO_ANSWER = 0, 1, 2  # the order answers are preferred in


def _answer(kind: int, first: Any, then: Any, epoch: Any, broker: Any) -> Any:
    """One candidate answer: its kind, two orderings within the kind, the epoch and broker."""
    from pyspark.sql import functions as F

    return F.struct(F.lit(kind).alias("k"), first.cast("long").alias("o1"),
                    then.cast("long").alias("o2"), epoch.cast("int").alias("e"),
                    broker.cast("int").alias("b"))


def _measured(details: Any, held: Any, history: Any, lost_rows: int) -> Any:
    """Each copy of a lost id a kept snapshot holds: the batch's epoch and the broker that led
    that epoch (the holder itself when the history does not say); the copy its epoch's leader
    held first, else the earliest copy, is the better answer."""
    from pyspark.sql import functions as F

    found = held.where(F.col("h_epoch").isNotNull()).join(small_side(details, lost_rows), "key")
    if history is not None:
        leaders = F.broadcast(history.select("pp", F.col("i_epoch").alias("h_epoch"),
                                             F.col("i_broker").alias("leader_of_epoch")))
        found = found.join(leaders, ["pp", "h_epoch"], "left")
    else:
        found = found.withColumn("leader_of_epoch", F.lit(None).cast("int"))
    holder = F.col("h_broker") == F.col("leader_of_epoch")
    rank = F.when(holder, 0).when(~holder, 1).otherwise(2)
    return found.select(*details.columns, _answer(
        MEASURED, rank, F.col("snapshot_ms"), F.col("h_epoch"),
        F.coalesce("leader_of_epoch", "h_broker")).alias("c"))


def _inferred(details: Any, final_log: Any, history: Any, lost_rows: int) -> Any:
    """Each broker that believed it led the partition from at or below the ack's offset when
    the ack came; the one that later truncated below it, else the one whose epoch is older
    than the record the final log kept at that offset, then the latest start, is better."""
    from pyspark.sql import functions as F

    # The final log's record at each lost id's offset: the lost offsets go to the log (a
    # broadcast while they are few), not the whole log to them, and back the same way.
    kept = final_log.select(F.col("partition").alias("pp"), "offset",
                            F.col("leader_epoch").alias("final_epoch")).join(
        small_side(details.select("pp", "offset"), lost_rows), ["pp", "offset"], "left_semi")
    cand = (details.join(small_side(kept, lost_rows), ["pp", "offset"], "left")
            .join(F.broadcast(history), "pp")
            .where(((F.col("s_offset") < 0) | (F.col("s_offset") <= F.col("offset")))
                   & (F.col("start_ts") <= F.col("ack_ts") + SLACK_MS)
                   & (F.col("end_ts").isNull() | (F.col("ack_ts") <= F.col("end_ts") + SLACK_MS))
                   & (F.col("l_epoch").isNull() | (F.col("l_epoch") == F.col("i_epoch")))))
    truncated = (F.col("trunc_offset").isNotNull() & (F.col("trunc_offset") <= F.col("offset"))
                 & (F.col("trunc_ts") >= F.col("ack_ts")))
    older = F.col("final_epoch").isNull() | (F.col("i_epoch") < F.col("final_epoch"))
    score = F.when(truncated, 2).otherwise(0) + F.when(older, 1).otherwise(0)
    return cand.select(*details.columns, _answer(
        INFERRED, -score, -F.col("start_ts"), F.col("i_epoch"), F.col("i_broker")).alias("c"))


def lost_by_epoch(lost: Any) -> list[LostEpoch]:
    from pyspark.sql import functions as F

    rows = lost.groupBy("pp", "epoch", "broker", "method").agg(
        F.count("*").alias("count"), F.min("ack_ts").alias("first_ack_ts"),
        F.max("ack_ts").alias("last_ack_ts"), F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset")).collect()
    return [LostEpoch(int(r["pp"]), _opt(r["epoch"]), _opt(r["broker"]), str(r["method"]),
                      int(r["count"]), _opt(r["first_ack_ts"]), _opt(r["last_ack_ts"]),
                      _opt(r["first_offset"]), _opt(r["last_offset"])) for r in rows]


def _opt(value: Any) -> int | None:
    return None if value is None else int(value)


def ack_timing(ledger: Any, fault_ts: int | None, lost_words: Any = None, gap_ms: int = GAP_MS,
               load_end_ms: int | None = None) -> AckTiming:
    """Run bounds, acked/failed per second (the chart), per-partition gaps with no ack, and the
    first acks after the fault (any, and the first whose message the cluster kept).

    A partition whose acknowledgements stopped and never came back (records still unanswered
    when the load ended) was unavailable from its last ack to at least `load_end_ms`: that open
    gap counts too; between acks alone, it would not count at all.

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
        F.sum(F.when(F.col("st").isin(FAILED, INDEFINITE), 1).otherwise(0)).alias("failed"),
        F.min(F.when(acked, F.col("ack_ts"))).alias("lo"),
        F.max(F.when(acked, F.col("ack_ts"))).alias("hi"),
        F.min(F.when(after, F.col("ack_ts"))).alias("after"),
        F.min(F.when(after & kept, F.col("ack_ts"))).alias("kept"),
        F.sum(F.when(F.col("st") == UNKNOWN, 1).otherwise(0)).alias("unanswered"))
    # One job: the buckets are few (partitions x 10 a second of the run: 600,000 for a run of
    # nearly three hours), so bounds, the chart's seconds and the gaps are folded here.
    return _fold_buckets(buckets.toArrow(), fault_ts is not None, gap_ms, load_end_ms)


def _open_gaps(table: Any, gap_ms: int, load_end_ms: int | None) -> list[Gap]:
    """Per partition with records never answered: from its last ack to the load's end. A record
    never answered has no partition in the ledger (only a delivery report says it, -1): such
    records are the partition's when the run acked in one partition only; on several they are
    no one partition's, and no open gap is claimed for them."""
    if load_end_ms is None or "unanswered" not in table.column_names:
        return []
    parts = {r["pp"]: r for r in table.group_by("pp").aggregate(
        [("hi", "max"), ("unanswered", "sum")]).to_pylist()}
    nowhere = parts.pop(-1, {}).get("unanswered_sum") or 0
    acked = [pp for pp, r in parts.items() if r["hi_max"] is not None]
    out = []
    for pp in acked:
        last, unanswered = parts[pp]["hi_max"], parts[pp]["unanswered_sum"] or 0
        if len(acked) == 1:
            unanswered += nowhere
        if unanswered and load_end_ms - last >= gap_ms:
            out.append(Gap(int(pp), int(last), load_end_ms))
    return out


def _fold_buckets(table: Any, after_fault: bool, gap_ms: int,
                  load_end_ms: int | None = None) -> AckTiming:
    parts = table.group_by("pp").aggregate(
        [("lo", "min"), ("hi", "max"), ("after", "min"), ("kept", "min")]).to_pylist()

    def pick(how: Any, column: str) -> Any:
        values = [r[column] for r in parts if r[column] is not None]
        return how(values) if values else None

    bounds = AckBounds(pick(min, "lo_min"), pick(max, "hi_max"),
                       pick(min, "after_min") if after_fault else None,
                       pick(min, "kept_min") if after_fault else None)
    timed = table.filter(pc.is_valid(table["b"]))
    seconds = timed["b"].to_numpy() * BUCKET_MS // 1000
    per_second = timed.select(["acked", "failed"]).append_column(
        "second", pa.array(seconds)).group_by("second").aggregate(
        [("acked", "sum"), ("failed", "sum")]).sort_by("second").to_pylist()
    acked = timed.filter(pc.greater(timed["acked"], 0))
    order = np.lexsort((acked["b"].to_numpy(), acked["pp"].to_numpy()))
    pp, lo, hi = (acked[c].to_numpy()[order] for c in ("pp", "lo", "hi"))
    after = np.flatnonzero((pp[1:] == pp[:-1]) & (lo[1:] - hi[:-1] >= gap_ms)) + 1
    gaps = [Gap(int(pp[k]), int(hi[k - 1]), int(lo[k])) for k in after]
    gaps += _open_gaps(table, gap_ms, load_end_ms)
    return AckTiming(bounds, [Second(int(r["second"]), int(r["acked_sum"]), int(r["failed_sum"]))
                              for r in per_second], gaps)
