"""The PySpark post-mortem: what was acknowledged, what the cluster kept, and why they differ."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.postmortem import report as rep
from kinspect.postmortem import timeline as tl
from kinspect.postmortem.brokerlogs import read_broker_logs
from kinspect.postmortem.inputs import load_inputs, run_window

__all__ = ["run_postmortem"]


def run_postmortem(run_dir: Path, out: Path | None = None, master: str = "local[2]",
                   verbose: bool = False, progress: Callable[[str], None] | None = None,
                   spark: Any = None, chart: bool = True, memory: str = "2g",
                   conf: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the job and write report.json, report.md and timeline.png; return the report.

    `spark` lets tests share one session; a session started here is stopped here.
    """
    started = time.monotonic()
    say = progress or (lambda _line: None)
    inputs = load_inputs(run_dir)
    out = out or run_dir / "postmortem"
    first_send, last_ack = run_window(inputs)
    fault = tl.main_fault(inputs.faults, first_send, last_ack)
    log_events = read_broker_logs(inputs.broker_logs, inputs.topic)
    if inputs.broker_logs:
        say(f"broker logs: {len(log_events):,} relevant lines from {len(inputs.broker_logs)} nodes")

    from kinspect.postmortem import job

    own = spark is None
    try:
        if own:
            say(f"starting Spark ({master})…")
            try:
                spark = job.start_spark(master, verbose, memory, conf)
            except Exception as exc:
                raise KinspectError(f"cannot start Spark ({master}): {_first_line(exc)}") from None
        try:
            results = _run_queries(spark, inputs, int(fault["ts"]) if fault else None, say,
                                   epoch_starts(log_events, inputs.topic))
        finally:
            if own:
                spark.stop()
    except KinspectError:
        raise
    except Exception as exc:  # Py4J and Spark errors: one line, the rest with --verbose
        raise KinspectError(f"the Spark job failed: {_first_line(exc)}"
                            + ("" if verbose else " (rerun with --verbose for Spark's log)")) from None
    engine, groups, epochs, ranges, log_stats, gaps, bounds, per_second = results
    report = _assemble(inputs, groups, epochs, ranges, log_stats, gaps, bounds, fault, log_events,
                       engine)
    report["out"] = str(out)
    report["seconds"] = round(time.monotonic() - started, 2)
    events = report.pop("_events")
    report["per_second"] = per_second  # the TUI draws the same series as timeline.png
    rep.write(report, out)
    if chart:
        from kinspect.postmortem.chart import draw

        draw(per_second, events, report["attribution"], out / "timeline.png",
             f"{inputs.topic}: acknowledged and failed messages per second")
    say(f"done in {report['seconds']:.1f} s: {out}")
    return report


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def epoch_starts(log_events: list[dict[str, Any]], topic: str) -> list[tuple[int, int, int, int]]:
    """(partition, epoch, start offset, ts) from the leaders' own log lines."""
    prefix = f"{topic}-"
    out = []
    for e in log_events:
        name = str(e.get("partition") or "")
        if e.get("kind") == "log_leader_start" and name.startswith(prefix) \
                and name[len(prefix):].isdigit() and e.get("offset") is not None:
            out.append((int(name[len(prefix):]), int(e["epoch"]), int(e["offset"]), int(e["ts"])))
    return out


def _run_queries(spark: Any, inputs: Any, fault_ts: int | None, say: Callable[[str], None],
                 starts: list[tuple[int, int, int, int]]) -> Any:
    """Every Spark query, in the order that lets the one big shuffle be done once."""
    import pyspark
    from pyspark import StorageLevel

    from kinspect.postmortem import job, queries

    say(f"reading ledger: {inputs.ledger_rows:,} rows in {len(inputs.ledger_files):,} files")
    ledger = job.ledger_frame(spark, inputs)
    extra = job.candidates(spark, inputs, say)
    say(f"reading final log: {inputs.final_log_rows:,} rows in {len(inputs.final_log_files)} partitions")
    final_log = job.final_log_frame(spark, inputs)
    slim = job.match(ledger, final_log, extra).persist(StorageLevel.MEMORY_AND_DISK)
    epochs: list[dict[str, Any]] = []
    ranges: list[dict[str, Any]] = []
    lost = None
    try:
        say("matching acknowledgements with the final log by message id…")
        groups = job.counts(slim)
        lost_total = sum(g["acked_lost"] for g in groups)
        if lost_total:
            say(f"acked but lost: {lost_total:,}; who acknowledged them, and the lost ranges…")
            lost = queries.infer_epochs(queries.lost_detail(slim, ledger, lost_total), final_log,
                                        starts).persist(StorageLevel.MEMORY_AND_DISK)
            epochs = queries.lost_by_epoch(lost)
            ranges = queries.lost_ranges(lost)
        say("acknowledgements over time…")
        bounds, per_second, gaps = queries.ack_timing(ledger, fault_ts, lost, lost_total)
    finally:
        if lost is not None:
            lost.unpersist()
        slim.unpersist()
    say("final log: order within each producer…")
    log_stats = queries.final_log_stats(final_log)
    return (f"pyspark {pyspark.__version__}", groups, epochs, ranges, log_stats, gaps, bounds,
            per_second)


def _assemble(inputs: Any, groups: list[dict[str, Any]], epochs: list[dict[str, Any]],
              ranges: list[dict[str, Any]], log_stats: list[dict[str, Any]], gaps: list[dict[str, Any]],
              bounds: dict[str, Any], fault: dict[str, Any] | None, log_events: list[dict[str, Any]],
              engine: str) -> dict[str, Any]:
    first_send, _ = run_window(inputs)
    first_ack, last_ack = bounds["first_ack_ts"], bounds["last_ack_ts"]
    events = tl.merge(inputs.timeline, inputs.faults, log_events, inputs.topic,
                      (first_send or first_ack or 0) - tl.BEFORE_MS, (last_ack or 0) + tl.AFTER_MS
                      if last_ack else None)
    leaders = tl.epoch_leaders(events)
    total = rep.totals(groups)
    partitions = rep.partition_rows(groups, epochs, log_stats, inputs.final_log_partitions)
    lost_ranges, more = rep.ranges_by_producer(ranges)
    unavailable = [{"partition": f"{inputs.topic}-{g['pp']}", "start": g["start"], "end": g["end"],
                    "ms": g["end"] - g["start"], "reason": "no successful acknowledgement"} for g in gaps]
    no_leader = tl.no_leader_windows(events, last_ack)
    per_partition: dict[str, int] = {}
    for w in unavailable:
        per_partition[w["partition"]] = per_partition.get(w["partition"], 0) + w["ms"]
    entries, timeline_more = tl.report_entries(events, int(fault["ts"]) if fault else None)
    notes = []
    if inputs.timeline is None:
        notes.append("no timeline was recorded (run `kinspect watch --run-dir` during the load)")
    if inputs.faults is None:
        notes.append("no fault journal (faults.jsonl) in the run dir")
    if not inputs.broker_logs:
        notes.append("no broker logs (broker-logs/<node>/*.log) in the run dir")
    if inputs.acks == "0":
        notes.append("acks=0: 'acked' means handed to the network; no broker confirmed anything")
    report: dict[str, Any] = {
        "engine": engine, "run_dir": str(inputs.run_dir), "topic": inputs.topic, "acks": inputs.acks,
        "sent": total["sent"], "acked": total["acked"], "failed": total["failed"],
        "unknown": total["unknown"], "in_log": sum(p["in_log"] for p in partitions),
        "in_log_ids": total["in_log_ids"], "foreign_records": sum(p["foreign"] for p in partitions),
        "acked_lost": total["acked_lost"], "unacked_present": total["unacked_present"],
        "not_in_ledger": total["not_in_ledger"], "duplicates": total["duplicates"],
        "duplicate_ids": total["duplicate_ids"], "reordered": sum(p["reordered"] for p in partitions),
        "partitions": partitions, "lost_ranges": lost_ranges, "lost_ranges_more": more,
        "attribution": rep.attribution(epochs, inputs.topic, leaders),
        "fault": fault, "timeline": entries, "timeline_more": timeline_more,
        "unavailable": sorted(unavailable + no_leader, key=lambda w: w["start"]),
        "unavailable_ms": max(per_partition.values(), default=0),
        "no_leader_ms": sum(w["ms"] for w in no_leader),
        "first_ack_after_fault_ms": _after(bounds["first_ack_after_fault_ts"], fault),
        "first_kept_ack_after_fault_ms": _after(bounds["first_kept_ack_after_fault_ts"], fault),
        "run": {"first_send_ts": first_send, "first_ack_ts": first_ack, "last_ack_ts": last_ack},
        "inputs": {"ledger_files": len(inputs.ledger_files), "ledger_rows": inputs.ledger_rows,
                   "final_log_files": len(inputs.final_log_files), "timeline": inputs.timeline is not None,
                   "faults": inputs.faults is not None, "broker_logs": sorted(inputs.broker_logs)},
        "notes": notes,
    }
    report["explanation"] = rep.explain(report, events, leaders)
    report["_events"] = events
    return report


def _after(ts: int | None, fault: dict[str, Any] | None) -> int | None:
    return None if fault is None or ts is None else int(ts - fault["ts"])
