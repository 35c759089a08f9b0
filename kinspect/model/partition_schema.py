"""A partition's facts, declared once: what each is, and where each is written.

One ordered table, `PARTITION_FACTS`. From it come the `snapshot --json` codec and the
recording's rows (model/partition_codec.py compiles both from it, as fast_values.py compiles
the model's constructors), the partition part of `snapshot`'s text, the partition view's
columns, the words of the flags (one word per flag, the same in the text and on the screen) and
the exporter's partition gauges. The table's order is the JSON's, and a new recording's row
order (a keyframe names its row's fields; older rows are read by their length).

A new fact backed by new data: its field on `PartitionInfo` (snapshot.py), its entry here, and
its cell on screen (tui/render.py `PARTITION_CELLS`), beside the data path that fills it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Each codec expression stands for one value known and not None, written VALUE.
VALUE = "VALUE"


@dataclass(frozen=True)
class Codec:
    """How one kind of value is written as JSON and as a recording's cell, and read back:
    Python expressions over VALUE, compiled into the codecs (no call per value)."""

    to_json: str = VALUE
    from_json: str = VALUE
    to_row: str | None = None  # None: as to_json
    from_row: str | None = None  # None: as from_json

    @property
    def row_out(self) -> str:
        if self.to_row is None:
            return self.to_json
        return self.to_row

    @property
    def row_in(self) -> str:
        if self.from_row is None:
            return self.from_json
        return self.from_row


PLAIN = Codec()
IDS = Codec("list(VALUE)", "tuple(VALUE)")
REPLICA_LOGS = Codec(
    '[{"broker": r.broker, "log_end": r.log_end, "epoch": r.epoch, "lag": r.lag,'
    ' "diverged": r.diverged} for r in VALUE]',
    'tuple([ReplicaLog(r["broker"], r["log_end"], r["epoch"], r["lag"], r.get("diverged", 0))'
    " for r in VALUE])",
    "[[r.broker, r.log_end, r.epoch, r.lag, r.diverged] for r in VALUE]",
    "tuple([ReplicaLog(*r) for r in VALUE])")
EPOCH_ENDS = Codec(
    '[{"epoch": e[0], "found": e[1], "end_offset": e[2]} for e in VALUE]',
    'tuple([(e["epoch"], e["found"], e["end_offset"]) for e in VALUE])',
    "[list(e) for e in VALUE]",
    "tuple([(e[0], e[1], e[2]) for e in VALUE])")
REASSIGNMENT = Codec(
    '{"replicas": list(VALUE.replicas), "adding": list(VALUE.adding),'
    ' "removing": list(VALUE.removing)}',
    'Reassignment(tuple(VALUE["replicas"]), tuple(VALUE["adding"]), tuple(VALUE["removing"]))')
ELIGIBLE = Codec('{"eligible": list(VALUE.eligible), "last_known": list(VALUE.last_known)}',
                 'EligibleLeaders(tuple(VALUE["eligible"]), tuple(VALUE["last_known"]))')
DISKS = Codec(
    '[{"broker": d.broker, "log_dir": d.log_dir, "size": d.size, "moving_to": d.moving_to,'
    ' "moved": d.moved} for d in VALUE]',
    'tuple([ReplicaDisk(d["broker"], d["log_dir"], d["size"], d["moving_to"], d["moved"])'
    " for d in VALUE])",
    "[[d.broker, d.log_dir, d.size, d.moving_to, d.moved] for d in VALUE]",
    "tuple([ReplicaDisk(*d) for d in VALUE])")

REQUIRED = "required"  # a fact every snapshot JSON and recording row has had
# as it is, with thousands separators, broker ids, ms as the local time
TextFormat = Literal["plain", "count", "ids", "clock"]
GaugeValue = Literal["value", "count", "seconds"]  # the fact, its length, ms as s


@dataclass(frozen=True)
class TextColumn:
    """A column of `snapshot`'s text table."""

    label: str
    width: int
    right: bool = False  # aligned right
    missing: str = "-"  # what None reads as
    format: TextFormat = "plain"


@dataclass(frozen=True)
class ScreenColumn:
    """A column of the partition view; `place` orders the columns left to right."""

    label: str
    place: int
    right: bool = False  # aligned right (a number)


@dataclass(frozen=True)
class Flag:
    """What the text and the screen say when the flag holds, and when it was not told."""

    word: str
    unknown_word: str | None = None
    kraft_word: str | None = None  # where KRaft names the same thing otherwise


@dataclass(frozen=True)
class Gauge:
    """A `kinspect_partition_<name>` gauge of the exporter (labels: topic, partition)."""

    name: str
    help: str
    value: GaugeValue = "value"


@dataclass(frozen=True)
class PartitionFact:
    """One fact of a partition: a `PartitionInfo` field (recorded) or a property derived from
    them (`field=False`: written to JSON, never recorded)."""

    name: str  # PartitionInfo's attribute; a recording names its row's cells by these
    kind: str  # its type, in words (the dataclass tells mypy)
    json: str | None  # its key in `snapshot --json` ("a.b": b inside a); None: not written
    codec: Codec = PLAIN
    unknown: bool = False  # can be Unknown: written {"unknown": reason}
    optional: bool = False  # can be None (each fact says what None means)
    field: bool = True
    absent: object = REQUIRED  # the raw value an older JSON or row without it reads as
    text: TextColumn | None = None
    column: ScreenColumn | None = None
    flag: Flag | None = None
    gauge: Gauge | None = None


def _flag_gauge(name: str) -> Gauge:
    return Gauge(name, f"1 when the partition is {name.replace('_', ' ')} (Kafka's "
                       "definition; NaN: not told)")


PARTITION_FACTS: tuple[PartitionFact, ...] = (
    PartitionFact("topic", "str", None, column=ScreenColumn("topic", 10),
                  text=TextColumn("TOPIC", 24)),
    PartitionFact("partition", "int", "partition", column=ScreenColumn("part", 20),
                  text=TextColumn("P", 3, right=True)),
    PartitionFact("leader", "int | None (None: no leader)", "leader", optional=True,
                  column=ScreenColumn("leader", 30),
                  text=TextColumn("LEADER", 6, right=True, missing="none")),
    PartitionFact("leader_epoch", "int | None", "leader_epoch", optional=True,
                  column=ScreenColumn("epoch", 40),
                  text=TextColumn("EPOCH", 5, right=True, missing="?")),
    PartitionFact("replicas", "tuple[int, ...]", "replicas", IDS,
                  column=ScreenColumn("replicas", 50), text=TextColumn("REPLICAS", 10,
                                                                       format="ids")),
    PartitionFact("isr", "tuple[int, ...]", "isr", IDS, column=ScreenColumn("isr", 60),
                  text=TextColumn("ISR", 10, format="ids"),
                  gauge=Gauge("isr_replicas", "replicas in sync", "count")),
    PartitionFact("high_watermark", "int | None", "high_watermark", optional=True,
                  column=ScreenColumn("hw", 80, right=True),
                  text=TextColumn("HW", 10, right=True, missing="?", format="count"),
                  gauge=Gauge("high_watermark", "the high watermark (NaN: not told)")),
    PartitionFact("log_start", "int | None", "log_start", optional=True),
    PartitionFact("offline", "bool", "offline", field=False, flag=Flag("OFFLINE"),
                  gauge=_flag_gauge("offline")),
    PartitionFact("unavailable", "bool", "unavailable", field=False,
                  gauge=_flag_gauge("unavailable")),
    PartitionFact("under_replicated", "Fact[bool]", "under_replicated", unknown=True,
                  field=False, flag=Flag("URP", "URP?"), gauge=_flag_gauge("under_replicated")),
    PartitionFact("under_min_isr", "Fact[bool]", "under_min_isr", unknown=True, field=False,
                  flag=Flag("<min-ISR", "min-ISR?"), gauge=_flag_gauge("under_min_isr")),
    PartitionFact("at_min_isr", "Fact[bool]", "at_min_isr", unknown=True, field=False,
                  flag=Flag("at-min-ISR"), gauge=_flag_gauge("at_min_isr")),
    PartitionFact("preferred_leader", "bool", "preferred_leader", field=False,
                  flag=Flag("not-preferred")),  # said when it does not hold
    PartitionFact("views_disagree", "bool", "views_disagree",
                  flag=Flag("ZK≠broker", kraft_word="stale leader")),
    PartitionFact("min_isr", "Fact[int]", "min_isr", unknown=True),
    PartitionFact("replication_factor", "int", "replication_factor", field=False,
                  gauge=Gauge("replicas", "replication factor")),
    PartitionFact("leader_live", "bool", "leader_live", absent=True),
    PartitionFact("reassignment", "Fact[Reassignment | None] (None: not being moved)",
                  "reassignment", REASSIGNMENT, unknown=True, optional=True, absent=None,
                  flag=Flag("moving")),
    PartitionFact("stalled_ms", "int | None", "stalled_ms", optional=True, absent=None),
    PartitionFact("elr", "Fact[EligibleLeaders] | None (None: no such thing, ZooKeeper mode)",
                  "elr", ELIGIBLE, unknown=True, optional=True, absent=None, flag=Flag("ELR")),
    PartitionFact("broker_leader", "int | None", "broker_view.leader", optional=True),
    PartitionFact("broker_isr", "tuple[int, ...] | None", "broker_view.isr", IDS,
                  optional=True),
    PartitionFact("replica_logs", "tuple[ReplicaLog, ...]", "replica_logs", REPLICA_LOGS,
                  absent=[], column=ScreenColumn("replica logs", 70),
                  flag=Flag("DIVERGED")),
    PartitionFact("epoch_ends", "tuple[tuple[int, int, int], ...]", "epoch_ends", EPOCH_ENDS,
                  absent=[]),
    PartitionFact("offline_replicas", "tuple[int, ...]", "offline_replicas", IDS, absent=[]),
    PartitionFact("disks", "tuple[ReplicaDisk, ...]", "disks", DISKS, absent=[]),
    PartitionFact("state_changed_at", "Fact[int] | None (ms; None: recorded before it was "
                  "read)", "state_changed_at", unknown=True, optional=True, absent=None,
                  column=ScreenColumn("changed", 85),
                  text=TextColumn("CHANGED", 8, format="clock"),
                  gauge=Gauge("state_changed_timestamp_seconds", "when the controller last "
                              "wrote the partition's leader and ISR (Unix time; NaN: not told)",
                              "seconds")),
)

KEY = "topic"  # a JSON partition's and a recorded row's topic is its parent's
FLAGS_COLUMN = ScreenColumn("flags", 90)  # every fact's flag, in one column
BY_NAME = {fact.name: fact for fact in PARTITION_FACTS}
# The facts a recorded row holds, in the order a new recording writes them.
ROW_FIELDS = tuple(f.name for f in PARTITION_FACTS if f.field and f.name != KEY)
# The rows of recordings made before rows were named: the fields of the day, by row length.
_ROW_BEFORE_NAMES = ("partition", "leader", "leader_epoch", "replicas", "isr",
                     "high_watermark", "log_start", "min_isr", "broker_leader", "broker_isr",
                     "views_disagree", "replica_logs", "epoch_ends", "reassignment", "elr",
                     "leader_live", "stalled_ms", "disks", "offline_replicas")
UNNAMED_ROWS = {13: _ROW_BEFORE_NAMES[:13],  # before reassignments and ELR were seen
                17: _ROW_BEFORE_NAMES[:17],  # before disks were
                19: _ROW_BEFORE_NAMES}  # before keyframes named the row's fields


def screen_columns() -> tuple[str, ...]:
    """The partition view's columns, left to right."""
    columns = [f.column for f in PARTITION_FACTS if f.column is not None]
    columns.append(FLAGS_COLUMN)
    return tuple(c.label for c in sorted(columns, key=lambda c: c.place))


def text_columns() -> tuple[PartitionFact, ...]:
    return tuple(f for f in PARTITION_FACTS if f.text is not None)


def gauges() -> tuple[PartitionFact, ...]:
    return tuple(f for f in PARTITION_FACTS if f.gauge is not None)
