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

import numpy as np
import pyarrow as pa

HEADER = struct.Struct(">qiibIhiqqqhii")
IDS = re.compile(rb"([0-9a-f]{8})-(\d{1,9})-(\d{1,18})\|")  # any run's message


def ids_of(run_id: str) -> re.Pattern[bytes]:
    """One run's messages: led by a literal, so the scan skips ahead (10x faster than IDS
    over the 100-byte values of a demo's logs)."""
    return re.compile(rb"(" + re.escape(run_id.encode()) + rb")-(\d{1,9})-(\d{1,18})\|")
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
    """The records found, one Arrow table per segment, and what could not be read."""

    chunks: list[pa.Table] = field(default_factory=list)
    skipped_batches: int = 0

    def table(self) -> pa.Table:
        return pa.concat_tables(self.chunks) if self.chunks else HELD_SCHEMA.empty_table()


def read_segment(path: Path, where: tuple[str, int, str, int], held: Held,
                 ids: re.Pattern[bytes] = IDS) -> None:
    """Add every kinspect message (of `ids`) of one segment file; `where` = (snapshot, ms,
    node, partition).

    Columns are gathered per segment and converted by Arrow at once: per record in Python it
    took 2.6 s for the 630,000 records a 100,000-message demo leaves in three replicas."""
    offsets: list[np.ndarray] = []
    epochs: list[np.ndarray] = []
    idents: list[tuple[bytes, bytes, bytes]] = []
    for batch in read_batches(path.read_bytes()):
        if batch.attributes & 0x07 or batch.attributes & 0x20:  # compressed, or a control batch
            held.skipped_batches += batch.attributes & 0x07 != 0
            continue
        found = ids.findall(batch.records)
        if not found:  # another run's batch (a reused topic)
            continue
        if len(found) == batch.count:  # the fast path: one id per record, offsets in order
            deltas = np.arange(batch.count, dtype=np.int64)
        else:
            pairs = [(delta, match.groups()) for delta, value in record_values(batch.records)
                     if (match := ids.match(value))]
            deltas = np.array([delta for delta, _ in pairs], np.int64)
            found = [ident for _, ident in pairs]
        offsets.append(batch.base_offset + deltas)
        epochs.append(np.full(len(deltas), batch.leader_epoch, np.int32))
        idents.extend(found)
    if idents:
        held.chunks.append(_chunk(where, np.concatenate(offsets), np.concatenate(epochs), idents))


def _chunk(where: tuple[str, int, str, int], offsets: np.ndarray, epochs: np.ndarray,
           ids: list[tuple[bytes, bytes, bytes]]) -> pa.Table:
    runs, producers, seqs = (pa.array(column, pa.binary()).cast(pa.string())
                             for column in zip(*ids, strict=True))
    n = len(ids)
    return pa.table([pa.repeat(pa.scalar(value, kind), n) for value, kind in
                     zip(where, HELD_SCHEMA.types[:4], strict=True)]
                    + [pa.array(offsets), pa.array(epochs), runs, producers.cast(pa.int32()),
                       seqs.cast(pa.int64())], schema=HELD_SCHEMA)


def read_snapshots(snapshots: list[Path], topic: str, run_id: str | None = None) -> Held:
    """`snapshot/<node>/<topic>-<p>/*.log` for every kept snapshot of a run: the messages of
    `run_id` only (the post-mortem asks about no other), or of any run when None."""
    held = Held()
    ids = ids_of(run_id) if run_id else IDS
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
                    read_segment(segment, (snapshot.name, ms, node.name, int(found[1])), held,
                                 ids)
    return held
