"""Matching the ledger with the final log by message id: one aggregate per side, set algebra
on the driver, and only the exceptions back as rows.

Each side is read once and folded where it is read into runs of 64 ids (a bit mask and a
record count per (producer, seq >> 6), hash-aggregated): the ledger's per status and ledger
partition, the final log's per partition, with the final log's other counts (this run's
records, foreign ones, other runs', records behind their producer's previous seq) in the same
pass. 10 M messages come back as ~250,000 rows a side. The driver does the rest with bit sets
(idsets.py): acked-but-lost is `acked - present`; an unacknowledged id the log holds takes
its best ledger status and partition from the ledger's sets and its log partition from the
log's; an id in two partitions is a copy. Only two things go back to Spark as rows: the lost
ids' ack details (a broadcast join while they are few, for attribution), and the records of
the few runs of 64 ids that hold more records than ids (which id was written twice).

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
import pyarrow.compute as pc

from kinspect.postmortem.evidence.inputs import RunInputs
from kinspect.postmortem.matching.frames import (
    ACKED,
    FAILED,
    INDEFINITE,
    KEY_SHIFT,
    UNKNOWN,
    is_ours,
    message_key,
)
from kinspect.postmortem.matching.idsets import IdSet, ranges
from kinspect.postmortem.matching.offsets import unsettled_words
from kinspect.postmortem.matching.queries import lost_in
from kinspect.postmortem.matching.queries import small_side as _small
from kinspect.postmortem.matching.results import LogStats, LostEpoch, LostRun, PartDuplicates, Unacked
from kinspect.postmortem.spark.side_by_side import run_jobs
from kinspect.postmortem.story.values import Counts

RANGE_CAP = 50  # lost ranges listed per producer; the rest are counted
CANDIDATE = 4  # an id that may have been sent (sent_upto) and has no ledger row: unknown
WORD_SHIFT = KEY_SHIFT - 6  # key >> 6 is producer << WORD_SHIFT | seq >> 6


@dataclass
class Match:
    lost: Any  # DataFrame: key, pp, offset, ack_ts, epoch of every acked-but-lost id (or None)
    lost_words: Any  # DataFrame: lw, lm: the acked-but-lost ids in runs of 64 (see lost_in)
    lost_total: int
    lost_ranges: list[LostRun]
    notes: list[str]
    unacked: list[Unacked]  # the log's unacknowledged ids by (st, lp, logp)
    candidates_absent: int  # maybe sent, no ledger row, not in the log: partition -1
    per_part: dict[tuple[int, int], int]  # the ledger's rows per (partition, status)
    log_stats: list[LogStats]  # per log partition
    across: Counter[tuple[int, str]]  # copies in different partitions, by (pp, count name)
    suspects: np.ndarray  # runs of 64 ids (key >> 6) with more records than ids in a partition
    moved_words: np.ndarray  # runs of 64 ids where an acked id may sit off its acked offset

    def duplicates(self, every_run: Any, run_id: str | None) -> list[PartDuplicates]:
        """Per log partition: ids held more than once and their extra copies (a Spark job
        when some run of 64 ids holds more records than ids, so it can go beside others)."""
        found = self.across + _copies_within(every_run, run_id, self.suspects)
        return [PartDuplicates(pp, found[(pp, "duplicate_ids")], found[(pp, "duplicates")])
                for pp in sorted({p for p, _ in found})]

    def groups(self, epochs: list[LostEpoch],
               duplicates: list[PartDuplicates]) -> dict[int, Counts]:
        """The counts per partition (pp; -1: none), given the lost ids by partition and epoch
        (queries.lost_by_epoch: one row per lost id went into them) and the duplicates."""
        lost_by_part: Counter[int] = Counter()
        for row in epochs:
            lost_by_part[row.pp] += row.count
        return _groups(self.per_part, lost_by_part, self.unacked, duplicates,
                       self.candidates_absent)


def _bit(column: str) -> Any:
    """The id's bit in its run of 64: 1 << (seq & 63), from a seq or key column."""
    from pyspark.sql import functions as F

    return F.expr(f"shiftleft(CAST(1 AS BIGINT), CAST({column} & 63 AS INT))")


def placed(offset: str) -> Any:
    """A fingerprint of (id, offset): XOR-ed over a run of 64 ids, equal on both sides when
    each id sits at the offset the other side says (offsets.py; 2^-64 to be fooled)."""
    from pyspark.sql import functions as F

    return F.xxhash64(F.col("key"), F.col(offset))


def ledger_words(ledger: Any) -> pa.Table:
    """(w, st, l_part, m, n, h): per run of 64 ids (w = key >> 6), status and ledger partition,
    the ids' bits, the rows, and the acknowledged ids' placed() fingerprint."""
    from pyspark.sql import functions as F

    return ledger.groupBy(F.shiftright("key", 6).alias("w"), "st", "l_part").agg(
        F.bit_or(_bit("key")).alias("m"), F.count("*").alias("n"),
        F.bit_xor(F.when(F.col("st") == ACKED, placed("offset"))).alias("h")).toArrow()


def log_words(final_log: Any, run_id: str | None) -> pa.Table:
    """(w, partition, m, n, h, mine, foreign, other, behind): this run's ids per run of 64 and
    log partition with their records and placed() fingerprint, and per partition (w null) the
    records that carry no id of this run; `mine`, `foreign`, `other` and `behind` count this
    run's records, records with no producer, other runs' records, and this run's records
    behind their producer's previous seq."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    mine = F.coalesce(is_ours(run_id), F.lit(False))
    foreign = F.col("producer").isNull()
    if "prev_seq" in final_log.columns:
        behind = F.col("seq") < F.col("prev_seq")
    else:  # a final log from before verify wrote prev_seq: sorted here
        window = Window.partitionBy("partition", "producer", "run").orderBy("offset")
        final_log = final_log.withColumn("behind", F.col("seq") < F.lag("seq").over(window))
        behind = F.col("behind")
    has_id = mine & ~foreign & F.col("seq").isNotNull()
    key = message_key(F.col("producer"), F.col("seq"))

    def n(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    return final_log.withColumn("key", key).groupBy(
        F.when(has_id, F.shiftright(key, 6)).alias("w"), "partition").agg(
        F.bit_or(F.when(has_id, _bit("seq"))).alias("m"), F.count("*").alias("n"),
        F.bit_xor(F.when(has_id, placed("offset"))).alias("h"),
        n(mine).alias("mine"), n(foreign).alias("foreign"), n(~foreign & ~mine).alias("other"),
        n(mine & F.coalesce(behind, F.lit(False))).alias("behind")).toArrow()


def _idset(table: pa.Table) -> IdSet:
    w = table["w"].to_numpy()
    return IdSet.from_words((w >> WORD_SHIFT).astype(np.int64), w & ((1 << WORD_SHIFT) - 1),
                            table["m"].to_numpy())


def candidates(inputs: RunInputs) -> IdSet:
    """Seqs that may have been sent without a ledger row (the metadata's sent_upto)."""
    spans = {}
    for producer, meta in inputs.producers.items():
        if meta.rows >= meta.sent_upto + 1:
            continue
        contiguous = 0 <= meta.max_seq == meta.rows - 1  # rows are 0..max_seq: only a tail
        spans[producer] = (meta.max_seq + 1 if contiguous else 0, meta.sent_upto)
    return IdSet.from_ranges(spans)


def match(spark: Any, inputs: RunInputs, ledger: Any, every_run: Any, say: Any,
          together: bool = False) -> Match:
    """Every count per partition, the final log's counts, and the lost ids' keys and ranges;
    `together`: the two sides' aggregates side by side (side_by_side.py). The lost ids' ack
    details (`lost`) are a DataFrame not yet computed, for the caller to persist and use."""
    from pyspark.sql import functions as F

    ledger_table, log_table = run_jobs(together, lambda: ledger_words(ledger),
                                       lambda: log_words(every_run, inputs.run_id))
    # Dense bit sets only per status and for the log as a whole (1 bit a message each); what
    # needs partitions is worked out on the few runs of 64 ids it concerns.
    by_status = {s: _idset(ledger_table.filter(pc.equal(ledger_table["st"], s)))
                 for s in (ACKED, FAILED, INDEFINITE, UNKNOWN)}
    acked = by_status[ACKED]
    in_ledger = acked | by_status[FAILED] | by_status[INDEFINITE] | by_status[UNKNOWN]
    per_part = {(int(r["l_part"]), int(r["st"])): int(r["n_sum"]) for r in
                ledger_table.group_by(["l_part", "st"]).aggregate([("n", "sum")]).to_pylist()}
    notes = []
    extra_rows = sum(per_part.values()) - len(in_ledger)
    if extra_rows:
        notes.append(f"the ledger has {extra_rows:,} rows for ids already in it: each id counted "
                     "once, by its best status")
    cand = candidates(inputs) - in_ledger
    for producer in cand.producers():
        say(f"producer {producer}: {len(IdSet({producer: cand.bits[producer]})):,} sent seqs "
            "have no ledger row: counting them as unknown")
    ids_table = log_table.filter(pc.is_valid(log_table["w"]))
    present = _idset(ids_table)
    twice = ids_table.filter(pc.greater(ids_table["n"], _popcount(ids_table)))
    suspects = np.unique(twice["w"].to_numpy())
    lost_ids, unacked_ids = acked - present, present - acked
    lost_total = len(lost_ids)
    say(f"exceptions: {lost_total:,} acked but lost, {len(unacked_ids):,} in the log unacknowledged,"
        f" {len(suspects):,} runs of 64 ids with a copy")
    lost = lost_words = None
    if lost_total:
        heads, masks = lost_ids.words(WORD_SHIFT)
        lost_words = _small(spark.createDataFrame(pa.table({"lw": heads, "lm": masks})),
                            len(heads))
        lost = (ledger.where(F.col("st") == ACKED)
                .join(lost_words, F.shiftright("key", 6) == F.col("lw")).where(lost_in())
                .select("key", F.col("l_part").alias("pp"), "offset", "ack_ts", "epoch"))
        if extra_rows:  # an id acknowledged twice: one of its rows (no shuffle without them)
            lost = lost.dropDuplicates(["key"])
    lost_ranges = []
    for producer in lost_ids.producers():
        runs, total = ranges(lost_ids.seqs(producer), RANGE_CAP)
        lost_ranges += [LostRun(producer, lo, hi, total) for lo, hi in runs]
    unacked = _unacked_present(unacked_ids, ledger_table, ids_table, cand)
    moved = unsettled_words(ledger_table.filter(pc.equal(ledger_table["st"], ACKED)), ids_table)
    return Match(lost, lost_words, lost_total, lost_ranges, notes, unacked, len(cand - present),
                 per_part, _log_stats(log_table), _copies_across(ids_table, suspects), suspects,
                 moved)


def _popcount(table: pa.Table) -> pa.Array:
    return pa.array(np.bitwise_count(table["m"].to_numpy().view(np.uint64)).astype(np.int64))


def _log_stats(log_table: pa.Table) -> list[LogStats]:
    rows = log_table.group_by("partition").aggregate(
        [(column, "sum") for column in ("mine", "behind", "foreign", "other")]).to_pylist()
    return [LogStats(int(r["partition"]), int(r["mine_sum"] or 0), int(r["behind_sum"] or 0),
                     int(r["foreign_sum"] or 0), int(r["other_sum"] or 0)) for r in rows]


def _rows_in(table: pa.Table, heads: np.ndarray, *columns: str) -> list[np.ndarray]:
    """The rows of `table` in the runs of 64 ids `heads` (ascending): each row's index in
    `heads`, its mask (uint64) and the named columns."""
    rows = table.filter(pc.is_in(table["w"], pa.array(heads, pa.int64())))
    at = np.searchsorted(heads, rows["w"].to_numpy())
    return [at, rows["m"].to_numpy().view(np.uint64), *(rows[c].to_numpy() for c in columns)]


def _unacked_present(ids: IdSet, ledger_table: pa.Table, ids_table: pa.Table,
                     cand: IdSet) -> list[Unacked]:
    """Counts of the log's unacknowledged ids by (status, ledger partition, log partition):
    an id takes its best status and, within it, its least ledger partition; status CANDIDATE:
    no ledger row but maybe sent (partition -1); None: never sent by this run. Its log
    partition is the greatest that holds it. Worked on their runs of 64 ids only."""
    heads, masks = ids.words(WORD_SHIFT)
    if not len(heads):
        return []
    left = masks.view(np.uint64).copy()
    at, m, st, lp = _rows_in(ledger_table, heads, "st", "l_part")
    places: list[tuple[int | None, int | None, np.ndarray]] = []
    for code, ledger_part in sorted({(int(a), int(b)) for a, b in zip(st, lp, strict=True)}):
        rows = (st == code) & (lp == ledger_part)  # each run of 64 once per (status, partition)
        taken = np.zeros_like(left)
        taken[at[rows]] = left[at[rows]] & m[rows]
        left &= ~taken
        places.append((code, ledger_part, taken))
    taken = left & cand.masks_at(heads, WORD_SHIFT)
    places += [(CANDIDATE, -1, taken), (None, None, left & ~taken)]
    log_at, log_m, log_p = _rows_in(ids_table, heads, "partition")
    out = []
    for status, part, these in places:
        rest = these.copy()
        for logp in sorted(set(log_p.tolist()), reverse=True):
            rows = log_p == logp
            here = np.zeros_like(rest)
            here[log_at[rows]] = rest[log_at[rows]] & log_m[rows]
            count = int(np.bitwise_count(here).sum())
            if count:
                out.append(Unacked(status, part, int(logp), count))
                rest &= ~here
    return out


def _copies_across(ids_table: pa.Table, suspects: np.ndarray) -> Counter[tuple[int, str]]:
    """Ids held in more than one log partition, counted under the greatest (duplicate_ids
    once, duplicates: copies - 1); runs of 64 with copies within a partition are left to
    _copies_within, which counts their records in every partition."""
    out: Counter[tuple[int, str]] = Counter()
    w = ids_table["w"].to_numpy()
    if not len(w):  # nothing of the run in the final log (a power cut can leave it empty)
        return out
    order = np.argsort(w, kind="stable")
    w, m = w[order], ids_table["m"].to_numpy().view(np.uint64)[order]
    starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])  # each run of 64's partitions
    union = np.bitwise_or.reduceat(m, starts)
    held = np.add.reduceat(np.bitwise_count(m).astype(np.int64), starts)
    heads = w[starts][np.bitwise_count(union) < held]  # an id in two of its partitions
    heads = heads[~np.isin(heads, suspects)]
    if not len(heads):
        return out
    at, m, partition = _rows_in(ids_table, heads, "partition")
    bits = ((m[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)) == 1
    row, bit = np.nonzero(bits)
    ids = (heads[at[row]] << 6) | bit
    unique, which, copies = np.unique(ids, return_inverse=True, return_counts=True)
    last = np.full(len(unique), -1, np.int64)
    np.maximum.at(last, which, partition[row].astype(np.int64))
    for pp, n in zip(last[copies > 1], copies[copies > 1], strict=True):
        out[(int(pp), "duplicate_ids")] += 1
        out[(int(pp), "duplicates")] += int(n) - 1
    return out


def _copies_within(every_run: Any, run_id: str | None,
                   suspects: np.ndarray) -> Counter[tuple[int, str]]:
    """The ids of the runs of 64 ids that hold more records than ids in some partition,
    counted from their records (in every partition), under the greatest that holds a copy."""
    from pyspark.sql import functions as F

    out: Counter[tuple[int, str]] = Counter()
    if not len(suspects):
        return out
    # Tables made on the driver go to Spark as Arrow (as pickled rows, 300,000 ids took 14 s).
    frame = _small(every_run.sparkSession.createDataFrame(
        pa.table({"w": pa.array(suspects, pa.int64())})), len(suspects))
    mine = every_run.where(is_ours(run_id) & F.col("producer").isNotNull()
                           & F.col("seq").isNotNull())
    key = message_key(F.col("producer"), F.col("seq"))
    held = (mine.join(frame, F.shiftright(key, 6) == F.col("w"))
            .groupBy("producer", "seq").agg(F.count("*").alias("c"),
                                            F.max("partition").alias("pp"))
            .where(F.col("c") > 1).groupBy("pp").agg(
                F.count("*").alias("ids"), F.sum(F.col("c") - 1).alias("extra")).collect())
    for row in held:
        out[(int(row["pp"]), "duplicate_ids")] += int(row["ids"])
        out[(int(row["pp"]), "duplicates")] += int(row["extra"])
    return out


def _groups(per_part: dict[tuple[int, int], int], lost: Counter[int], unacked: list[Unacked],
            dups: list[PartDuplicates], cand_absent: int) -> dict[int, Counts]:
    """The counts per partition, from ledger rows per (partition, status) moved by the few
    ids whose partition the log decides (unacknowledged ones it holds)."""
    parts = ({p for p, _ in per_part} | set(lost) | {u.logp for u in unacked}
             | {u.lp for u in unacked if u.lp is not None} | {d.pp for d in dups})
    if cand_absent:
        parts.add(-1)
    return {p: _group(p, per_part, lost, unacked, dups, cand_absent)
            for p in sorted(x for x in parts if x is not None)}


# The counts an unacknowledged id moves with it, by its ledger status: it counts where the
# log holds it. An indefinite failure is a failure too.
_MOVED: dict[int, tuple[str, ...]] = {FAILED: ("failed",),
                                      INDEFINITE: ("failed", "indefinite_failed"),
                                      UNKNOWN: ("unknown",), CANDIDATE: ("unknown",)}
_PRESENT: dict[int, tuple[str, ...]] = {INDEFINITE: ("indefinite_failed_present",),
                                        UNKNOWN: ("unknown_present",),
                                        CANDIDATE: ("unknown_present",)}


def _group(p: int, per_part: dict[tuple[int, int], int], lost: Counter[int],
           unacked: list[Unacked], dups: list[PartDuplicates], cand_absent: int) -> Counts:
    g = {f: 0 for f in ("failed", "indefinite_failed", "unknown", "unacked_present",
                        "indefinite_failed_present", "unknown_present", "not_in_ledger")}
    g["indefinite_failed"] = per_part.get((p, INDEFINITE), 0)
    g["failed"] = per_part.get((p, FAILED), 0) + g["indefinite_failed"]
    g["unknown"] = per_part.get((p, UNKNOWN), 0) + (cand_absent if p == -1 else 0)
    for u in unacked:
        _move(g, u, p)
    acked, acked_lost = per_part.get((p, ACKED), 0), lost.get(p, 0)
    here = [d for d in dups if d.pp == p]
    return Counts(sent=acked + g["failed"] + g["unknown"], acked=acked, failed=g["failed"],
                  indefinite_failed=g["indefinite_failed"], unknown=g["unknown"],
                  in_log_ids=acked - acked_lost + g["unacked_present"],
                  acked_lost=acked_lost, unacked_present=g["unacked_present"],
                  indefinite_failed_present=g["indefinite_failed_present"],
                  unknown_present=g["unknown_present"], not_in_ledger=g["not_in_ledger"],
                  duplicates=sum(d.duplicates for d in here),
                  duplicate_ids=sum(d.duplicate_ids for d in here))


def _move(g: dict[str, int], u: Unacked, p: int) -> None:
    """One (status, ledger partition, log partition) count of unacknowledged ids the log holds,
    counted in partition p where the log holds it, not where the ledger sent it."""
    moved: tuple[str, ...] = ()
    if u.st is not None:
        moved = _MOVED.get(u.st, ())
    if u.st != CANDIDATE and u.lp == p:
        for name in moved:
            g[name] -= u.count  # it counts where the log holds it...
    if u.logp != p:
        return
    for name in moved:
        g[name] += u.count  # ...here
    g["unacked_present"] += u.count
    if u.st is None:
        g["not_in_ledger"] += u.count
        return
    for name in _PRESENT.get(u.st, ()):
        g[name] += u.count
