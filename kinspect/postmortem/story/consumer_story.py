"""Why records were never processed, in words, and Jepsen's names for what the polls did.

Works on the driver with what is small: the never-processed offsets Spark brought back, and
the consumer ledger's polls, commits and events (one row per poll, commit or lifecycle step,
not per record). Offsets of the input are taken as contiguous (the load generator writes no
transactions, and the topic is not compacted), so a gap between two polls is a count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kinspect.load.consumers.consumer_ledger import ConsumerLedgerTables
from kinspect.postmortem.story.report import agree, clock, plural
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
    for partition, first, last, failed, aborted in _runs(never):
        holder = _holder(polls, partition, first)
        who: tuple[int | None, int | None] = (None, None)
        if holder is not None:
            who = (holder["consumer"], holder["incarnation"])
        commit_ts, commit_how = _covering_commit(commits, partition, last, holder, who)
        out.append(LostRange(partition, first, last, _cause(failed, aborted, holder), who[0],
                             who[1], commit_ts, commit_how, crashes.get(who)))
    return out


_Row = Mapping[str, Any]  # a row of the consumer ledger's Parquet tables


def _holder(polls: Sequence[_Row], partition: int, offset: int) -> _Row | None:
    """The poll that delivered the offset (None: no consumer ever received it)."""
    for poll in polls:
        if poll["partition"] == partition and poll["first_offset"] <= offset <= poll["last_offset"]:
            return poll
    return None


def _covering_commit(commits: Sequence[_Row], partition: int, last: int, holder: _Row | None,
                     who: tuple[int | None, int | None]) -> tuple[int | None, str | None]:
    """When and how the commit that covered the offsets was made, by the consumer that held
    them: an auto-commit whose callback never ran before a crash is not in the ledger, and a
    later member's commit would put the wrong time in the words. (None, None): none was."""
    for commit in commits:
        if commit["partition"] != partition or commit["offset"] <= last:
            continue
        if commit["error"] is not None:
            continue
        if holder is None or (commit["consumer"], commit["incarnation"]) == who:
            return commit["ts"], commit["how"]
    return None, None


def _cause(failed: bool, aborted: bool, holder: _Row | None) -> str:
    """Why the offsets were never processed (one of CAUSES)."""
    if failed:
        return "failed"
    if aborted:
        return "aborted"
    if holder is None:
        return "never_delivered"
    return "crash"


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
        lines.append(f"{_span(lost)} of partition {lost.partition} were {_commit_words(lost)} "
                     f"and {_fate(lost)}")
    more = len(ranges) - len(lines)
    text = "; ".join(lines)
    if more > 0:
        text += f"; and {plural(more, 'more range')}"
    if not text:
        return ""
    return text[:1].upper() + text[1:] + "."


def _span(lost: LostRange) -> str:
    if lost.first == lost.last:
        return f"offset {lost.first:,}"
    return f"offsets {lost.first:,}..{lost.last:,}"


def _commit_words(lost: LostRange) -> str:
    if not lost.commit_ts:
        return ("committed (the commit itself was not recorded: it happened after the "
                "consumer's last poll)")
    return f"{_committed(lost.commit_how)} at {clock(lost.commit_ts)}"


def _fate(lost: LostRange) -> str:
    """What happened to the records after the commit, by their cause."""
    who = "no consumer"
    if lost.consumer is not None:
        who = f"consumer {lost.consumer}"
    if lost.cause == "crash" and lost.crash_ts:
        return f"{who} crashed at {clock(lost.crash_ts)} before processing them"
    if lost.cause == "crash":
        return f"{who} died before processing them"
    if lost.cause == "failed":
        return f"{who} failed to process them and did not try again"
    if lost.cause == "aborted":
        return f"{who}'s transaction that processed them aborted"
    return "no consumer ever received them"


def summary(side: ConsumerInputs, counts: ConsumerCounts, lost: Sequence[LostRange],
            ledger: ConsumerLedgerTables) -> ConsumerSide:
    """The report's `consumers`: totals, per partition, causes, Jepsen's counts, the words."""
    partitions = counts.partitions
    by_cause = _by_cause(lost)
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
        committed_unprocessed=sum(by_cause.values()) - by_cause["never_delivered"],
        never_processed_by_cause=by_cause, unconsumed_at_end=side.unconsumed,
        crashes=_crashes(ledger),
        jepsen={"poll-skip": anomalies["poll_skip"],
                "nonmonotonic-poll": anomalies["nonmonotonic_poll"],
                "duplicate": sum(p.processed_twice for p in partitions)},
        jepsen_definitions=JEPSEN, cause_definitions=CAUSES,
        redelivered_records=anomalies["redelivered_records"],
        poll_skipped_records=anomalies["poll_skipped_records"],
        partitions=tuple(partitions), lost_ranges=tuple(lost[:100]),
        lost_ranges_more=max(0, len(lost) - 100), output_counts=counts.output)
    return replace(out, explanation=words(out, lost))


def _by_cause(lost: Sequence[LostRange]) -> dict[str, int]:
    """Never-processed records by cause, every cause named (in CAUSES' order)."""
    by_cause = dict.fromkeys(CAUSES, 0)
    for r in lost:
        if r.cause in by_cause:
            by_cause[r.cause] += r.count
    return by_cause


def _crashes(ledger: ConsumerLedgerTables) -> int:
    return sum(1 for e in ledger.events.to_pylist() if e["event"] == "crash")


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
                 f"{agree(side.processed_twice, 'was', 'were')} processed more than once"
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
