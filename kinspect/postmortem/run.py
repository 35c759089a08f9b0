"""One post-mortem, start to finish: read the evidence, match in Spark, tell the story, write it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.load.run_timeline import read_live_loss
from kinspect.load.rundir import POSTMORTEM_DIR
from kinspect.model.events import JsonObject, TimelineEvent
from kinspect.postmortem import lost_set
from kinspect.postmortem.evidence import power_cuts
from kinspect.postmortem.evidence.brokerlogs import read_broker_logs
from kinspect.postmortem.evidence.inputs import RunInputs, evidence_window, load_inputs, run_window
from kinspect.postmortem.matching.leadership import leaderships
from kinspect.postmortem.story import report as rep
from kinspect.postmortem.story import timeline as tl
from kinspect.postmortem.story.values import (
    ConsumerSide,
    Counts,
    InputsSummary,
    PowerCutStory,
    Report,
    RunWindow,
    Unavailable,
    known_sum,
)
from kinspect.validation import writable_dir

if TYPE_CHECKING:
    from kinspect.postmortem.matching.match import Match
    from kinspect.postmortem.matching.results import LostEpoch, PartDuplicates, QueryResults
    from kinspect.postmortem.story.values import OffsetsRewritten

__all__ = ["run_postmortem"]


def run_postmortem(run_dir: Path, out: Path | None = None, master: str = "local[2]",
                   verbose: bool = False, progress: Callable[[str], None] | None = None,
                   spark: Any = None, chart: bool = True, memory: str = "2g",
                   conf: dict[str, str] | None = None) -> Report:
    """Run the job and write report.json, report.md and timeline.png; return the report.

    `spark` lets tests share one session; a session started here is stopped here.
    """
    started = time.monotonic()
    say = progress or _silent
    inputs = load_inputs(run_dir)
    if out is None:
        out = run_dir / POSTMORTEM_DIR
    writable_dir(out, "--out")  # before Spark: a long job must not lose its result to a path
    out.mkdir(parents=True, exist_ok=True)
    lost_set.clear_lost(out)
    start, end = evidence_window(inputs, tl.BEFORE_MS, tl.AFTER_MS)
    fault = tl.main_fault(inputs.faults, start, end)
    every_line, log_events = _broker_log_events(inputs, start, end, say)
    # Who led since when reaches back before the run: the leader at its start was elected earlier.
    history = [h.row() for h in leaderships([*(inputs.timeline or []), *every_line], inputs.topic)]
    # The kept replica snapshots are read (in Python) while Spark starts and matches; only
    # the attribution waits for them.
    snapshots = ThreadPoolExecutor(1, thread_name_prefix="kinspect-snapshots")
    held_table = snapshots.submit(_held_table, inputs, out, say)
    snapshots.shutdown(wait=False)
    session = _Session(spark, master, verbose, memory, conf)
    try:
        results, consumer_side = _in_spark(session, inputs, _ts(fault), say, history,
                                           held_table.result, out)
    except KinspectError:
        raise
    except Exception as exc:  # Py4J and Spark errors: one line, the rest with --verbose
        raise KinspectError(_spark_failed(exc, verbose)) from None
    report, events = _assemble(inputs, results, fault, log_events, out)
    report.check_lost(results.lost_total)
    report = replace(_with_consumer_side(report, consumer_side), out=str(out),
                     seconds=round(time.monotonic() - started, 2),
                     per_second=tuple(results.timing.per_second))
    rep.write(report, out)
    if chart:
        _chart(report, events, out, inputs.topic)
    say(f"done in {report.seconds:.1f} s: {out}")
    return report


def _silent(_line: str) -> None:
    """Progress told to no one."""


def _broker_log_events(inputs: RunInputs, start: int | None, end: int | None,
                       say: Callable[[str], None]
                       ) -> tuple[list[TimelineEvent], list[TimelineEvent]]:
    """The brokers' logs' events up to the window's end (the leadership history reaches back
    before the run), and those inside the window."""
    every_line = read_broker_logs(inputs.broker_logs, inputs.topic)
    if end is not None:
        every_line = [e for e in every_line if e.ts <= end]
    log_events = every_line
    if start is not None:
        log_events = [e for e in every_line if e.ts >= start]
    if inputs.broker_logs:
        say(f"broker logs: {len(log_events):,} relevant lines from {len(inputs.broker_logs)} nodes")
    return every_line, log_events


@dataclass(frozen=True)
class _Session:
    """The Spark session the caller gave (None: one is started, and stopped, here) and how
    to start one."""

    given: Any
    master: str
    verbose: bool
    memory: str
    conf: dict[str, str] | None


def _in_spark(session: _Session, inputs: RunInputs, fault_ts: int | None,
              say: Callable[[str], None], history: list[tuple[Any, ...]],
              held_table: Callable[[], Path | None], out: Path,
              ) -> tuple[QueryResults, ConsumerSide | None]:
    """The queries' results and the consumer side, in the session given or one started here."""
    spark = session.given
    if spark is None:
        spark = _start_spark(session, say)
    try:
        results = _run_queries(spark, inputs, fault_ts, say, history, held_table, out)
        held_table()  # a failure to read them fails the job even when none was lost
        return results, _consumer_side(spark, inputs, say)
    finally:
        if session.given is None:
            spark.stop()


def _start_spark(session: _Session, say: Callable[[str], None]) -> Any:
    from kinspect.postmortem.spark import job

    say(f"starting Spark ({session.master})…")
    try:
        return job.start_spark(session.master, session.verbose, session.memory, session.conf)
    except Exception as exc:
        raise KinspectError(f"cannot start Spark ({session.master}): {_first_line(exc)}") from None


def _spark_failed(exc: BaseException, verbose: bool) -> str:
    """A Spark job's failure in one line; without --verbose, how to see Spark's log."""
    said = f"the Spark job failed: {_first_line(exc)}"
    if verbose:
        return said
    return said + " (rerun with --verbose for Spark's log)"


def _ts(event: TimelineEvent | None) -> int | None:
    if event is None:
        return None
    return event.ts


def _chart(report: Report, events: list[TimelineEvent], out: Path, topic: str) -> None:
    """timeline.png: the run's faults, leaders and acknowledgements."""
    from kinspect.postmortem.story.chart import draw

    draw([s.to_json() for s in report.per_second], events,
         [a.to_json() for a in report.attribution], out / "timeline.png",
         f"{topic}, acks={report.acks}: faults, leaders, acknowledgements")


def _first_line(exc: BaseException) -> str:
    """An exception's first line of words (its type's name when it has none), cut at 300."""
    text = str(exc).strip().splitlines()
    if not text:
        return type(exc).__name__[:300]
    return text[0][:300]


def _held_table(inputs: RunInputs, out: Path, say: Callable[[str], None]) -> Path | None:
    """The kept replica snapshots as a Parquet table for Spark (None when none were kept)."""
    if not inputs.replica_snapshots or not inputs.run_id:  # only a run's own ids are matched
        return None
    import pyarrow.parquet as pq

    from kinspect.postmortem.evidence.segments import read_snapshots

    held = read_snapshots(inputs.replica_snapshots, inputs.topic, inputs.run_id)
    table = held.table()
    say(f"replica snapshots: {len(inputs.replica_snapshots)}, {table.num_rows:,} of the run's "
        "records held")
    path = out / "replicas-held.parquet"
    pq.write_table(table, path)
    return path


def _run_queries(spark: Any, inputs: RunInputs, fault_ts: int | None, say: Callable[[str], None],
                 history: list[tuple[Any, ...]], held_table: Callable[[], Path | None],
                 out: Path) -> QueryResults:
    """Every Spark query: one aggregate per side for the match (match.py), then the lost ids'
    attribution (and their set, lost_set.py) and the ledger's timing. Each side is read from
    Parquet by each query that needs it: a columnar re-read costs less than building a cache
    of it."""
    import pyspark
    from pyspark import StorageLevel

    from kinspect.postmortem.matching import frames, offsets, queries
    from kinspect.postmortem.matching.match import match
    from kinspect.postmortem.matching.results import AckTiming, QueryResults
    from kinspect.postmortem.spark.side_by_side import run_jobs, small

    say(f"reading ledger ({inputs.ledger_rows:,} rows in {len(inputs.ledger_files):,} files) "
        f"and final log ({inputs.final_log_rows:,} rows in {len(inputs.final_log_files)} "
        "partitions)…")
    ledger = frames.ledger_frame(spark, inputs)
    every_run = frames.final_log_frame(spark, inputs)
    together = small(inputs)
    say("matching acknowledgements with the final log by message id…")
    found = match(spark, inputs, ledger, every_run, say, together)
    kept = []  # unpersisted at the end, whatever happens

    def attribution() -> tuple[list[LostEpoch], list[OffsetsRewritten]]:
        """Who acknowledged the lost ids; then which acked offsets hold another record now
        (the lost ids' and those of the runs of ids that sit off their acked offsets)."""
        if found.lost is None:
            return [], offsets.rewritten(ledger, every_run, None, found.moved_words,
                                         inputs.run_id, found.lost_total)
        lost = found.lost.persist(StorageLevel.MEMORY_AND_DISK)
        kept.append(lost)
        lost_set.write_lost(lost, out)
        path = held_table()
        held = None
        if path:
            held = frames.held_frame(spark, path, inputs.run_id)
        epochs = queries.lost_by_epoch(queries.attribute(lost, every_run, held, history,
                                                         found.lost_total))
        return epochs, offsets.rewritten(ledger, every_run, lost, found.moved_words,
                                         inputs.run_id, found.lost_total)

    def timing() -> AckTiming:
        return queries.ack_timing(ledger, fault_ts, found.lost_words,
                                  load_end_ms=_load_end(inputs))

    def duplicates() -> list[PartDuplicates]:
        return found.duplicates(every_run, inputs.run_id)

    try:
        (epochs, rewritten), acks, dups = run_jobs(together, attribution, timing, duplicates,
                                                   say=say, labels=_labels(found))
    finally:
        for frame in kept:
            frame.unpersist()
    return QueryResults(f"pyspark {pyspark.__version__}", found.groups(epochs, dups), epochs,
                        found.lost_ranges, found.log_stats, acks, found.notes, found.lost_total,
                        rewritten)


def _labels(found: Match) -> tuple[str, str, str]:
    """What the progress line says of each job ("": a job with nothing to do)."""
    attribution = copies = ""
    if found.lost is not None:
        attribution = f"acked but lost: {found.lost_total:,}; who acknowledged them…"
    if len(found.suspects):
        copies = "copies in the final log…"
    return attribution, "acknowledgements over time…", copies


def _with_consumer_side(report: Report, side: ConsumerSide | None,
                        ) -> Report:
    if side is None:
        return report
    explanation = report.explanation
    if side.explanation:
        explanation += " " + side.explanation
    return replace(report, consumers=side, explanation=explanation)


def _consumer_side(spark: Any, inputs: RunInputs, say: Callable[[str], None],
                   ) -> ConsumerSide | None:
    """The consumer group's counts and story, when consumers ran in this run dir."""
    from kinspect.load.consumers.consumer_ledger import read_consumer_ledger
    from kinspect.postmortem.matching import frames
    from kinspect.postmortem.matching.consumers import consumer_counts, consumer_inputs
    from kinspect.postmortem.story import consumer_story

    side = consumer_inputs(inputs.run_dir)
    if side is None:
        return None
    say(f"consumer group {side.settings.group}: matching its processing with the final log…")
    counts = consumer_counts(spark, inputs.run_dir, side, frames.final_log_frame(spark, inputs))
    ledger = read_consumer_ledger(inputs.run_dir)
    lost = consumer_story.lost_ranges(counts.never, ledger)
    return consumer_story.summary(side, counts, lost, ledger)


def _notes(inputs: RunInputs) -> list[str]:
    """What the run dir lacked or held unreadable, and what acks=0 means."""
    notes = list(inputs.verify_warnings) + inputs.unread
    if inputs.timeline is None:
        notes.append("no timeline was recorded (run `kinspect watch --run-dir` during the load)")
    if inputs.faults is None:
        notes.append("no fault journal (faults.jsonl) in the run dir")
    if not inputs.broker_logs:
        notes.append("no broker logs (broker-logs/<node>/*.log) in the run dir")
    if inputs.acks == "0":
        notes.append("acks=0: 'acked' means handed to the network; no broker confirmed anything")
    return notes


def _inputs_summary(inputs: RunInputs) -> InputsSummary:
    return InputsSummary(len(inputs.ledger_files), inputs.ledger_rows, len(inputs.final_log_files),
                         inputs.timeline is not None, inputs.faults is not None,
                         tuple(sorted(inputs.broker_logs)),
                         tuple(p.name for p in inputs.replica_snapshots))


def _assemble(inputs: RunInputs, results: QueryResults, fault: TimelineEvent | None,
              log_events: list[TimelineEvent], out: Path) -> tuple[Report, list[TimelineEvent]]:
    """The report from the queries' results and the events; and the events, for the chart."""
    bounds = results.timing.bounds
    start, end = evidence_window(inputs, tl.BEFORE_MS, tl.AFTER_MS)
    events = tl.merge(inputs.timeline, inputs.faults, log_events, inputs.topic, start, end)
    leaders = tl.epoch_leaders(events)
    events, links = tl.slow_links(events)
    total = Counts.total(results.groups.values())
    partitions = rep.partition_rows(results.groups, results.epochs, results.log_stats,
                                    inputs.final_log_partitions)
    lost_ranges, more = rep.ranges_by_producer(results.lost_ranges)
    gaps = _unacknowledged(inputs, results)
    no_leader = tl.no_leader_windows(events, bounds.last_ack_ts)
    entries, timeline_more = tl.report_entries(events, _ts(fault))
    report = Report(
        engine=results.engine, run_dir=str(inputs.run_dir), run_id=inputs.run_id,
        topic=inputs.topic, acks=inputs.acks, sent=total.sent, acked=total.acked,
        failed=total.failed, unknown=total.unknown, indefinite=total.indefinite,
        in_log=sum(p.in_log for p in partitions),
        in_log_ids=total.in_log_ids, foreign_records=sum(p.foreign for p in partitions),
        other_runs_records=known_sum(p.other_runs for p in partitions),
        acked_lost=total.acked_lost,
        unacked_present=total.unacked_present, live_lost=_live_lost(inputs.run_dir),
        unknown_present=total.unknown_present, indefinite_present=total.indefinite_present,
        failed_present=total.failed_present, not_in_ledger=total.not_in_ledger,
        client_lost=total.client_lost, refused=inputs.refused,
        duplicates=total.duplicates, duplicate_ids=total.duplicate_ids,
        reordered=sum(p.reordered for p in partitions),
        offsets_rewritten=sum(r.count for r in results.rewritten),
        rewritten=tuple(results.rewritten), partitions=tuple(partitions),
        lost_ranges=lost_ranges, lost_ranges_more=more,
        attribution=tuple(rep.attribution(results.epochs)),
        fault=_journal_json(fault), timeline=tuple(entries),
        timeline_more=timeline_more,
        unavailable=tuple(sorted(gaps + no_leader, key=lambda w: w.start)),
        unavailable_ms=max((w.ms for w in gaps + no_leader), default=0),
        unavailable_total_ms=sum(w.ms for w in gaps), no_leader_ms=sum(w.ms for w in no_leader),
        slow_links=tuple(line.to_json() for line in links),
        slowed_left_isr_ms=_first_left_isr(links),
        isr_min=tl.smallest_isr(events),
        first_ack_after_fault_ms=_after(bounds.first_ack_after_fault_ts, fault),
        first_kept_ack_after_fault_ms=_after(bounds.first_kept_ack_after_fault_ts, fault),
        run=RunWindow(run_window(inputs)[0], bounds.first_ack_ts, bounds.last_ack_ts,
                      (start, end)),
        inputs=_inputs_summary(inputs), notes=(*_notes(inputs), *results.notes))
    report = _with_power_cut(report, inputs, out)
    return replace(report, explanation=rep.explain(report, events, leaders)), events


def _with_power_cut(report: Report, inputs: RunInputs, out: Path) -> Report:
    """The run's power cuts, by the filesystem's record: what they dropped and whether every
    lost message is among it (the whole lost set, lost_set.py; unknown without it)."""
    cuts = power_cuts.cut_records(inputs.run_dir)
    if not cuts:
        return report
    dropped = power_cuts.dropped_messages(inputs.run_dir, inputs.topic, inputs.run_id)
    lost_dropped: int | None = None
    outside: int | None = None
    lost = lost_set.read_lost(out, report.acked_lost)
    if lost is not None:
        lost_dropped = power_cuts.lost_among(dropped, lost_set.messages(lost))
        outside = report.acked_lost - lost_dropped
    times = [at for _, at in cuts]
    story = PowerCutStory(nodes=tuple(node for node, _ in sorted(cuts, key=lambda c: c[1])),
                          at_ms=min(times), dropped=len(dropped), lost_dropped=lost_dropped,
                          last_ms=max(times))
    return replace(report, power_cut=story, lost_outside_power_cuts=outside)


def _load_end(inputs: RunInputs) -> int | None:
    """When the load ended, from run.json (None: a run dir made before it was written)."""
    if inputs.run is None:
        return None
    return inputs.run.load_ended_at_ms


def _unacknowledged(inputs: RunInputs, results: QueryResults) -> list[Unavailable]:
    """The windows of a partition without a successful acknowledgement; one that reaches the
    load's end says its records went unanswered."""
    load_end = _load_end(inputs)
    out = []
    for gap in results.timing.gaps:
        reason = "no successful acknowledgement"
        if gap.end == load_end:
            reason += ", records unanswered to the load's end"
        out.append(Unavailable(f"{inputs.topic}-{gap.pp}", gap.start, gap.end, reason))
    return out


def _journal_json(fault: TimelineEvent | None) -> JsonObject | None:
    if fault is None:
        return None
    return fault.journal_json()


def _first_left_isr(links: Sequence[tl.SlowLink]) -> int | None:
    """How long the first slowed link that left the ISR took to leave it."""
    for link in links:
        if link.left_isr_ms is not None:
            return link.left_isr_ms
    return None


def _live_lost(run_dir: Path) -> int | None:
    """What the live figure said when the producers were done (None: not observed)."""
    live = read_live_loss(run_dir)
    if live is None or live.get("doomed") is None:
        return None
    return int(live["doomed"])


def _after(ts: int | None, fault: TimelineEvent | None) -> int | None:
    if fault is None or ts is None:
        return None
    return int(ts - fault.ts)
