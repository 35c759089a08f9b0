"""Matching the ledger with the final log by message id, as bitmaps: no shuffle of rows.

Before: every ledger row and log record went through one big shuffle on its id (25 s of a
10 M-message post-mortem). Now Spark folds each side into bitmaps per (producer, 32,768-seq
bucket) where the data is read (bitmap_construct_agg; the shuffle carries a few thousand 4 KiB
bitmaps), and the driver does the set algebra (idsets.py): acked-but-lost is `acked - present`.
Only the exceptions come back as rows, and through broadcast joins when they are few: the lost ids (their
ack details, for attribution), the unacknowledged ids the log holds (their partitions), and
the ids written more than once (found only in buckets whose record count exceeds their bits).

Per partition, a message counts where the log holds it, else where the ledger sent it (-1:
nowhere known); an acknowledgement names its partition, so an acknowledged id found in the
log is in the partition its ledger row says.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from kinspect.postmortem.idsets import IdSet, ranges
from kinspect.postmortem.inputs import RunInputs
from kinspect.postmortem.job import ACKED, FAILED, KEY_SHIFT, UNKNOWN
from kinspect.postmortem.queries import BROADCAST_ROWS
from kinspect.postmortem.side_by_side import run_jobs

RANGE_CAP = 50  # lost ranges listed per producer; the rest are counted
CANDIDATE = 3  # an id that may have been sent (sent_upto) and has no ledger row: unknown
COUNTS = ("sent", "acked", "failed", "unknown", "in_log_ids", "acked_lost", "unacked_present",
          "unknown_present", "not_in_ledger", "duplicates", "duplicate_ids")


@dataclass
class Match:
    lost: Any  # DataFrame: key, pp, offset, ack_ts, epoch of every acked-but-lost id (or None)
    lost_keys: Any  # DataFrame: key, was_lost of every acked-but-lost id, made on the driver
    lost_total: int
    lost_ranges: list[dict[str, Any]]  # producer, lo, hi, ranges (all of this producer's runs)
    notes: list[str]
    unacked: list[dict[str, Any]]  # the log's unacknowledged ids by (st, lp, logp)
    duplicates: list[dict[str, Any]]  # per log partition
    candidates_absent: int  # maybe sent, no ledger row, not in the log: partition -1

    def groups(self, per_part: dict[tuple[int, int], int],
               epochs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The counts per partition (pp; -1: none), given the ledger's rows per (partition,
        status) (queries.ack_timing counts them in its pass over the ledger) and the lost ids
        by partition and epoch (queries.lost_by_epoch: one row per lost id went into them)."""
        lost_by_part: Counter[int] = Counter()
        for row in epochs:
            lost_by_part[int(row["pp"])] += int(row["count"])
        return _groups(per_part, lost_by_part, self.unacked, self.duplicates,
                       self.candidates_absent)


def _bitmaps(frame: Any, *by: str) -> list[tuple[Any, ...]]:
    """(producer, bucket, *by, bitmap, rows) for the ids of `frame` (value seq + 1 > 0)."""
    from pyspark.sql import functions as F

    value = F.col("seq") + 1
    return [tuple(r) for r in frame.select(
        "producer", F.bitmap_bucket_number(value).alias("b"),
        F.bitmap_bit_position(value).alias("pos"), *by).groupBy("producer", "b", *by).agg(
        F.bitmap_construct_agg("pos").alias("bm"), F.count("*").alias("n")).collect()]


def _words(frame: Any) -> pa.Table:
    """(producer, word, mask, n): the ids of `frame` 64 seqs a row, with how many records fell
    in each word: more records than bits is where an id was written twice."""
    from pyspark.sql import functions as F

    bit = F.expr("shiftleft(CAST(1 AS BIGINT), CAST(seq & 63 AS INT))")
    return frame.groupBy("producer", F.shiftright("seq", 6).alias("word")).agg(
        F.bit_or(bit).alias("mask"), F.count("*").alias("n")).toArrow()


def _ids(ledger: Any) -> Any:
    from pyspark.sql import functions as F

    return ledger.select(F.shiftright("key", KEY_SHIFT).cast("int").alias("producer"),
                         F.col("key").bitwiseAND((1 << KEY_SHIFT) - 1).alias("seq"), "st", "l_part")


def candidates(inputs: RunInputs) -> IdSet:
    """Seqs that may have been sent without a ledger row (the metadata's sent_upto)."""
    spans = {}
    for producer, meta in inputs.producers.items():
        if meta.rows >= meta.sent_upto + 1:
            continue
        contiguous = 0 <= meta.max_seq == meta.rows - 1  # rows are 0..max_seq: only a tail
        spans[producer] = (meta.max_seq + 1 if contiguous else 0, meta.sent_upto)
    return IdSet.from_ranges(spans)


def _frame(spark: Any, keys: Any, **columns: Any) -> Any:
    """A small table of ids made on the driver, shipped as Arrow (row by row through pickle
    it took 14 s for 300,000 ids here; a pyarrow Table goes as Arrow: 2 s)."""
    return spark.createDataFrame(pa.table({"key": pa.array(keys, pa.int64()), **columns}))


def _small(frame: Any, rows: int) -> Any:
    """Broadcast a table of exceptions when it is small; millions of lost ids (a 100 M-message
    run losing 3 %) go through a shuffle join instead of filling the driver's heap."""
    from pyspark.sql import functions as F

    return F.broadcast(frame) if rows <= BROADCAST_ROWS else frame


def _key() -> Any:
    from pyspark.sql import functions as F

    return F.shiftleft(F.col("producer").cast("long"), KEY_SHIFT).bitwiseOR(F.col("seq"))


def match(spark: Any, inputs: RunInputs, ledger: Any, final_log: Any, say: Any,
          together: bool = False) -> Match:
    """Every count per partition, the lost ids' details and their ranges; `together`: the
    ledger's and the log's bitmaps in two jobs side by side (side_by_side.py)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    ours = final_log.where(F.col("producer").isNotNull() & F.col("seq").isNotNull())
    rows, words = run_jobs(together, lambda: _bitmaps(_ids(ledger), "st"), lambda: _words(ours))
    by_status = {s: IdSet.from_buckets((p, b, bm) for p, b, st, bm, _ in rows if st == s)
                 for s in (ACKED, FAILED, UNKNOWN)}
    acked, failed_rows, unknown_rows = by_status[ACKED], by_status[FAILED], by_status[UNKNOWN]
    in_ledger = acked | failed_rows | unknown_rows
    notes = []
    extra_rows = sum(r[-1] for r in rows) - len(in_ledger)
    if extra_rows:
        notes.append(f"the ledger has {extra_rows:,} rows for ids already in it: each id counted "
                     "once, by its best status")
    cand = candidates(inputs) - in_ledger
    for producer in cand.producers():
        say(f"producer {producer}: {len(IdSet({producer: cand.bits[producer]})):,} sent seqs "
            "have no ledger row: counting them as unknown")
    producers, masks = words["producer"].to_numpy(), words["mask"].to_numpy()
    present = IdSet.from_words(producers, words["word"].to_numpy(), masks)
    twice = words["n"].to_numpy() > np.bitwise_count(masks.view(np.uint64))
    lost_ids, unacked_ids = acked - present, present - acked
    lost_total = len(lost_ids)
    say(f"exceptions: {lost_total:,} acked but lost, {len(unacked_ids):,} in the log unacknowledged,"
        f" {int(twice.sum()):,} runs of 64 ids with a copy")
    kinds = [(lost_ids, 0), (unacked_ids, 1)]
    keys = np.concatenate([ids.keys(KEY_SHIFT) for ids, _ in kinds])
    kind = np.concatenate([np.full(len(ids), k, np.int8) for ids, k in kinds])
    exceptions = (ledger.join(_small(_frame(spark, keys, kind=pa.array(kind)), len(keys)), "key")
                  .persist(StorageLevel.MEMORY_AND_DISK))
    kept = [exceptions]  # unpersisted here whatever happens; `lost` goes back to the caller
    lost = None
    try:
        if lost_total:
            lost = (exceptions.where((F.col("kind") == 0) & (F.col("st") == ACKED))
                    .select("key", F.col("l_part").alias("pp"), "offset", "ack_ts", "epoch")
                    .dropDuplicates(["key"]).persist(StorageLevel.MEMORY_AND_DISK))
        # The log's records in the runs of 64 ids that matter (an unacknowledged id held, or
        # more records than ids), read once for both questions.
        suspects = (producers[twice], words["word"].to_numpy()[twice])
        wanted = np.unique(np.concatenate([
            (suspects[0].astype(np.int64) << (KEY_SHIFT - 6)) | suspects[1],
            unacked_ids.keys(KEY_SHIFT) >> 6]))
        nearby = (ours.withColumn("key", _key()).join(_small(_frame(spark, wanted).select(
            F.col("key").alias("w")), len(wanted)), F.shiftright("key", 6) == F.col("w"))
            .select("key", "producer", "seq", "partition").persist(StorageLevel.MEMORY_AND_DISK))
        kept.append(nearby)
        unacked = _unacked_present(spark, exceptions.where(F.col("kind") == 1), nearby,
                                   unacked_ids, cand)
        dups = _duplicates(spark, nearby, *suspects)
    except BaseException:
        if lost is not None:
            lost.unpersist()
        raise
    finally:
        for frame in kept:
            frame.unpersist()
    lost_ranges = []
    for producer in lost_ids.producers():
        runs, total = ranges(lost_ids.seqs(producer), RANGE_CAP)
        lost_ranges += [{"producer": producer, "lo": lo, "hi": hi, "ranges": total}
                        for lo, hi in runs]
    lost_keys = _small(_frame(spark, lost_ids.keys(KEY_SHIFT), was_lost=pa.array(
        np.ones(lost_total, np.bool_))), lost_total) if lost_total else None
    return Match(lost, lost_keys, lost_total, lost_ranges, notes, unacked, dups,
                 len(cand - present))


def _unacked_present(spark: Any, ledger_rows: Any, nearby: Any, ids: IdSet,
                     cand: IdSet) -> list[dict[str, Any]]:
    """Counts of the log's unacknowledged ids by (status, ledger partition, log partition);
    status CANDIDATE: no ledger row but maybe sent; None: never sent by this run."""
    from pyspark.sql import functions as F

    keys = ids.keys(KEY_SHIFT)
    if len(keys) == 0:
        return []
    is_cand = (ids & cand).keys(KEY_SHIFT)
    frame = _small(_frame(spark, keys).join(
        _frame(spark, is_cand, cand=pa.array([True] * len(is_cand), pa.bool_())), "key", "left"),
        len(keys))
    shift = 20  # best status first, then its partition, as one number
    best = ledger_rows.groupBy("key").agg(
        F.min(F.shiftleft("st", shift).bitwiseOR(F.col("l_part") + 1)).alias("sp"))
    where = (nearby.join(frame.select("key"), "key")
             .groupBy("key").agg(F.max("partition").alias("logp")))
    status = F.when(F.col("sp").isNotNull(), F.shiftright("sp", shift)) \
        .when(F.col("cand"), F.lit(CANDIDATE))
    lp = F.when(F.col("sp").isNotNull(), F.col("sp").bitwiseAND((1 << shift) - 1) - 1) \
        .when(F.col("cand"), F.lit(-1))
    joined = frame.join(_small(best, len(keys)), "key", "left").join(
        _small(where, len(keys)), "key", "left")
    return [r.asDict() for r in joined.groupBy(status.alias("st"), lp.alias("lp"), "logp")
            .count().collect()]


def _duplicates(spark: Any, nearby: Any, producers: np.ndarray,
                words: np.ndarray) -> list[dict[str, Any]]:
    """Per log partition: ids held more than once and their extra copies, searched only in
    the runs of 64 ids that hold more records than ids."""
    from pyspark.sql import functions as F

    if len(words) == 0:
        return []
    suspects = _small(spark.createDataFrame(pa.table({
        "producer": pa.array(producers, pa.int32()), "word": pa.array(words, pa.int64())})),
        len(words))
    copies = (nearby.withColumn("word", F.shiftright("seq", 6)).join(suspects, ["producer", "word"])
              .groupBy("producer", "seq").agg(F.count("*").alias("c"),
                                              F.max("partition").alias("pp"))
              .where(F.col("c") > 1))
    return [r.asDict() for r in copies.groupBy("pp").agg(
        F.count("*").alias("duplicate_ids"), F.sum(F.col("c") - 1).alias("duplicates")).collect()]


def _groups(per_part: dict[tuple[int, int], int], lost: Counter[int],
            unacked: list[dict[str, Any]], dups: list[dict[str, Any]],
            cand_absent: int) -> list[dict[str, Any]]:
    """The counts per partition, from ledger rows per (partition, status) moved by the few
    ids whose partition the log decides (unacknowledged ones it holds)."""
    parts = ({p for p, _ in per_part} | set(lost) | {u["logp"] for u in unacked}
             | {u["lp"] for u in unacked if u["lp"] is not None} | {d["pp"] for d in dups})
    if cand_absent:
        parts.add(-1)
    groups = []
    for p in sorted(x for x in parts if x is not None):
        g = dict.fromkeys(COUNTS, 0)
        g["pp"] = p
        g["acked"] = per_part.get((p, ACKED), 0)
        g["failed"] = per_part.get((p, FAILED), 0)
        g["unknown"] = per_part.get((p, UNKNOWN), 0) + (cand_absent if p == -1 else 0)
        for u in unacked:
            n, st = int(u["count"]), u["st"]
            name = {FAILED: "failed", UNKNOWN: "unknown", CANDIDATE: "unknown"}.get(st)
            if name is not None and st != CANDIDATE and u["lp"] == p:
                g[name] -= n  # it counts where the log holds it...
            if u["logp"] == p:
                if name is not None:
                    g[name] += n  # ...here
                g["unacked_present"] += n
                g["unknown_present"] += n if st in (UNKNOWN, CANDIDATE) else 0
                g["not_in_ledger"] += n if st is None else 0
        g["acked_lost"] = lost.get(p, 0)
        g["sent"] = g["acked"] + g["failed"] + g["unknown"]
        g["in_log_ids"] = g["acked"] - g["acked_lost"] + g["unacked_present"]
        for d in dups:
            if d["pp"] == p:
                g["duplicates"] += int(d["duplicates"])
                g["duplicate_ids"] += int(d["duplicate_ids"])
        groups.append(g)
    return groups
