"""The post-mortem's report as typed values: what report.json holds, one field per key.

`Report.to_json()` is report.json, key for key and in the same order, with `schema_version`
first; `Report.from_json()` reads it back, and reads the files written before the version
existed (version 1) too. A count an older file lacks because its code did not measure it yet
(`refused`, `client_lost`, `unknown_present`, `other_runs_records`, `unavailable_total_ms`, a
partition's `other_runs`, an attribution's `measured`) reads as None, "not recorded", never as
a 0 that looks measured; a list of things that could not exist before the key did (slow links
before the lab slowed links, replica snapshots before the lab kept them) reads as empty. The
values the timeline gives (`fault`, `timeline`, `slow_links`) stay the JSON objects
story/timeline.py makes of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal

from kinspect.model.events import JsonObject

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SCHEMA_VERSION = 2  # 1: the files written before the key (read the same way)
Method = Literal["measured", "inferred", "mixed"]


class InconsistentReport(RuntimeError):
    """A bug, not a user's problem: the report contradicts what the match found."""


def _int(data: Mapping[str, object], key: str, default: int = 0) -> int:
    value = data.get(key)
    if not isinstance(value, int | float):
        return default
    return int(value)


def opt_int(data: Mapping[str, object], key: str) -> int | None:
    """An int of a JSON object (None: absent, null or not a number)."""
    value = data.get(key)
    if not isinstance(value, int | float):
        return None
    return int(value)


def _opt_text(data: Mapping[str, object], key: str) -> str | None:
    """A JSON object's value as text (None: absent or null)."""
    value = data.get(key)
    if value is None:
        return None
    return str(value)


def _opt_object(data: Mapping[str, object], key: str) -> Mapping[str, object] | None:
    """A JSON object under `key` (None: absent or not one)."""
    value = data.get(key)
    if not isinstance(value, Mapping):
        return None
    return value


def known_sum(values: Iterable[int | None]) -> int | None:
    """A total over rows; None when a row's count is unknown (an older file's)."""
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _objects(data: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    """A list of JSON objects under `key` ([] when missing or not one)."""
    value = data.get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def _object(data: Mapping[str, object], key: str) -> Mapping[str, object]:
    return _opt_object(data, key) or {}


def _ints_by_name(data: Mapping[str, object], key: str) -> dict[str, int]:
    return {str(k): int(v) for k, v in _object(data, key).items() if isinstance(v, int | float)}


def _texts_by_name(data: Mapping[str, object], key: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _object(data, key).items()}


def _texts(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value)


def _plain(obj: DataclassInstance) -> JsonObject:
    """A dataclass of JSON values as a JSON object, in field order."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


@dataclass(frozen=True, slots=True)
class Counts:
    """The message counts (story/report.py COUNTS), per partition or in total. A send is
    acknowledged, failed, or never answered (`unknown`); of the failed, `indefinite_failed`
    failed with an error that leaves open whether it was written (model/sends.py)."""

    sent: int = 0
    acked: int = 0
    failed: int = 0
    indefinite_failed: int | None = 0  # None: a file from before it was counted
    unknown: int = 0
    in_log_ids: int = 0
    acked_lost: int = 0
    unacked_present: int = 0
    indefinite_failed_present: int | None = 0  # None: a file from before it was counted
    unknown_present: int | None = 0  # None: a file from before it was counted
    not_in_ledger: int = 0
    duplicates: int = 0
    duplicate_ids: int = 0

    @property
    def client_lost(self) -> int | None:
        """Sent, never answered and not in the log: lost inside a dead generator."""
        if self.unknown_present is None:
            return None
        return self.unknown - self.unknown_present

    @property
    def indefinite(self) -> int | None:
        """Sends with no definite answer (Jepsen's :info): timed out, cut off, unanswered."""
        if self.indefinite_failed is None:
            return None
        return self.indefinite_failed + self.unknown

    @property
    def indefinite_present(self) -> int | None:
        """Of the indefinite sends, those in the log: written after all (no anomaly)."""
        return known_sum((self.indefinite_failed_present, self.unknown_present))

    @property
    def failed_present(self) -> int | None:
        """Sends that failed with a definite error and are in the log anyway."""
        indefinite = self.indefinite_present
        if indefinite is None:
            return None
        return self.unacked_present - indefinite - self.not_in_ledger

    @classmethod
    def total(cls, rows: Iterable[Counts]) -> Counts:
        rows = list(rows)
        summed = cls(**{f.name: sum(getattr(r, f.name) for r in rows) for f in fields(cls)
                        if f.name not in COUNTED_LATER})
        return replace(
            summed, indefinite_failed=known_sum(r.indefinite_failed for r in rows),
            indefinite_failed_present=known_sum(r.indefinite_failed_present for r in rows),
            unknown_present=known_sum(r.unknown_present for r in rows))

    def to_json(self) -> JsonObject:
        return _plain(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Counts:
        counted = cls(**{f.name: _int(data, f.name) for f in fields(cls)
                         if f.name not in COUNTED_LATER})
        return replace(counted, indefinite_failed=opt_int(data, "indefinite_failed"),
                       indefinite_failed_present=opt_int(data, "indefinite_failed_present"),
                       unknown_present=opt_int(data, "unknown_present"))


# Counts an older report.json lacks: None there (not counted), never 0.
COUNTED_LATER = ("indefinite_failed", "indefinite_failed_present", "unknown_present")


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """One partition's counts and what its final log held (report.json `partitions`)."""

    partition: int
    counts: Counts
    in_log: int = 0
    foreign: int = 0
    other_runs: int | None = None  # None: from before run ids told other runs apart
    reordered: int = 0
    final_log: bool = False  # verify read this partition back
    lost_by_epoch: dict[str, int] = field(default_factory=dict)  # "unknown": no epoch

    def to_json(self) -> JsonObject:
        return {"partition": self.partition, **self.counts.to_json(), "in_log": self.in_log,
                "foreign": self.foreign, "other_runs": self.other_runs,
                "reordered": self.reordered, "final_log": self.final_log,
                "lost_by_epoch": dict(self.lost_by_epoch)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PartitionRow:
        return cls(_int(data, "partition"), Counts.from_json(data), _int(data, "in_log"),
                   _int(data, "foreign"), opt_int(data, "other_runs"), _int(data, "reordered"),
                   bool(data.get("final_log", False)), _ints_by_name(data, "lost_by_epoch"))


@dataclass(frozen=True, slots=True)
class Attribution:
    """Lost messages of one (partition, leader epoch, broker) and how we know who acknowledged
    them: "measured" (each found in a kept replica snapshot), "inferred" (from the brokers'
    leadership history) or "mixed" (`measured` of them were)."""

    partition: int
    leader_epoch: int | None
    broker: int | None
    count: int
    measured: int | None = None  # None: from before kept replica snapshots were read
    first_ack_ts: int | None = None
    last_ack_ts: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    method: Method | None = None  # None: a report from before the method was recorded

    @property
    def epoch_inferred(self) -> bool:
        return self.method != "measured"

    def to_json(self) -> JsonObject:
        return {**_plain(self), "epoch_inferred": self.epoch_inferred}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Attribution:
        return cls(_int(data, "partition"), opt_int(data, "leader_epoch"),
                   opt_int(data, "broker"), _int(data, "count"), opt_int(data, "measured"),
                   opt_int(data, "first_ack_ts"), opt_int(data, "last_ack_ts"),
                   opt_int(data, "first_offset"), opt_int(data, "last_offset"),
                   _METHODS.get(str(data.get("method"))))


_METHODS: dict[str, Method] = {"measured": "measured", "inferred": "inferred", "mixed": "mixed"}


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A window of a partition without a successful acknowledgement, or without a leader."""

    partition: str
    start: int
    end: int
    reason: str

    @property
    def ms(self) -> int:
        return self.end - self.start

    def to_json(self) -> JsonObject:
        return {"partition": self.partition, "start": self.start, "end": self.end,
                "ms": self.ms, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Unavailable:
        return cls(str(data.get("partition", "")), _int(data, "start"), _int(data, "end"),
                   str(data.get("reason", "")))


@dataclass(frozen=True, slots=True)
class RunWindow:
    """When the run sent and was acknowledged, and the evidence window around it."""

    first_send_ts: int | None = None
    first_ack_ts: int | None = None
    last_ack_ts: int | None = None
    window: tuple[int | None, int | None] = (None, None)

    def to_json(self) -> JsonObject:
        return {**_plain(self), "window": list(self.window)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> RunWindow:
        return cls(opt_int(data, "first_send_ts"), opt_int(data, "first_ack_ts"),
                   opt_int(data, "last_ack_ts"), _window(data.get("window")))


def _window(told: object) -> tuple[int | None, int | None]:
    """A [start, end] pair of epoch ms, either null."""
    if not isinstance(told, list) or len(told) != 2:
        return None, None
    start, end = told
    if not isinstance(start, int):
        start = None
    if not isinstance(end, int):
        end = None
    return start, end


@dataclass(frozen=True, slots=True)
class InputsSummary:
    """What evidence the run dir held."""

    ledger_files: int = 0
    ledger_rows: int = 0
    final_log_files: int = 0
    timeline: bool = False
    faults: bool = False
    broker_logs: tuple[str, ...] = ()
    replica_snapshots: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {**_plain(self), "broker_logs": list(self.broker_logs),
                "replica_snapshots": list(self.replica_snapshots)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> InputsSummary:
        return cls(_int(data, "ledger_files"), _int(data, "ledger_rows"),
                   _int(data, "final_log_files"), bool(data.get("timeline", False)),
                   bool(data.get("faults", False)), _texts(data, "broker_logs"),
                   _texts(data, "replica_snapshots"))


@dataclass(frozen=True, slots=True)
class Second:
    """Acknowledged and failed sends in one second (the chart's series)."""

    second: int
    acked: int
    failed: int

    def to_json(self) -> dict[str, int]:
        return {"second": self.second, "acked": self.acked, "failed": self.failed}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Second:
        return cls(_int(data, "second"), _int(data, "acked"), _int(data, "failed"))


@dataclass(frozen=True, slots=True)
class LostRange:
    """Contiguous offsets a consumer group committed past without processing them: `cause`
    says why (consumer_story.CAUSES), and who held them and when."""

    partition: int
    first: int
    last: int
    cause: str
    consumer: int | None = None
    incarnation: int | None = None
    commit_ts: int | None = None
    commit_how: str | None = None
    crash_ts: int | None = None

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def to_json(self) -> JsonObject:
        return {"partition": self.partition, "first_offset": self.first, "last_offset": self.last,
                "count": self.count, "cause": self.cause, "consumer": self.consumer,
                "incarnation": self.incarnation, "commit_ts": self.commit_ts,
                "commit_how": self.commit_how, "crash_ts": self.crash_ts}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LostRange:
        return cls(_int(data, "partition"), _int(data, "first_offset"), _int(data, "last_offset"),
                   str(data.get("cause", "")), opt_int(data, "consumer"),
                   opt_int(data, "incarnation"), opt_int(data, "commit_ts"),
                   _opt_text(data, "commit_how"), opt_int(data, "crash_ts"))


@dataclass(frozen=True, slots=True)
class ConsumerPartition:
    """One partition of the consumer side, as Spark counted it."""

    partition: int
    answered_for: int = 0
    processed: int = 0
    never_processed: int = 0
    processed_twice: int = 0
    extra_processings: int = 0
    failed_not_retried: int = 0
    aborted_not_retried: int = 0

    def to_json(self) -> JsonObject:
        return _plain(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ConsumerPartition:
        return cls(**{f.name: _int(data, f.name) for f in fields(cls)})


@dataclass(frozen=True, slots=True)
class OffsetsRewritten:
    """Acked offsets of one partition the final log holds another record at (Jepsen's
    inconsistent offsets; matching/offsets.py), by the epoch that acknowledged (None: the
    delivery report did not say) and the epoch that wrote what is there now."""

    pp: int
    acked_epoch: int | None
    held_epoch: int | None
    count: int
    first_offset: int
    last_offset: int

    def to_json(self) -> JsonObject:
        return {"partition": self.pp, "acked_epoch": self.acked_epoch,
                "held_epoch": self.held_epoch, "count": self.count,
                "first_offset": self.first_offset, "last_offset": self.last_offset}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> OffsetsRewritten:
        return cls(_int(data, "partition"), opt_int(data, "acked_epoch"),
                   opt_int(data, "held_epoch"), _int(data, "count"), _int(data, "first_offset"),
                   _int(data, "last_offset"))


@dataclass(frozen=True, slots=True)
class PowerCutStory:
    """The run's power cuts (report.json `power_cut`), from the filesystem's own record: which
    brokers lost power and when, how many of the run's messages their dropped batches held,
    and how many of the lost ones are among them (None: the report lists only the first lost
    ranges, so the lost cannot all be looked up)."""

    nodes: tuple[str, ...]  # one per broker's cut, in time order (a node cut twice twice)
    at_ms: int  # the first cut
    dropped: int
    lost_dropped: int | None
    last_ms: int | None = None  # the last cut (None: a report written before it was kept)

    def to_json(self) -> JsonObject:
        return {"nodes": list(self.nodes), "at_ms": self.at_ms, "dropped": self.dropped,
                "lost_dropped": self.lost_dropped, "last_ms": self.last_ms}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PowerCutStory:
        nodes = data.get("nodes")
        return cls(nodes=tuple(str(n) for n in nodes) if isinstance(nodes, list) else (),
                   at_ms=_int(data, "at_ms"), dropped=_int(data, "dropped"),
                   lost_dropped=opt_int(data, "lost_dropped"),
                   last_ms=opt_int(data, "last_ms"))

    @property
    def one_instant(self) -> bool:
        """Whether the cuts were one power failure: the lab cuts every target of a step in
        one instant, but each broker's record is written when its filesystem is unmounted,
        up to a second or so apart."""
        last = self.at_ms if self.last_ms is None else self.last_ms
        return last - self.at_ms <= ONE_FAILURE_MS


ONE_FAILURE_MS = 5_000


@dataclass(frozen=True, slots=True)
class OutputCounts:
    """A transactional output as read_committed and read_uncommitted consumers see it."""

    committed_records: int
    all_records: int

    @property
    def aborted_visible(self) -> int:
        return self.all_records - self.committed_records

    def to_json(self) -> JsonObject:
        return {**_plain(self), "aborted_visible": self.aborted_visible}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> OutputCounts:
        return cls(_int(data, "committed_records"), _int(data, "all_records"))


@dataclass(frozen=True, slots=True)
class ConsumerSide:
    """The consumer group's side (report.json `consumers`): what it answered for and did."""

    group: str
    commit: str
    output: str | None = None
    isolation: str = "read_committed"
    answered_for: int = 0
    processed: int = 0
    never_processed: int = 0
    processed_twice: int = 0
    extra_processings: int = 0
    committed_unprocessed: int = 0
    never_processed_by_cause: dict[str, int] = field(default_factory=dict)
    unconsumed_at_end: int = 0
    crashes: int = 0
    jepsen: dict[str, int] = field(default_factory=dict)  # Jepsen's name -> count
    jepsen_definitions: dict[str, str] = field(default_factory=dict)
    cause_definitions: dict[str, str] = field(default_factory=dict)
    redelivered_records: int = 0
    poll_skipped_records: int = 0
    partitions: tuple[ConsumerPartition, ...] = ()
    lost_ranges: tuple[LostRange, ...] = ()  # the first 100
    lost_ranges_more: int = 0
    output_counts: OutputCounts | None = None  # only with a transactional output
    explanation: str = ""

    def to_json(self) -> JsonObject:
        out = _plain(self)
        for name in ("never_processed_by_cause", "jepsen", "jepsen_definitions",
                     "cause_definitions"):
            out[name] = dict(getattr(self, name))
        out["partitions"] = [p.to_json() for p in self.partitions]
        out["lost_ranges"] = [r.to_json() for r in self.lost_ranges]
        explanation = out.pop("explanation")
        out.pop("output_counts")
        if self.output_counts is not None:
            out["output_counts"] = self.output_counts.to_json()
        out["explanation"] = explanation
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ConsumerSide:
        return cls(
            group=str(data.get("group", "")), commit=str(data.get("commit", "")),
            output=_opt_text(data, "output"),
            isolation=str(data.get("isolation", "read_committed")),
            answered_for=_int(data, "answered_for"), processed=_int(data, "processed"),
            never_processed=_int(data, "never_processed"),
            processed_twice=_int(data, "processed_twice"),
            extra_processings=_int(data, "extra_processings"),
            committed_unprocessed=_int(data, "committed_unprocessed"),
            never_processed_by_cause=_ints_by_name(data, "never_processed_by_cause"),
            unconsumed_at_end=_int(data, "unconsumed_at_end"), crashes=_int(data, "crashes"),
            jepsen=_ints_by_name(data, "jepsen"),
            jepsen_definitions=_texts_by_name(data, "jepsen_definitions"),
            cause_definitions=_texts_by_name(data, "cause_definitions"),
            redelivered_records=_int(data, "redelivered_records"),
            poll_skipped_records=_int(data, "poll_skipped_records"),
            partitions=tuple(ConsumerPartition.from_json(p) for p in _objects(data, "partitions")),
            lost_ranges=tuple(LostRange.from_json(r) for r in _objects(data, "lost_ranges")),
            lost_ranges_more=_int(data, "lost_ranges_more"),
            output_counts=_output_counts(data),
            explanation=str(data.get("explanation", "")))


def _output_counts(data: Mapping[str, object]) -> OutputCounts | None:
    told = _opt_object(data, "output_counts")
    if told is None:
        return None
    return OutputCounts.from_json(told)


def _seconds(told: object) -> float:
    if not isinstance(told, int | float):
        return 0.0
    return float(told)


# report.json leaves these out when a run had none (a group, a power cut): older reports match
OMITTED_WHEN_NONE = frozenset({"consumers", "lost_outside_power_cuts", "power_cut"})
LostRanges = dict[str, tuple[tuple[int, int], ...]]  # producer -> (first seq, last seq) runs


@dataclass(frozen=True, slots=True)
class Report:
    """What a post-mortem found, in report.json's order. The counts are over every partition;
    `live_lost` is what the load judged live (None: not observed); `client_lost` were sent,
    never answered and not in the log (lost inside a dead generator). A count that is None
    was not recorded: the file is older than the code that counts it."""

    engine: str = ""
    run_dir: str = ""
    run_id: str | None = None
    topic: str = ""
    acks: str = ""
    sent: int = 0
    acked: int = 0
    failed: int = 0
    unknown: int = 0
    indefinite: int | None = None  # Jepsen's :info: failed indefinitely, or never answered
    in_log: int = 0
    in_log_ids: int = 0
    foreign_records: int = 0
    other_runs_records: int | None = None
    acked_lost: int = 0
    unacked_present: int = 0
    live_lost: int | None = None
    unknown_present: int | None = None
    indefinite_present: int | None = None  # of `indefinite`, in the log (no anomaly)
    failed_present: int | None = None  # failed with a definite error, in the log anyway
    not_in_ledger: int = 0
    client_lost: int | None = None
    refused: int | None = None
    duplicates: int = 0
    duplicate_ids: int = 0
    reordered: int = 0
    offsets_rewritten: int | None = None  # acked offsets holding another record now
    rewritten: tuple[OffsetsRewritten, ...] = ()  # those, by partition and epochs
    partitions: tuple[PartitionRow, ...] = ()
    lost_ranges: LostRanges = field(default_factory=dict)
    lost_ranges_more: dict[str, int] = field(default_factory=dict)  # ranges past the cap
    attribution: tuple[Attribution, ...] = ()  # largest first
    fault: JsonObject | None = None  # the main fault, as the lab's journal wrote it
    timeline: tuple[JsonObject, ...] = ()  # story/timeline.py report_entries
    timeline_more: int = 0
    unavailable: tuple[Unavailable, ...] = ()
    unavailable_ms: int = 0  # the longest single window without an ack (or leader)
    unavailable_total_ms: int | None = None  # the ack windows added up
    no_leader_ms: int = 0
    slow_links: tuple[JsonObject, ...] = ()  # story/timeline.py SlowLink.to_json
    slowed_left_isr_ms: int | None = None  # from a link slowed to its broker leaving an ISR
    isr_min: int | None = None
    first_ack_after_fault_ms: int | None = None
    first_kept_ack_after_fault_ms: int | None = None
    run: RunWindow = RunWindow()
    inputs: InputsSummary = InputsSummary()
    notes: tuple[str, ...] = ()
    explanation: str = ""
    consumers: ConsumerSide | None = None
    # power cuts: the acked_lost their dropped batches do not hold (None: no cut, or not known)
    lost_outside_power_cuts: int | None = None
    power_cut: PowerCutStory | None = None
    out: str = ""
    seconds: float = 0.0
    per_second: tuple[Second, ...] = ()

    def to_json(self) -> JsonObject:
        """report.json: every field in order (`consumers` only when a group ran)."""
        out: JsonObject = {"schema_version": SCHEMA_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in OMITTED_WHEN_NONE and value is None:
                continue
            out[f.name] = _json(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Report:
        """A report.json of any version: a count an older file lacks is None (not recorded)."""
        def count(key: str) -> int:
            return _int(data, key)

        def maybe(key: str) -> int | None:
            return opt_int(data, key)

        return cls(
            engine=str(data.get("engine", "")), run_dir=str(data.get("run_dir", "")),
            run_id=_opt_text(data, "run_id"),
            topic=str(data.get("topic", "")), acks=str(data.get("acks", "")),
            sent=count("sent"), acked=count("acked"), failed=count("failed"),
            unknown=count("unknown"), indefinite=maybe("indefinite"), in_log=count("in_log"),
            in_log_ids=count("in_log_ids"),
            foreign_records=count("foreign_records"),
            other_runs_records=maybe("other_runs_records"), acked_lost=count("acked_lost"),
            unacked_present=count("unacked_present"), live_lost=maybe("live_lost"),
            unknown_present=maybe("unknown_present"),
            indefinite_present=maybe("indefinite_present"),
            failed_present=maybe("failed_present"), not_in_ledger=count("not_in_ledger"),
            client_lost=maybe("client_lost"), refused=maybe("refused"),
            duplicates=count("duplicates"), duplicate_ids=count("duplicate_ids"),
            reordered=count("reordered"), offsets_rewritten=maybe("offsets_rewritten"),
            rewritten=tuple(OffsetsRewritten.from_json(r) for r in _objects(data, "rewritten")),
            partitions=tuple(PartitionRow.from_json(p) for p in _objects(data, "partitions")),
            lost_ranges=_lost_ranges(_object(data, "lost_ranges")),
            lost_ranges_more=_ints_by_name(data, "lost_ranges_more"),
            attribution=tuple(Attribution.from_json(a) for a in _objects(data, "attribution")),
            fault=_fault(data),
            timeline=tuple(dict(e) for e in _objects(data, "timeline")),
            timeline_more=count("timeline_more"),
            unavailable=tuple(Unavailable.from_json(w) for w in _objects(data, "unavailable")),
            unavailable_ms=count("unavailable_ms"),
            unavailable_total_ms=maybe("unavailable_total_ms"),
            no_leader_ms=count("no_leader_ms"),
            slow_links=tuple(dict(s) for s in _objects(data, "slow_links")),
            slowed_left_isr_ms=maybe("slowed_left_isr_ms"), isr_min=maybe("isr_min"),
            first_ack_after_fault_ms=maybe("first_ack_after_fault_ms"),
            first_kept_ack_after_fault_ms=maybe("first_kept_ack_after_fault_ms"),
            run=RunWindow.from_json(_object(data, "run")),
            inputs=InputsSummary.from_json(_object(data, "inputs")),
            notes=_texts(data, "notes"), explanation=str(data.get("explanation", "")),
            consumers=_consumers(data), out=str(data.get("out", "")),
            lost_outside_power_cuts=maybe("lost_outside_power_cuts"),
            power_cut=_power_cut(data),
            seconds=_seconds(data.get("seconds")),
            per_second=tuple(Second.from_json(s) for s in _objects(data, "per_second")))

    def check_lost(self, lost_total: int) -> None:
        """acked_lost is added up from the attribution's rows; the match counted the lost ids
        themselves. They must agree, or an id went missing between the two (a bug)."""
        if self.acked_lost != lost_total:
            raise InconsistentReport(
                f"the report's acked_lost ({self.acked_lost:,}) is not the number of acked ids "
                f"the match found missing ({lost_total:,}): the attribution lost or added rows")


def _fault(data: Mapping[str, object]) -> JsonObject | None:
    told = _opt_object(data, "fault")
    if told is None:
        return None
    return dict(told)


def _power_cut(data: Mapping[str, object]) -> PowerCutStory | None:
    told = _opt_object(data, "power_cut")
    if told is None:
        return None
    return PowerCutStory.from_json(told)


def _consumers(data: Mapping[str, object]) -> ConsumerSide | None:
    told = _opt_object(data, "consumers")
    if told is None:
        return None
    return ConsumerSide.from_json(told)


def _lost_ranges(data: Mapping[str, object]) -> LostRanges:
    return {str(producer): tuple((int(r[0]), int(r[1])) for r in runs
                                 if isinstance(r, list) and len(r) == 2)
            for producer, runs in data.items() if isinstance(runs, list)}


def _json(value: object) -> object:
    """A field's JSON value: typed values by their to_json, sequences as lists."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value

