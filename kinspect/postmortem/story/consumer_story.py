"""Why records were never processed, in words, and Jepsen's names for what the polls did.

Works on the driver with what is small: the never-processed offsets Spark brought back, and
the consumer ledger's polls, commits and events (one row per poll, commit or lifecycle step,
not per record). Offsets of the input are taken as contiguous (the load generator writes no
transactions, and the topic is not compacted), so a gap between two polls is a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from kinspect.load.consumers.consumer_ledger import ConsumerLedgerTables
from kinspect.postmortem.story.report import clock, plural
from kinspect.postmortem.story.values import ConsumerSide, LostRange

if TYPE_CHECKING:
    from kinspect.postmortem.matching.consumers import ConsumerCounts, ConsumerInputs

__all__ = ["CAUSES", "JEPSEN", "LostRange", "lost_ranges", "poll_anomalies", "story", "summary"]

# Jepsen's names (as in its Kafka and Redpanda analyses), with the one-line definition the
# report prints beside each count.
JEPSEN = {
    "poll-skip": "a poll of a partition began past the offset after the group's previous poll "
                 "of it: records in between were never delivered to any consumer",
    "nonmonotonic-poll": "a poll of a partition began at or before the last offset the group "
                         "had already polled: records delivered again (after a crash or "
                         "rebalance, from the last commit)",
    "duplicate": "a record processed more than once",
}
CAUSES = {
    "crash": "committed, then the consumer that had them crashed before processing them",
    "failed": "processing failed and the offset was committed anyway",
    "aborted": "their transaction aborted and the offsets were committed outside it",
    "never_delivered": "the group committed past them without any consumer receiving them",
}


def lost_ranges(never: Sequence[tuple[int, int, int, int]],
                ledger: ConsumerLedgerTables) -> list[LostRange]:
    """Contiguous never-processed offsets, each with its cause and who/when."""
    polls = ledger.polls.to_pylist()
    commits = sorted(ledger.commits.to_pylist(), key=lambda c: c["ts"])
    crashes = {(e["consumer"], e["incarnation"]): e["ts"] for e in ledger.events.to_pylist()
               if e["event"] == "crash"}
    out: list[LostRange] = []
    for run in _runs(never):
        partition, first, last, failed, aborted = run
        holder = next((p for p in polls if p["partition"] == partition
                       and p["first_offset"] <= first <= p["last_offset"]), None)
        who = (holder["consumer"], holder["incarnation"]) if holder else (None, None)
        # The commit that covered them, made by the consumer that held them: an auto-commit
        # whose callback never ran before a crash is not in the ledger, and a later member's
        # commit would put the wrong time in the words.
        commit = next((c for c in commits if c["partition"] == partition and c["offset"] > last
                       and c["error"] is None
                       and (holder is None or (c["consumer"], c["incarnation"]) == who)), None)
        cause = ("failed" if failed else "aborted" if aborted
                 else "crash" if holder and who in crashes else
                 "never_delivered" if holder is None else "crash")
        out.append(LostRange(partition, first, last, cause, who[0], who[1],
                             commit["ts"] if commit else None, commit["how"] if commit else None,
                             crashes.get(who)))
    return out


def _runs(never: Sequence[tuple[int, int, int, int]]) -> list[tuple[int, int, int, bool, bool]]:
    """(partition, first, last, any failed, any aborted) of each contiguous run of offsets that
    share a kind (failed, aborted or neither)."""
    runs: list[tuple[int, int, int, bool, bool]] = []
    for partition, offset, failed, aborted in sorted(never):
        kind = (failed > 0, aborted > 0)
        if runs and runs[-1][0] == partition and runs[-1][2] == offset - 1 \
                and runs[-1][3:] == kind:
            runs[-1] = (partition, runs[-1][1], offset, *kind)
        else:
            runs.append((partition, offset, offset, *kind))
    return runs


def poll_anomalies(polls: pa.Table, ranges: dict[int, tuple[int, int]]) -> dict[str, int]:
    """Jepsen's poll-skip and nonmonotonic-poll, counted over the group's polls in time order
    per partition (any member: a partition's polls should continue where the last left off)."""
    skips = skipped = backs = reread = 0
    by_partition: dict[int, list[dict[str, int]]] = {}
    for poll in sorted(polls.to_pylist(), key=lambda p: (p["ts"], p["consumer"])):
        by_partition.setdefault(poll["partition"], []).append(poll)
    for partition, seq in by_partition.items():
        previous_last = ranges.get(partition, (0, 0))[0] - 1
        for poll in seq:
            if poll["first_offset"] > previous_last + 1:
                skips += 1
                skipped += poll["first_offset"] - previous_last - 1
            elif poll["first_offset"] <= previous_last:
                backs += 1
                reread += min(previous_last, poll["last_offset"]) - poll["first_offset"] + 1
            previous_last = max(previous_last, poll["last_offset"])
    return {"poll_skip": skips, "poll_skipped_records": skipped, "nonmonotonic_poll": backs,
            "redelivered_records": reread}


def story(ranges: Sequence[LostRange], limit: int = 3) -> str:
    """The plain words: which offsets, committed how and when, and what happened to them."""
    lines = []
    for lost in sorted(ranges, key=lambda r: -r.count)[:limit]:
        span = (f"offset {lost.first:,}" if lost.first == lost.last
                else f"offsets {lost.first:,}..{lost.last:,}")
        commit = (f"{_committed(lost.commit_how)} at {clock(lost.commit_ts)}"
                  if lost.commit_ts else "committed (the commit itself was not recorded: it "
                                         "happened after the consumer's last poll)")
        who = f"consumer {lost.consumer}" if lost.consumer is not None else "no consumer"
        if lost.cause == "crash":
            tail = (f"{who} crashed at {clock(lost.crash_ts)} before processing them"
                    if lost.crash_ts else f"{who} died before processing them")
        elif lost.cause == "failed":
            tail = f"{who} failed to process them and did not try again"
        elif lost.cause == "aborted":
            tail = f"{who}'s transaction that processed them aborted"
        else:
            tail = "no consumer ever received them"
        lines.append(f"{span} of partition {lost.partition} were {commit} and {tail}")
    more = len(ranges) - len(lines)
    text = "; ".join(lines)
    if more > 0:
        text += f"; and {plural(more, 'more range')}"
    return text[:1].upper() + text[1:] + "." if text else ""


def summary(side: ConsumerInputs, counts: ConsumerCounts, lost: Sequence[LostRange],
            ledger: ConsumerLedgerTables) -> ConsumerSide:
    """The report's `consumers`: totals, per partition, causes, Jepsen's counts, the words."""
    partitions = counts.partitions
    by_cause = {cause: sum(r.count for r in lost if r.cause == cause) for cause in CAUSES}
    anomalies = poll_anomalies(ledger.polls, side.ranges)
    settings = side.settings
    out = ConsumerSide(
        group=settings.group, commit=settings.commit, output=settings.output,
        isolation=settings.isolation,
        answered_for=sum(p.answered_for for p in partitions),
        processed=sum(p.processed for p in partitions),
        never_processed=sum(p.never_processed for p in partitions),
        processed_twice=sum(p.processed_twice for p in partitions),
        extra_processings=sum(p.extra_processings for p in partitions),
        committed_unprocessed=sum(n for cause, n in by_cause.items()
                                  if cause != "never_delivered"),
        never_processed_by_cause=by_cause, unconsumed_at_end=side.unconsumed,
        crashes=int(sum(1 for e in ledger.events.to_pylist() if e["event"] == "crash")),
        jepsen={"poll-skip": anomalies["poll_skip"],
                "nonmonotonic-poll": anomalies["nonmonotonic_poll"],
                "duplicate": sum(p.processed_twice for p in partitions)},
        jepsen_definitions=JEPSEN, cause_definitions=CAUSES,
        redelivered_records=anomalies["redelivered_records"],
        poll_skipped_records=anomalies["poll_skipped_records"],
        partitions=tuple(partitions), lost_ranges=tuple(lost[:100]),
        lost_ranges_more=max(0, len(lost) - 100), output_counts=counts.output)
    return replace(out, explanation=words(out, lost))


def words(side: ConsumerSide, lost: Sequence[LostRange]) -> str:
    """The consumer side's sentences for the report's paragraph."""
    group = f"Consumer group {side.group} (commit {side.commit})"
    if side.never_processed:
        text = (f"{group} never processed {plural(side.never_processed, 'record')} it had "
                f"committed past. {story(lost)}")
    else:
        text = (f"{group} processed every one of the {plural(side.answered_for, 'record')} "
                "it committed past.")
    if side.processed_twice:
        text += (f" {plural(side.processed_twice, 'record')} "
                 f"{'was' if side.processed_twice == 1 else 'were'} processed more than once"
                 f" ({plural(side.jepsen['nonmonotonic-poll'], 'poll')} began again at or "
                 "before an offset already polled: redelivery from the last commit).")
    output = side.output_counts
    if output and output.aborted_visible:
        text += (f" The output holds {plural(output.aborted_visible, 'record')} of aborted "
                 "transactions: a read_uncommitted consumer sees them, a read_committed one "
                 "does not.")
    return text


def _committed(how: str | None) -> str:
    return {"auto": "auto-committed", "sync": "committed", "transaction":
            "committed in a transaction"}.get(how or "", "committed")
