"""Inconsistent offsets (Jepsen's `inconsistent-offsets`): a partition's offset that the
producer was told holds one message while the final log holds another there. The fingerprint
of a log truncated and written again: a leader acknowledged at an offset, lost it, and a later
leader wrote another record at the same offset.

Cheap where nothing happened: match.py folds each side's (id, offset) pairs into one XOR-ed
fingerprint per run of 64 ids and partition, beside the ids' bits. A run whose acknowledged
ids are all in the log, once each, with equal fingerprints, has every id at its acked offset.
Only the other runs (`unsettled_words`) and the lost ids are looked up: their acked offsets,
joined with the final log on (partition, offset).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinspect.postmortem.story.values import OffsetsRewritten


def unsettled_words(acked: pa.Table, ids: pa.Table) -> np.ndarray:
    """The runs of 64 ids (w) where an acknowledged id is in the log in its acked partition but
    perhaps not at its acked offset: the two sides' bits, counts or fingerprints differ."""
    both = acked.select(["w", "l_part", "m", "n", "h"]).join(
        ids.select(["w", "partition", "m", "n", "h"]).rename_columns(
            ["w", "l_part", "pm", "pn", "ph"]), ["w", "l_part"], join_type="inner")
    if not both.num_rows:
        return np.zeros(0, np.int64)
    mine, theirs = _u64(both["m"]), _u64(both["pm"])
    shared = (mine & theirs) != 0
    same = ((mine == theirs) & (_bits(mine) == _int(both["n"])) & (_bits(theirs) == _int(both["pn"]))
            & (_u64(both["h"]) == _u64(both["ph"])))
    return np.unique(both["w"].to_numpy()[shared & ~same])


def _u64(column: pa.ChunkedArray) -> np.ndarray:
    values: np.ndarray = pc.fill_null(column, 0).to_numpy().view(np.uint64)
    return values


def _int(column: pa.ChunkedArray) -> np.ndarray:
    values: np.ndarray = column.to_numpy().astype(np.int64)
    return values


def _bits(masks: np.ndarray) -> np.ndarray:
    counts: np.ndarray = np.bitwise_count(masks).astype(np.int64)
    return counts


def rewritten(ledger: Any, every_run: Any, lost: Any, moved_words: np.ndarray,
              run_id: str | None, lost_total: int = 0) -> list[OffsetsRewritten]:
    """The acked offsets the final log holds another record at, by (partition, the epoch that
    acknowledged, the epoch that wrote what is there now): from the lost ids and the ids of
    the unsettled runs, each acked offset once. The acks looked up are few beside the log
    (`lost_total` plus 64 per unsettled run): they go to the log's scan, not the log to them."""
    from pyspark.sql import functions as F

    from kinspect.postmortem.matching.frames import ACKED, is_ours, message_key
    from kinspect.postmortem.matching.queries import small_side

    acks = []
    if lost is not None:
        acks.append(lost.select("key", "pp", "offset", F.col("epoch").alias("a_epoch")))
    if len(moved_words):
        words = small_side(ledger.sparkSession.createDataFrame(
            pa.table({"mw": pa.array(moved_words, pa.int64())})), len(moved_words))
        acks.append(ledger.where(F.col("st") == ACKED)
                    .join(words, F.shiftright("key", 6) == F.col("mw"))
                    .select("key", F.col("l_part").alias("pp"), "offset",
                            F.col("epoch").alias("a_epoch")))
    if not acks:
        return []
    acked = acks[0]
    for more in acks[1:]:
        acked = acked.unionByName(more)
    held = every_run.select(
        F.col("partition").alias("pp"), "offset", F.col("leader_epoch").alias("h_epoch"),
        F.when(is_ours(run_id) & F.col("seq").isNotNull(),
               message_key(F.col("producer"), F.col("seq"))).alias("h_key"))
    other = (F.col("h_key").isNull()) | (F.col("h_key") != F.col("key"))
    few = small_side(acked, lost_total + 64 * len(moved_words))
    # One row per offset first: an offset acknowledged twice (a zombie's ack and the new
    # leader's) is one inconsistent offset, under the older acknowledging epoch.
    offsets = (held.join(few, ["pp", "offset"]).where(other)
               .groupBy("pp", "offset").agg(F.min("a_epoch").alias("a_epoch"),
                                            F.first("h_epoch").alias("h_epoch")))
    found = (offsets.groupBy("pp", "a_epoch", "h_epoch")
             .agg(F.count("*").alias("n"), F.min("offset").alias("lo"),
                  F.max("offset").alias("hi")).collect())
    rows = [OffsetsRewritten(int(r["pp"]), _opt(r["a_epoch"]), _opt(r["h_epoch"]), int(r["n"]),
                             int(r["lo"]), int(r["hi"])) for r in found]
    return sorted(rows, key=lambda row: (row.pp, row.first_offset))


def _opt(value: Any) -> int | None:
    if value is None:
        return None
    return int(value)
