"""Read kept segment files (Kafka's on-disk record batches, magic v2) into a table of who held what.

Each batch header carries the partition leader epoch stamped by the leader that appended it,
so a kinspect message found in broker B's log inside a batch of epoch E tells, from the bytes
themselves, which epoch wrote it. Only uncompressed batches are read (kinspect's producers
do not compress); any other batch is counted and skipped, never guessed at.

Layout (Kafka's DefaultRecordBatch): baseOffset int64, batchLength int32, partitionLeaderEpoch
int32, magic int8, crc uint32, attributes int16, lastOffsetDelta int32, baseTimestamp int64,
maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32, count int32,
then the records (varint-framed).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

HEADER = struct.Struct(">qiibIhiqqqhii")
IDS = re.compile(rb"([0-9a-f]{8})-(\d{1,9})-(\d{1,18})\|")
HELD_SCHEMA = pa.schema([
    ("snapshot", pa.string()), ("snapshot_ms", pa.int64()), ("node", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("batch_epoch", pa.int32()),
    ("run", pa.string()), ("producer", pa.int32()), ("seq", pa.int64()),
])


@dataclass(frozen=True)
class Batch:
    base_offset: int
    leader_epoch: int
    attributes: int
    count: int
    records: bytes


def read_batches(data: bytes) -> Iterator[Batch]:
    """Every whole batch in a segment; a batch cut short at the end (copied mid-append) ends it."""
    pos = 0
    while pos + HEADER.size <= len(data):
        (base, length, epoch, magic, _crc, attributes, _last_delta, _ts0, _ts1, _pid, _pepoch,
         _seq0, count) = HEADER.unpack_from(data, pos)
        end = pos + 12 + length
        if length <= 0 or end > len(data):
            return
        if magic == 2:
            yield Batch(base, epoch, attributes, count, data[pos + HEADER.size:end])
        pos = end


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def record_values(records: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset delta, value) of each record in an uncompressed batch."""
    pos = 0
    while pos < len(records):
        length, pos = _varint(records, pos)
        end = pos + length
        pos += 1  # attributes
        _ts, pos = _varint(records, pos)
        delta, pos = _varint(records, pos)
        key_len, pos = _varint(records, pos)
        pos += max(0, key_len)
        value_len, pos = _varint(records, pos)
        yield delta, records[pos:pos + max(0, value_len)]
        pos = end


@dataclass
class Held:
    """Column buffers for HELD_SCHEMA, and what could not be read."""

    columns: dict[str, list[object]] = field(
        default_factory=lambda: {name: [] for name in HELD_SCHEMA.names})
    skipped_batches: int = 0

    def add(self, where: tuple[str, int, str, int], offset: int, epoch: int,
            ident: tuple[str, int, int]) -> None:
        for name, value in zip(HELD_SCHEMA.names, (*where, offset, epoch, *ident), strict=True):
            self.columns[name].append(value)

    def table(self) -> pa.Table:
        return pa.table(self.columns, schema=HELD_SCHEMA)


def read_segment(path: Path, where: tuple[str, int, str, int], held: Held) -> None:
    """Add every kinspect message of one segment file; `where` = (snapshot, ms, node, partition)."""
    for batch in read_batches(path.read_bytes()):
        if batch.attributes & 0x07 or batch.attributes & 0x20:  # compressed, or a control batch
            held.skipped_batches += batch.attributes & 0x07 != 0
            continue
        found = IDS.findall(batch.records)
        if len(found) == batch.count:  # the fast path: one id per record, offsets in order
            for i, (run, producer, seq) in enumerate(found):
                held.add(where, batch.base_offset + i, batch.leader_epoch,
                         (run.decode(), int(producer), int(seq)))
            continue
        for delta, value in record_values(batch.records):
            match = IDS.match(value)
            if match:
                held.add(where, batch.base_offset + delta, batch.leader_epoch,
                         (match[1].decode(), int(match[2]), int(match[3])))


def read_snapshots(snapshots: list[Path], topic: str) -> Held:
    """`snapshot/<node>/<topic>-<p>/*.log` for every kept snapshot of a run."""
    held = Held()
    pattern = re.compile(rf"^{re.escape(topic)}-(\d+)$")
    for snapshot in snapshots:
        stamp = snapshot.name.split("-", 1)[0]
        ms = int(stamp) if stamp.isdigit() else 0
        for node in sorted(p for p in snapshot.iterdir() if p.is_dir()):
            for part in sorted(p for p in node.iterdir() if p.is_dir()):
                found = pattern.match(part.name)
                if found is None:
                    continue
                for segment in sorted(part.glob("*.log")):
                    read_segment(segment, (snapshot.name, ms, node.name, int(found[1])), held)
    return held
