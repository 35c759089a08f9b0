"""What the Spark queries bring back to the driver, as typed rows: Spark's `Row`s and Arrow's
dicts are turned into these where they are collected, so nothing downstream reads a column
by a string."""

from __future__ import annotations

from dataclasses import dataclass, field

from kinspect.postmortem.story.values import Counts, OffsetsRewritten, Second


@dataclass(frozen=True, slots=True)
class LostEpoch:
    """Lost ids of one (ledger partition, leader epoch, broker, method): queries.lost_by_epoch."""

    pp: int
    epoch: int | None
    broker: int | None
    method: str  # "measured" or "inferred"
    count: int
    first_ack_ts: int | None
    last_ack_ts: int | None
    first_offset: int | None
    last_offset: int | None


@dataclass(frozen=True, slots=True)
class LostRun:
    """One run of lost seqs of a producer; `ranges`: how many runs that producer has in all."""

    producer: int
    lo: int
    hi: int
    ranges: int


@dataclass(frozen=True, slots=True)
class LogStats:
    """A final-log partition's records: this run's, behind their producer's previous seq,
    with no producer, and other runs'."""

    partition: int
    in_log: int
    reordered: int
    foreign: int
    other_runs: int


@dataclass(frozen=True, slots=True)
class Unacked:
    """The log's unacknowledged ids of one (best ledger status, ledger partition, log
    partition); status CANDIDATE: maybe sent, no ledger row; None: never sent by this run."""

    st: int | None
    lp: int | None
    logp: int
    count: int


@dataclass(frozen=True, slots=True)
class PartDuplicates:
    """Ids held more than once in a log partition, and their extra copies."""

    pp: int
    duplicate_ids: int
    duplicates: int


@dataclass(frozen=True, slots=True)
class AckBounds:
    """The run's first and last acks, and the first acks after the fault (any, and the first
    whose message the cluster kept)."""

    first_ack_ts: int | None
    last_ack_ts: int | None
    first_ack_after_fault_ts: int | None
    first_kept_ack_after_fault_ts: int | None


@dataclass(frozen=True, slots=True)
class Gap:
    """A partition with no successful ack from `start` to `end` while sending."""

    pp: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class AckTiming:
    bounds: AckBounds
    per_second: list[Second]
    gaps: list[Gap]


@dataclass(frozen=True, slots=True)
class QueryResults:
    """Everything the Spark side of one post-mortem found, for the story to tell."""

    engine: str  # "pyspark 4.x"
    groups: dict[int, Counts]  # counts per ledger/log partition (-1: nowhere known)
    epochs: list[LostEpoch]
    lost_ranges: list[LostRun]
    log_stats: list[LogStats]
    timing: AckTiming
    notes: list[str]
    lost_total: int  # acked ids the match found missing from the final log
    rewritten: list[OffsetsRewritten] = field(default_factory=list)
