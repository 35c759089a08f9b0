"""`snapshot --json` encoded on both cores.

Most of a big snapshot's JSON is its partitions, built in Python a dict at a time (0.9 s of
100,000 partitions), and once the brokers have answered, the machine's second core sits idle.
A forked child encodes the later partitions (a topic may be cut in two) into a memfd while
this process encodes the earlier ones and the rest of the snapshot; the pieces are joined in
order. The bytes are the same as one `orjson.dumps(snapshot_to_json(...))` (the
tests hold them to it). Where fork or memfd is missing, below FORK_FROM partitions, or if the
child fails, this process encodes them all.
"""

from __future__ import annotations

import os
import struct
import warnings
from collections.abc import Callable, Sequence

import orjson

from kinspect.model import (
    ClusterSnapshot,
    PartitionInfo,
    TopicInfo,
    partitions_to_json,
    snapshot_to_json,
    topic_to_json,
)
from kinspect.model.events import JsonObject

FORK_FROM = 2_000  # partitions: below this a fork (~5-20 ms) saves less than it costs
# The child's share of the partitions: it encodes ~1.6 times slower (each object it touches
# is a page copied on write), and this process writes the rest of the snapshot besides.
CHILD_SHARE = 0.42
OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
Encode = Callable[[Sequence[PartitionInfo]], list[JsonObject]]
Piece = tuple[int, int, int]  # (topic's index, first partition, end): partitions[first:end]
_LENGTH = struct.Struct("<Q")


def snapshot_json(snapshot: ClusterSnapshot, topics: Sequence[TopicInfo],
                  encode: Encode = partitions_to_json) -> bytes:
    """The snapshot as one line of JSON, showing `topics` (the snapshot's, or some of them)."""
    mine, theirs = _halves(topics)
    child = _fork_encoder(topics, theirs, encode) if theirs else None
    head = snapshot_to_json(snapshot, with_topics=False)
    ours = _items(topics, mine, encode)
    found = _collect(child) if child is not None else None
    if found is None:  # no child, or it failed: nothing is lost, only the time
        found = _items(topics, theirs, encode)
    lists: dict[int, list[bytes]] = {}
    for (index, _first, _end), items in zip([*mine, *theirs], [*ours, *found], strict=True):
        lists.setdefault(index, []).append(items)
    head["topics"] = [topic_to_json(topic, orjson.Fragment(
        b"[" + b",".join(p for p in lists.get(index, ()) if p) + b"]"))
        for index, topic in enumerate(topics)]
    return orjson.dumps(head, option=OPTIONS)


def _halves(topics: Sequence[TopicInfo]) -> tuple[list[Piece], list[Piece]]:
    """(this process's pieces, the child's): every partition once, in order, the child's the
    last CHILD_SHARE of them; none on a small cluster or where a process cannot fork."""
    total = sum(len(t.partitions) for t in topics)
    whole = [(index, 0, len(t.partitions)) for index, t in enumerate(topics)]
    if total < FORK_FROM or not hasattr(os, "fork") or not hasattr(os, "memfd_create"):
        return whole, []
    mine: list[Piece] = []
    left = total - int(total * CHILD_SHARE)
    for index, first, end in whole:
        if left <= 0:
            break
        cut = min(end, left)
        mine.append((index, first, cut))
        left -= cut
    index, _first, cut = mine[-1]
    theirs = [(index, cut, whole[index][2])] if cut < whole[index][2] else []
    return mine, theirs + whole[index + 1:]


def _items(topics: Sequence[TopicInfo], pieces: Sequence[Piece], encode: Encode) -> list[bytes]:
    """Each piece's partitions as JSON array items, without the brackets."""
    return [orjson.dumps(encode(topics[index].partitions[first:end]),
                         option=orjson.OPT_NON_STR_KEYS)[1:-1] for index, first, end in pieces]


def _fork_encoder(topics: Sequence[TopicInfo], pieces: Sequence[Piece], encode: Encode
                  ) -> tuple[int, int, int] | None:
    """(pid, memfd, pieces) of a child writing the pieces' JSON to the memfd, or None."""
    memfd = os.memfd_create("kinspect-snapshot")
    try:
        with warnings.catch_warnings():  # Python 3.12 warns of forking beside threads: the
            warnings.simplefilter("ignore", DeprecationWarning)  # child only encodes and exits
            pid = os.fork()
    except OSError:
        os.close(memfd)
        return None
    if pid == 0:
        _child(topics, pieces, encode, memfd)
    return pid, memfd, len(pieces)


def _child(topics: Sequence[TopicInfo], pieces: Sequence[Piece], encode: Encode,
           memfd: int) -> None:
    """Encode, write each piece after its length, and leave at once: no exit handlers, no
    buffers of the parent's flushed twice."""
    code = 1
    try:
        with os.fdopen(memfd, "wb") as out:
            for items in _items(topics, pieces, encode):
                out.write(_LENGTH.pack(len(items)) + items)
        code = 0
    finally:
        os._exit(code)


def _collect(child: tuple[int, int, int]) -> list[bytes] | None:
    """The child's pieces once it has exited cleanly; None if it failed."""
    pid, memfd, count = child
    try:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return None
        with os.fdopen(memfd, "rb", closefd=False) as found:
            found.seek(0)
            data = found.read()
    finally:
        os.close(memfd)
    pieces, at = [], 0
    for _ in range(count):
        if at + _LENGTH.size > len(data):
            return None
        (length,), at = _LENGTH.unpack_from(data, at), at + _LENGTH.size
        pieces.append(data[at:at + length])
        at += length
    return pieces if at == len(data) else None
