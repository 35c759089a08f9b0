"""`snapshot --json` encoded on both cores.

Most of a big snapshot's JSON is its partitions, built in Python a dict at a time (0.7 s of
100,000 partitions), and once the brokers have answered, the machine's second core sits idle.
A forked child encodes the later topics into a memfd while this process encodes the earlier
ones and the rest of the snapshot; the two are joined in order. The bytes are the same as one
`orjson.dumps(snapshot_to_json(...))` (the tests hold them to it). Where fork or memfd is
missing, below FORK_FROM partitions, or if the child fails, this process encodes them all.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from kinspect.model import ClusterSnapshot, TopicInfo, snapshot_to_json, topic_to_json

FORK_FROM = 2_000  # partitions: below this a fork (~5 ms) saves less than it costs
OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
Encode = Callable[[TopicInfo], dict[str, Any]]


def snapshot_json(snapshot: ClusterSnapshot, topics: Sequence[TopicInfo],
                  encode: Encode = topic_to_json) -> bytes:
    """The snapshot as one line of JSON, showing `topics` (the snapshot's, or some of them)."""
    mine, theirs = _halves(topics)
    child = _fork_encoder(theirs, encode) if theirs else None
    head = snapshot_to_json(snapshot, with_topics=False)
    ours = _encoded(mine, encode)
    found = _collect(child) if child is not None else None
    if found is None:  # no child, or it failed: nothing is lost, only the time
        found = _encoded(theirs, encode)
    head["topics"] = orjson.Fragment(b"[" + b",".join(p for p in (ours, found) if p) + b"]")
    return orjson.dumps(head, option=OPTIONS)


def _halves(topics: Sequence[TopicInfo]) -> tuple[Sequence[TopicInfo], Sequence[TopicInfo]]:
    """(this process's topics, the child's): split at half the partitions, none for the child
    on a small cluster or where a process cannot fork."""
    total = sum(len(t.partitions) for t in topics)
    if total < FORK_FROM or not hasattr(os, "fork") or not hasattr(os, "memfd_create"):
        return topics, ()
    seen = 0
    for index, topic in enumerate(topics):
        seen += len(topic.partitions)
        if seen * 2 >= total:
            return topics[:index + 1], topics[index + 1:]
    return topics, ()


def _encoded(topics: Sequence[TopicInfo], encode: Encode) -> bytes:
    return b",".join(orjson.dumps(encode(t), option=orjson.OPT_NON_STR_KEYS) for t in topics)


def _fork_encoder(topics: Sequence[TopicInfo], encode: Encode) -> tuple[int, int] | None:
    """(pid, memfd) of a child writing the topics' JSON to the memfd, or None (no fork)."""
    memfd = os.memfd_create("kinspect-snapshot")
    try:
        with warnings.catch_warnings():  # Python 3.12 warns of forking beside threads: the
            warnings.simplefilter("ignore", DeprecationWarning)  # child only encodes and exits
            pid = os.fork()
    except OSError:
        os.close(memfd)
        return None
    if pid == 0:
        _child(topics, encode, memfd)
    return pid, memfd


def _child(topics: Sequence[TopicInfo], encode: Encode, memfd: int) -> None:
    """Encode, write, and leave at once: no exit handlers, no buffers of the parent's flushed."""
    code = 1
    try:
        with os.fdopen(memfd, "wb") as out:
            out.write(_encoded(topics, encode))
        code = 0
    finally:
        os._exit(code)


def _collect(child: tuple[int, int]) -> bytes | None:
    """The child's bytes once it has exited cleanly; None if it failed."""
    pid, memfd = child
    try:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return None
        with os.fdopen(memfd, "rb", closefd=False) as found:
            found.seek(0)
            return found.read() or None
    finally:
        os.close(memfd)
