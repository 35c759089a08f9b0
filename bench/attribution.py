"""Attribution accuracy: who kinspect blames for lost messages, against the brokers' own bytes.

For each backend, ROUNDS runs of each isolation scenario (the leader cut off from everything,
and from ZooKeeper only), each in the same fresh KINSPECT_HOME. For every run: the share of
the acknowledged-but-lost messages that kinspect blames on the isolated broker, measured (with
the kept replica snapshots) and inferred (the same run dir re-judged without them); and the peer,
Kafka's own DumpLogSegments over the kept segments: the share of lost ids that the isolated
broker's log really held, at the epoch kinspect names. One lab at a time.

`python -m bench.attribution [ROUNDS] [process|docker ...]`
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROUNDS = 5
SCENARIOS = ("acks1-isolate-leader", "acks1-isolate-leader-zk")


def _share(report: dict[str, Any], broker: int) -> float:
    lost = report["acked_lost"]
    return sum(a["count"] for a in report["attribution"] if a["broker"] == broker) / lost if lost else 1.0


def judge(run_dir: Path, row: dict[str, Any], spark: Any) -> dict[str, Any]:
    """Measured share, inferred share, and DumpLogSegments' confirmation of one run."""
    import duckdb

    from kinspect.postmortem import run_postmortem
    from tests.helpers.oracles import held_by

    report = json.loads((run_dir / "postmortem" / "report.json").read_text())
    victim = int(row["faults"][0]["nodes"][0].removeprefix("kafka"))
    blind = run_dir.with_name(run_dir.name + "-inferred")
    shutil.copytree(run_dir, blind, ignore=shutil.ignore_patterns("replicas", "postmortem"))
    inferred = run_postmortem(blind, spark=spark, chart=False)
    held = held_by(run_dir, victim, report["run_id"])
    con = duckdb.connect()
    final = {r[0] for r in con.execute(f"SELECT id FROM read_parquet('{run_dir}/final_log/*.parquet')"
                                       " WHERE id IS NOT NULL").fetchall()}
    lost = [r[0] for r in con.execute(f"SELECT id FROM read_parquet('{run_dir}/ledger/p*.parquet')"
                                      " WHERE status = 'acked'").fetchall() if r[0] not in final]
    epochs = {a["leader_epoch"] for a in report["attribution"] if a["broker"] == victim}
    confirmed = sum(1 for i in lost if held.get(i) in epochs)
    return {"lost": report["acked_lost"], "measured": _share(report, victim),
            "inferred": _share(inferred.to_json(), victim),
            "methods": sorted({a["method"] for a in report["attribution"]}),
            "segments_confirm": confirmed / len(lost) if lost else 1.0, "oracle_lost": len(lost)}


def run_backend(backend: str, rounds: int, spark: Any) -> list[dict[str, Any]]:
    from kinspect.scenarios.catalog import find
    from kinspect.scenarios.scenario_run import run_scenario

    results = []
    with tempfile.TemporaryDirectory(prefix="kinspect-attr-") as home:
        os.environ["KINSPECT_HOME"], os.environ["KINSPECT_BACKEND"] = home, backend
        try:
            for name in SCENARIOS:
                for n in range(rounds):
                    run_dir = Path(home) / "runs" / f"{name}-{n}"
                    row = run_scenario(find(name), run_dir, lambda _line: None, keep_lab=True,
                                       spark=spark)
                    result = {"backend": backend, "scenario": name, "round": n, **judge(run_dir, row, spark)}
                    print(json.dumps(result), flush=True)
                    results.append(result)
        finally:
            from kinspect.lab import open_backend

            open_backend(backend).down(lambda _line: None)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.attribution", description=__doc__)
    parser.add_argument("rounds", nargs="?", type=int, default=ROUNDS,
                        help=f"rounds per backend (default {ROUNDS})")
    parser.add_argument("backends", nargs="*", default=["process", "docker"],
                        choices=["process", "docker"], help="lab backends (default both)")
    args = parser.parse_args(argv)
    rounds, backends = args.rounds, args.backends
    from kinspect.postmortem.spark.job import start_spark

    spark = start_spark("local[2]")
    results: list[dict[str, Any]] = []
    try:
        for backend in backends:
            results += run_backend(backend, rounds, spark)
    finally:
        spark.stop()
    print(f"{'backend':8} {'scenario':26} runs  lost (min-max)   measured  inferred  segments")
    for backend in backends:
        for name in SCENARIOS:
            rows = [r for r in results if r["backend"] == backend and r["scenario"] == name]
            if not rows:
                continue
            lost = [r["lost"] for r in rows]
            print(f"{backend:8} {name:26} {len(rows):4}  {min(lost):>6,}-{max(lost):<7,}  "
                  f"{min(r['measured'] for r in rows):8.2%}  {min(r['inferred'] for r in rows):8.2%}  "
                  f"{min(r['segments_confirm'] for r in rows):8.2%}   (worst run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
