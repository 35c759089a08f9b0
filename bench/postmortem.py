"""Benchmark: the PySpark post-mortem on a generated 10M-message run dir, against DuckDB.

    python -m bench.postmortem [--messages 10000000] [--dir DIR] [--master local[2]]

The run dir is generated with numpy/pyarrow (4 producers, 6 partitions; one ~3 % window of
acked-but-lost messages at one leader epoch, failures, duplicates, reordering, and unknown
seqs that only the ledger's sent_upto metadata reveals). The same counts are computed by
DuckDB on the same Parquet files; they must be identical (exit 1 if not).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinspect.load.ack_ledger import LEDGER_SCHEMA
from kinspect.load.verify import FINAL_LOG_SCHEMA, PreviousSeqs

T0 = 1_700_000_000_000
CHUNK = 50_000
KEYS = ("sent", "acked", "failed", "unknown", "in_log", "acked_lost", "unacked_present",
        "duplicates", "reordered", "offsets_rewritten")


def _ids(producer: np.ndarray, seq: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(pc.cast(pa.array(producer), pa.string()),
                                       pc.cast(pa.array(seq), pa.string()), "-")


def generate(run_dir: Path, messages: int, producers: int = 4, partitions: int = 6,
             rate: float = 40_000.0, seed: int = 7) -> dict[str, Any]:
    """Write ledger/ and final_log/ (vectorized); return what was planted."""
    rng = np.random.default_rng(seed)
    per = messages // producers
    producer = np.repeat(np.arange(producers, dtype=np.int32), per)
    seq = np.tile(np.arange(per, dtype=np.int64), producers)
    send = T0 + (seq * producers * 1000 / rate).astype(np.int64) + producer
    ack = send + rng.integers(3, 30, len(seq))
    part = (((seq // 100) + producer) % partitions).astype(np.int32)  # sticky batches of 100
    run_s = per * producers / rate
    fault = T0 + int(run_s * 0.4 * 1000)
    lost_end = fault + int(run_s * 1000 * 0.03 * partitions)  # ~3 % of all messages
    epoch = np.full(len(seq), 4, np.int32)
    lost = (part == 0) & (send >= fault) & (send < lost_end)
    epoch[(part == 0) & (send >= lost_end)] = 5
    status = np.zeros(len(seq), np.int8)  # 0 acked, 1 failed, 2 unknown
    status[(rng.random(len(seq)) < 0.002) & ~lost] = 1
    # The last producer was SIGKILLed: its last 20k reports never reached the ledger, except
    # every third one (so the gaps are not just a tail).
    last = producers - 1
    killed = (producer == last) & (seq >= per - 20_000) & (seq % 3 != 0)
    # The final log: lost ones gone, failed ones mostly gone, half of the killed ones present,
    # 0.05 % of acked ones written twice (the copy a little later: reordering too).
    present = ~lost & ((status != 1) | (rng.random(len(seq)) < 0.1))
    present &= ~killed | (seq % 2 == 0)
    dup = present & (status == 0) & (rng.random(len(seq)) < 0.0005)
    idx = np.concatenate([np.nonzero(present)[0], np.nonzero(dup)[0]])
    when = np.concatenate([send[present], send[dup] + 50])
    offset = _acked_offsets(part, send, lost, present, idx, when, fault, partitions)
    offset[status == 1] = -1
    _write_ledger(run_dir, producer, seq, part, offset, epoch, status, send, ack, killed, per)
    _write_final_log(run_dir, producer[idx], seq[idx], part[idx], epoch[idx], when, partitions)
    return {"fault_ts": fault, "lost_planted": int(lost.sum()), "duplicates_planted": int(dup.sum()),
            "rewritten_planted": int(lost.sum())}


def _acked_offsets(part: np.ndarray, send: np.ndarray, lost: np.ndarray, present: np.ndarray,
                   idx: np.ndarray, when: np.ndarray, fault: int, partitions: int) -> np.ndarray:
    """Each message's offset as its delivery report said it: where the final log holds it (the
    first copy), and for the lost ones where the old leader put them, from the partition's
    length at the fault on; the new leader then wrote its own records at those offsets again
    (Jepsen's inconsistent offsets, one per lost message)."""
    log_part = part[idx]
    position = np.empty(len(idx), np.int64)
    for p in range(partitions):  # _write_final_log's order: by time within each partition
        rows = np.nonzero(log_part == p)[0]
        rows = rows[np.argsort(when[rows], kind="stable")]
        position[rows] = np.arange(len(rows))
    offset = np.full(len(part), -1, np.int64)
    held = np.nonzero(present)[0]
    offset[held] = position[:len(held)]  # the first copies come first in idx
    for p in np.unique(part[lost]):
        gone = np.nonzero(lost & (part == p))[0]
        gone = gone[np.argsort(send[gone], kind="stable")]
        before = int(np.count_nonzero((log_part == p) & (when < fault)))
        offset[gone] = before + np.arange(len(gone))
    return offset


def _write_ledger(run_dir: Path, producer: np.ndarray, seq: np.ndarray, part: np.ndarray,
                  offset: np.ndarray, epoch: np.ndarray, status: np.ndarray, send: np.ndarray,
                  ack: np.ndarray, killed: np.ndarray, per: int) -> None:
    out = run_dir / "ledger"
    out.mkdir(parents=True, exist_ok=True)
    names = np.array(["acked", "failed", "unknown"])
    for p in np.unique(producer):
        mine = np.nonzero(producer == p)[0]
        for chunk, lo in enumerate(range(0, per, CHUNK)):
            rows = mine[lo:lo + CHUNK]
            upto = int(seq[rows[-1]])
            rows = rows[~killed[rows]]
            failed = status[rows] == 1
            table = pa.table({
                "id": _ids(producer[rows], seq[rows]), "producer": pa.array(producer[rows]),
                "seq": pa.array(seq[rows]), "topic": pa.array(["bench"] * len(rows)),
                "partition": pa.array(part[rows]), "offset": pa.array(offset[rows]),
                "leader_epoch": pa.array(epoch[rows], mask=failed),
                "status": pa.array(names[status[rows]]),
                "error": pa.array(["_MSG_TIMED_OUT" if f else None for f in failed.tolist()]),
                "send_ts": pa.array(send[rows]), "ack_ts": pa.array(ack[rows]),
            }, schema=LEDGER_SCHEMA).replace_schema_metadata({
                "kinspect.sent_upto": str(upto), "kinspect.acks": "1", "kinspect.topic": "bench"})
            pq.write_table(table, out / f"p{p:03d}-{chunk:06d}.parquet")
    (run_dir / "settings.json").write_text(json.dumps({"topic": "bench", "acks": "1"}))


def _write_final_log(run_dir: Path, producer: np.ndarray, seq: np.ndarray, part: np.ndarray,
                     epoch: np.ndarray, when: np.ndarray, partitions: int) -> None:
    out = run_dir / "final_log"
    out.mkdir(parents=True, exist_ok=True)
    for p in range(partitions):
        rows = np.nonzero(part == p)[0]
        rows = rows[np.argsort(when[rows], kind="stable")]
        n = len(rows)
        table = pa.table({
            "topic": pa.array(["bench"] * n), "partition": pa.array(part[rows]),
            "offset": pa.array(np.arange(n, dtype=np.int64)), "id": _ids(producer[rows], seq[rows]),
            "producer": pa.array(producer[rows]), "seq": pa.array(seq[rows]),
            "leader_epoch": pa.array(epoch[rows]), "timestamp": pa.array(when[rows]),
            "run": pa.nulls(n, pa.string()),  # ids as before run ids: the legacy path
        }, schema=FINAL_LOG_SCHEMA)
        order = PreviousSeqs()  # verify's prev_seq, computed as verify computes it
        table = table.append_column("prev_seq", pa.chunked_array(
            [order.of(b) for b in table.to_batches(max_chunksize=32_768)]))
        pq.write_table(table, out / f"part-{p:04d}.parquet")


def duckdb_counts(run_dir: Path) -> dict[str, int]:
    """The same counts in DuckDB (unknown seqs from the same sent_upto metadata)."""
    import duckdb

    from kinspect.postmortem.evidence.inputs import load_inputs

    inputs = load_inputs(run_dir)
    upto = ", ".join(f"({p}, {m.sent_upto})" for p, m in inputs.producers.items())
    ledger, final = f"'{run_dir}/ledger/p*.parquet'", f"'{run_dir}/final_log/part-*.parquet'"
    sql = f"""
    WITH l AS (SELECT producer, seq, status FROM read_parquet({ledger})),
    s AS (SELECT * FROM (VALUES {upto}) t(producer, upto)),
    u AS (SELECT s.producer, g.seq FROM s, generate_series(0, s.upto) g(seq)
          ANTI JOIN l ON l.producer = s.producer AND l.seq = g.seq),
    a AS (SELECT producer, seq, status FROM l UNION ALL SELECT producer, seq, 'unknown' FROM u),
    f AS (SELECT producer, seq, count(*) AS c FROM read_parquet({final})
          WHERE producer IS NOT NULL GROUP BY producer, seq),
    j AS (SELECT a.status, f.c FROM a FULL OUTER JOIN f ON a.producer = f.producer AND a.seq = f.seq),
    r AS (SELECT count(*) AS in_log, count(*) FILTER (WHERE seq < prev) AS reordered FROM (
          SELECT seq, lag(seq) OVER (PARTITION BY partition, producer ORDER BY "offset") AS prev
          FROM read_parquet({final}))),
    w AS (SELECT count(DISTINCT (a.partition, a."offset")) AS rewritten
          FROM read_parquet({ledger}) a JOIN read_parquet({final}) o
          ON o.partition = a.partition AND o."offset" = a."offset"
          WHERE a.status = 'acked' AND o.id <> a.id)
    SELECT count(status), count(*) FILTER (WHERE status = 'acked'),
           count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'unknown'),
           (SELECT in_log FROM r), count(*) FILTER (WHERE status = 'acked' AND c IS NULL),
           count(*) FILTER (WHERE (status IS NULL OR status <> 'acked') AND c IS NOT NULL),
           coalesce(sum(c - 1) FILTER (WHERE c > 1), 0), (SELECT reordered FROM r),
           (SELECT rewritten FROM w)
    FROM j"""
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    row = con.execute(sql).fetchone()
    assert row is not None
    return {k: int(v) for k, v in zip(KEYS, row, strict=True)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.postmortem")
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--dir", type=Path, help="run dir to generate into (default: a temp dir)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--keep", action="store_true", help="keep the generated temp dir")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="kinspect-bench-")) if args.dir is None else None
    run_dir = args.dir or (tmp / "run")  # type: ignore[operator]
    try:
        return _bench(run_dir, args.messages, args.master,
                      dict(item.split("=", 1) for item in args.conf))
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _bench(run_dir: Path, messages: int, master: str, conf: dict[str, str]) -> int:
    from kinspect.postmortem import run_postmortem

    started = time.monotonic()
    if not (run_dir / "ledger").is_dir():
        planted = generate(run_dir, messages)
        print(f"generated {messages:,} messages in {time.monotonic() - started:.1f} s: {planted}",
              file=sys.stderr)
    started = time.monotonic()
    report = run_postmortem(run_dir, master=master, chart=True, conf=conf,
                            progress=lambda line: print(f"  {time.monotonic() - started:5.1f} s  {line}",
                                                        file=sys.stderr))
    spark_s = time.monotonic() - started
    started = time.monotonic()
    duck = duckdb_counts(run_dir)
    duck_s = time.monotonic() - started
    spark = {k: int(getattr(report, k)) for k in KEYS}
    same = spark == duck
    print("| engine | rows (ledger / final log) | seconds | ratio |")
    print("|---|---|---:|---:|")
    rows = f"{report.inputs.ledger_rows:,} / {report.in_log:,}"
    print(f"| {report.engine} ({master}, end to end incl. Spark start) | {rows} | {spark_s:.1f} | "
          f"{spark_s / duck_s:.1f}x |")
    print(f"| duckdb (2 threads) | {rows} | {duck_s:.1f} | 1.0x |")
    print(f"\ncounts: {json.dumps(spark)}")
    if not same:
        print(f"MISMATCH: duckdb says {json.dumps(duck)}", file=sys.stderr)
        return 1
    print("counts identical in both engines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
