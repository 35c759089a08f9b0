"""The partition's codecs, compiled from its schema (partition_schema.py).

A snapshot's JSON and a recording's rows are mostly partitions (100,000 of them on a big
cluster), so each codec is one generated function with every fact written out, as a hand-made
one would be: a loop over the table per partition, or a call per fact, would cost several times
as much. `partition_to_json` and `partition_from_json` give the `snapshot --json` contract;
`partition_row` and `row_decoder(fields)` a recording's rows, named by their fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from functools import cache
from typing import Any

from kinspect.model.events import JsonObject
from kinspect.model.facts import Unknown
from kinspect.model.partition_schema import (
    KEY,
    PARTITION_FACTS,
    REQUIRED,
    ROW_FIELDS,
    UNNAMED_ROWS,
    VALUE,
    PartitionFact,
)
from kinspect.model.snapshot import PartitionInfo, ReplicaDisk, ReplicaLog
from kinspect.model.views import EligibleLeaders, Reassignment

Json = dict[str, Any]  # a partition as JSON
Names = dict[str, object]  # what generated code sees
_NAMESPACE: Names = {"Unknown": Unknown, "PartitionInfo": PartitionInfo,
                              "ReplicaLog": ReplicaLog, "ReplicaDisk": ReplicaDisk,
                              "Reassignment": Reassignment, "EligibleLeaders": EligibleLeaders}
RowDecoder = Callable[[str, list[Any]], PartitionInfo]
JsonDecoder = Callable[[str, Json], PartitionInfo]


def _with(names: Names, source: str, name: str) -> Any:
    made: Names = {}
    exec(source, {**_NAMESPACE, **names}, made)
    return made[name]


def _converting(fact: PartitionFact, local: str, raw: str, unknown: list[str],
                convert: str) -> list[str]:
    """Statements that leave in `local` the fact read from `raw`: Unknown by the `unknown`
    statements, None as it is, anything else through `convert`."""
    lines = [f"    {local} = {raw}"]
    known = convert.replace(VALUE, local)
    test = "if"
    if fact.unknown:
        lines += unknown
        test = "elif"
    if convert == VALUE:
        return lines
    if fact.optional:
        lines += [f"    {test} {local} is not None:", f"        {local} = {known}"]
    elif fact.unknown:
        lines += ["    else:", f"        {local} = {known}"]
    else:
        lines += [f"    {local} = {known}"]
    return lines


def _encoding(fact: PartitionFact, encode: str, local: str) -> list[str]:
    """Statements that leave the fact, written, in `local`."""
    unknown = [f"    if isinstance({local}, Unknown):",
               f'        {local} = {{"unknown": {local}.reason}}']
    return _converting(fact, local, f"p.{fact.name}", unknown, encode)


def _value_of(fact: PartitionFact, encode: str, lines: list[str]) -> str:
    """The fact's written value as an expression, its statements (if any) added to lines:
    inline when there is neither Unknown nor None to test for."""
    inline = not fact.unknown and not fact.optional
    if encode == VALUE and not fact.unknown:
        inline = True
    if inline:
        return encode.replace(VALUE, f"p.{fact.name}")
    local = f"_{fact.name}"
    lines += _encoding(fact, encode, local)
    return local


def _json_source() -> str:
    """`partition_to_json`: one dict literal, a "a.b" key written as b inside a."""
    lines = ["def partition_to_json(p):"]
    items: dict[str, str | list[str]] = {}
    for fact in PARTITION_FACTS:
        if fact.json is None:
            continue
        value = _value_of(fact, fact.codec.to_json, lines)
        outer, _, inner = fact.json.partition(".")
        if not inner:
            items[outer] = value
            continue
        inside = items.setdefault(outer, [])
        assert isinstance(inside, list)
        inside.append(f"{inner!r}: {value}")
    written: list[str] = []
    for key, item in items.items():
        text = item
        if isinstance(item, list):
            text = "{" + ", ".join(item) + "}"
        written.append(f"{key!r}: {text}")
    lines.append("    return {" + ", ".join(written) + "}")
    return "\n".join(lines) + "\n"


def _decoding(fact: PartitionFact, raw: str, decode: str) -> list[str]:
    """Statements reading one fact back into `_<name>` from the expression `raw`."""
    local = f"_{fact.name}"
    unknown = [f"    if isinstance({local}, dict) and set({local}) == {{'unknown'}}:",
               f"        {local} = Unknown(str({local}['unknown']))"]
    return _converting(fact, local, raw, unknown, decode)


def _json_raw(fact: PartitionFact, names: Names) -> str:
    assert fact.json is not None
    path = "".join(f"[{part!r}]" for part in fact.json.split(".")[:-1])
    key = fact.json.split(".")[-1]
    if fact.absent == REQUIRED:
        return f"raw{path}[{key!r}]"
    names[f"_absent_{fact.name}"] = fact.absent
    return f"raw{path}.get({key!r}, _absent_{fact.name})"


def _fields() -> list[PartitionFact]:
    """The facts a decoder reads: PartitionInfo's fields but the topic (the caller's)."""
    return [f for f in PARTITION_FACTS if f.field and f.name != KEY]


def _construct() -> str:
    """The constructor's call, arguments by position (keywords cost more at 100,000)."""
    values = [f"_{f.name}" for f in fields(PartitionInfo)]
    values[0] = KEY
    return f"    return PartitionInfo({', '.join(values)})"


def _json_decoder_source(names: Names) -> str:
    lines = ["def partition_from_json(topic, raw):"]
    for fact in _fields():
        lines += _decoding(fact, _json_raw(fact, names), fact.codec.from_json)
    lines.append(_construct())
    return "\n".join(lines) + "\n"


def _row_source() -> str:
    lines = ["def partition_row(p):"]
    cells = [_value_of(f, f.codec.row_out, lines) for f in _fields()]
    lines.append(f"    return [{', '.join(cells)}]")
    return "\n".join(lines) + "\n"


def _row_decoder_source(fields: Sequence[str], names: Names) -> str:
    """A decoder of rows holding `fields` in that order; a fact a row lacks reads as its
    `absent` value (a required one lacking: refused)."""
    at = {name: i for i, name in enumerate(fields)}
    lines = ["def decode(topic, row):"]
    for fact in _fields():
        if fact.name in at:
            raw = f"row[{at[fact.name]}]"
        elif fact.absent == REQUIRED:
            raise ValueError(f"a recorded row without {fact.name}")
        else:
            names[f"_absent_{fact.name}"] = fact.absent
            raw = f"_absent_{fact.name}"
        lines += _decoding(fact, raw, fact.codec.row_in)
    lines.append(_construct())
    return "\n".join(lines) + "\n"


def _json_decoder() -> JsonDecoder:
    names: Names = {}
    source = _json_decoder_source(names)
    decoder: JsonDecoder = _with(names, source,
                                                                    "partition_from_json")
    return decoder


partition_to_json: Callable[[PartitionInfo], JsonObject] = _with(
    {}, _json_source(), "partition_to_json")
partition_from_json = _json_decoder()
partition_row: Callable[[PartitionInfo], list[Any]] = _with({}, _row_source(), "partition_row")


@cache
def row_decoder(fields: tuple[str, ...] | None = ROW_FIELDS) -> RowDecoder:
    """Decodes rows of these fields; None: a recording made before rows were named, each row
    read by its length (13, 17 or 19 cells: the fields of the day)."""
    if fields is None:
        return _by_length
    names: Names = {}
    decoder: RowDecoder = _with(names, _row_decoder_source(fields, names), "decode")
    return decoder


def _by_length(topic: str, row: list[Any]) -> PartitionInfo:
    return row_decoder(UNNAMED_ROWS[len(row)])(topic, row)
