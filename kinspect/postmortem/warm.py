"""The warm-up: every query shape the post-mortem runs, once, on a made-up run dir.

A fresh session spends its first query compiling code and loading classes (~8 s here); running
the whole post-mortem on twenty thousand made-up messages moves that cost to the moment the
engine starts, long before anyone presses `m`. The data is made up and never reported.
In: a Spark session (and, for the newest real run, KINSPECT_HOME's runs). Out: a warmer
session; nothing reported. The warm engine (spark/spark_server.py) warms itself with it, and
the driver's class archive (spark/jvm_archive.py) is dumped by a JVM that ran it:

    python -m kinspect.postmortem.warm --dump PATH    # the archive's child: warm up, dump
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kinspect.load.ack_ledger import LEDGER_SCHEMA
from kinspect.load.rundir import FINAL_LOG_DIR, LEDGER_DIR, SETTINGS_FILE
from kinspect.load.verify import FINAL_LOG_SCHEMA, PreviousSeqs

T0 = 1_700_000_000_000
TOPIC = "kinspect-warmup"
# Per producer. A few hundred compile every query; ten thousand also let the JIT compile the
# loops a real run spends its time in (the first post-mortem of a 100,000-message run after
# the warm-up: 5.3-5.9 s with 400, 4.4-4.6 s with 10,000; warm-up ~10 s either way).
MESSAGES = 10_000
LOST_FROM, LOST_TO = MESSAGES // 5, MESSAGES // 2  # producer 0's seqs (= offsets) lost
FAILED_EVERY, FAILED_AT = 97, 5  # seq % 97 == 5: a send that failed
Kept = list[tuple[int, int, int]]  # (producer, seq, leader epoch) of each record kept


def _table(schema: pa.Schema, columns: Mapping[str, Sequence[object]], rows: int) -> pa.Table:
    """Columns by name; any column of the schema not given is null (the schema may grow)."""
    return pa.table({f.name: pa.array(columns.get(f.name, [None] * rows), f.type) for f in schema},
                    schema=schema)


def make_warmup_run(run_dir: Path) -> Path:
    """Two producers on two partitions; producer 0 loses a window of acked messages, a few
    sends fail, one record is duplicated and the last seqs have no ledger row (unknown)."""
    (run_dir / LEDGER_DIR).mkdir(parents=True, exist_ok=True)
    (run_dir / FINAL_LOG_DIR).mkdir(parents=True, exist_ok=True)
    (run_dir / SETTINGS_FILE).write_text(json.dumps({"topic": TOPIC, "acks": "1"}))
    kept: dict[int, Kept] = {}
    for producer in (0, 1):
        seqs = list(range(MESSAGES - 10))  # the last 10: sent, never answered (sent_upto)
        _write_ledger(run_dir, producer, seqs)
        kept[producer] = _kept(producer, seqs)
    kept[1].insert(50, kept[1][40])  # a duplicate, a little later: reordered too
    for partition, rows in kept.items():
        _write_final_log(run_dir, partition, rows)
    faults = [{"ts": T0 + LOST_FROM * 10 - 100, "action": "isolate", "target": "kafka1",
               "detail": "warm-up"}]
    (run_dir / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))
    return run_dir


def _failed(seq: int) -> bool:
    return seq % FAILED_EVERY == FAILED_AT


def _epoch(seq: int) -> int:
    """The leader epoch a seq was acked in: 1 before the lost window, 2 from it."""
    if seq < LOST_FROM:
        return 1
    return 2


def _write_ledger(run_dir: Path, producer: int, seqs: list[int]) -> None:
    n = len(seqs)
    offsets: list[int] = []
    epochs: list[int | None] = []
    status: list[str] = []
    errors: list[str | None] = []
    for offset, seq in enumerate(seqs):
        if _failed(seq):
            offsets.append(-1)
            epochs.append(None)
            status.append("failed")
            errors.append("_MSG_TIMED_OUT")
        else:
            offsets.append(offset)
            epochs.append(_epoch(seq))
            status.append("acked")
            errors.append(None)
    table = _table(LEDGER_SCHEMA, {
        "id": [f"{producer}-{s}" for s in seqs], "producer": [producer] * n, "seq": seqs,
        "topic": [TOPIC] * n, "partition": [producer] * n, "offset": offsets,
        "leader_epoch": epochs, "status": status, "error": errors,
        "send_ts": [T0 + s * 10 for s in seqs], "ack_ts": [T0 + s * 10 + 4 for s in seqs],
    }, n).replace_schema_metadata({
        "kinspect.sent_upto": str(MESSAGES - 1), "kinspect.topic": TOPIC, "kinspect.acks": "1"})
    pq.write_table(table, run_dir / LEDGER_DIR / f"p{producer:03d}-000000.parquet")


def _kept(producer: int, seqs: list[int]) -> Kept:
    """What the cluster kept of a producer's sends: not the failed ones, nor (producer 0)
    the lost window; the kept ones after the window in epoch 3."""
    kept: Kept = []
    for seq in seqs:
        if _failed(seq):
            continue
        lost = LOST_FROM <= seq < LOST_TO
        if producer == 0 and lost:
            continue
        epoch = 3
        if seq < LOST_FROM:
            epoch = 1
        kept.append((producer, seq, epoch))
    return kept


def _write_final_log(run_dir: Path, partition: int, rows: Kept) -> None:
    n = len(rows)
    table = _table(FINAL_LOG_SCHEMA, {
        "topic": [TOPIC] * n, "partition": [partition] * n, "offset": list(range(n)),
        "id": [f"{p}-{s}" for p, s, _ in rows], "producer": [p for p, _, _ in rows],
        "seq": [s for _, s, _ in rows], "leader_epoch": [e for _, _, e in rows],
        "timestamp": [T0 + i * 10 for i in range(n)],
    }, n)
    order = PreviousSeqs()  # as verify writes it: prev_seq beside each record
    table = table.append_column("prev_seq", pa.chunked_array(
        [order.of(b) for b in table.to_batches()]))
    pq.write_table(table, run_dir / FINAL_LOG_DIR / f"part-{partition:04d}.parquet")


def warm_attribution(spark: object, run_dir: Path) -> None:
    """The measured-attribution queries too (a kept replica snapshot and the brokers'
    leadership history), which the made-up run dir above has no evidence to reach."""
    from kinspect.postmortem.evidence.inputs import load_inputs
    from kinspect.postmortem.evidence.segments import HELD_SCHEMA
    from kinspect.postmortem.matching import frames, queries

    held = run_dir / "warmup-held.parquet"
    lost = list(range(LOST_FROM, LOST_TO))
    pq.write_table(_table(HELD_SCHEMA, {
        "snapshot": ["warmup"] * len(lost), "snapshot_ms": [T0 + LOST_TO * 10 + 1000] * len(lost),
        "node": ["kafka1"] * len(lost), "partition": [0] * len(lost), "offset": lost,
        "batch_epoch": [2] * len(lost), "producer": [0] * len(lost), "seq": lost}, len(lost)),
        held)
    inputs = load_inputs(run_dir)
    every_run = frames.final_log_frame(spark, inputs)
    ledger = frames.ledger_frame(spark, inputs)
    start = LOST_FROM - 50  # broker 1 led from here, and truncated back to it later
    history = [(0, 1, 2, start, T0 + start * 10, None, start, T0 + LOST_TO * 10 + 1000),
               (0, 2, 3, LOST_FROM - 20, T0 + LOST_FROM * 10 + 200, None, None, None)]
    from pyspark.sql import functions as F

    details = ledger.where(F.col("st") == frames.ACKED).select(
        "key", F.col("l_part").alias("pp"), "offset", "ack_ts", "epoch").where(
        F.col("offset").between(LOST_FROM, LOST_TO - 1))
    queries.lost_by_epoch(queries.attribute(details, every_run, frames.held_frame(
        spark, held, inputs.run_id), history))


LATEST_RUN_ROWS = 1_000_000  # ledger rows + final log records: a demo's run, not a benchmark's


def warm_on_latest_run(spark: object, home_runs: Path | None = None) -> Path | None:
    """The whole post-mortem once more on the newest run dir of this KINSPECT_HOME, when it
    is a judged demo-sized run, its report thrown away: the made-up run leaves the first real
    post-mortem ~1.5 s slower than the next ones (4.3-5.2 s against 2.8-3.4 s for 100,000
    messages in the TUI), the second real one is not. Which run it was, or None."""
    from kinspect.load.rundir import latest_run
    from kinspect.postmortem import run_postmortem
    from kinspect.postmortem.evidence.inputs import load_inputs

    run = latest_run(home_runs)
    if run is None:
        return None
    try:
        inputs = load_inputs(run)
        if inputs.ledger_rows + inputs.final_log_rows > LATEST_RUN_ROWS:
            return None
        with tempfile.TemporaryDirectory(prefix="kinspect-warm-") as out:
            run_postmortem(run, out=Path(out), spark=spark)
    except Exception:  # a warm-up only: a run dir it cannot judge is the real job's to say
        return None
    return run


def warm_up(spark: object) -> None:
    """The whole post-mortem on a made-up run dir, then the attribution's queries."""
    from kinspect.postmortem import run_postmortem

    with tempfile.TemporaryDirectory(prefix="kinspect-warmup-") as tmp:
        run = make_warmup_run(Path(tmp) / "run")
        run_postmortem(run, spark=spark)
        warm_attribution(spark, run)


def dump_class_archive(target: Path) -> None:
    """In the class archive's child: a warm-up post-mortem, then the JVM's exit (which writes
    the archive at `target`)."""
    from kinspect.postmortem.spark import job, jvm_archive

    spark = job.start_spark()
    warm_up(spark)
    jvm_archive.exit_and_dump(spark, target)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:]
    if argv is not None:
        args = argv
    if len(args) != 2 or args[0] != "--dump":
        print("usage: python -m kinspect.postmortem.warm --dump PATH "
              "(the class archive's child; make it with kinspect.postmortem.spark.jvm_archive)",
              file=sys.stderr)
        return 2
    dump_class_archive(Path(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
