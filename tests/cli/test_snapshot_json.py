"""`snapshot --json` encoded on two cores writes the very bytes one encoder writes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from kinspect.cli.snapshot_json import CHILD_SHARE, FORK_FROM, OPTIONS, snapshot_json
from kinspect.model import ClusterSnapshot, PartitionInfo, TopicInfo, partitions_to_json, snapshot_to_json
from tests.helpers.model_fixtures import demo_snapshot


def big_snapshot(partitions: int, sizes: Sequence[int] = ()) -> ClusterSnapshot:
    """The demo snapshot's topics copied under new names until it holds `partitions`; with
    `sizes`, topics of those sizes (copies of the demo's first topic's partitions)."""
    base = demo_snapshot()
    topics: list[TopicInfo] = []
    for size in sizes:
        template = base.topics[0]
        name = f"sized-{len(topics)}"
        topics.append(replace(template, name=name, partitions=tuple(
            replace(template.partitions[i % len(template.partitions)], topic=name, partition=i)
            for i in range(size))))
    while sum(len(t.partitions) for t in topics) < partitions:
        for topic in base.topics:
            name = f"{topic.name}-{len(topics)}"
            topics.append(replace(topic, name=name, partitions=tuple(
                replace(p, topic=name) for p in topic.partitions)))
    return replace(base, topics=tuple(topics))


def one_encoder(snapshot: ClusterSnapshot) -> bytes:
    return orjson.dumps(snapshot_to_json(snapshot), option=OPTIONS)


def noting_pids(where: Path, fail_in_child: bool = False) -> Any:
    """partitions_to_json that notes which process encoded each partition (and fails in
    the child)."""
    parent = os.getpid()

    def encode(partitions: Sequence[PartitionInfo]) -> list[dict[str, Any]]:
        with where.open("a") as out:
            out.writelines(f"{os.getpid()} {p.topic} {p.partition}\n" for p in partitions)
        if fail_in_child and os.getpid() != parent:
            raise RuntimeError("the child fails")
        return partitions_to_json(partitions)
    return encode


def encoders(where: Path) -> dict[int, list[tuple[str, int]]]:
    seen: dict[int, list[tuple[str, int]]] = {}
    for line in where.read_text().splitlines():
        pid, topic, partition = line.split()
        seen.setdefault(int(pid), []).append((topic, int(partition)))
    return seen


def every_partition(snapshot: ClusterSnapshot) -> list[tuple[str, int]]:
    return [(p.topic, p.partition) for t in snapshot.topics for p in t.partitions]


def test_a_big_snapshot_is_encoded_in_two_processes_into_the_same_bytes(tmp_path: Path) -> None:
    snapshot = big_snapshot(FORK_FROM * 2)
    notes = tmp_path / "pids"
    encoded = snapshot_json(snapshot, snapshot.topics, noting_pids(notes))
    assert encoded == one_encoder(snapshot)
    by_pid = encoders(notes)
    assert len(by_pid) == 2 and os.getpid() in by_pid
    ours = by_pid.pop(os.getpid())
    theirs = next(iter(by_pid.values()))
    assert ours + theirs == every_partition(snapshot)  # in order, each once
    assert len(theirs) == int(len(ours + theirs) * CHILD_SHARE)


def test_one_topic_of_nearly_all_partitions_is_cut_in_two(tmp_path: Path) -> None:
    snapshot = big_snapshot(0, sizes=(FORK_FROM * 2, 3))  # a skewed cluster
    notes = tmp_path / "pids"
    assert snapshot_json(snapshot, snapshot.topics, noting_pids(notes)) == one_encoder(snapshot)
    by_pid = encoders(notes)
    ours = by_pid.pop(os.getpid())
    (theirs,) = by_pid.values()
    assert ours[0] == ("sized-0", 0) and theirs[0][0] == "sized-0"
    assert theirs[-1] == ("sized-1", 2)


def test_a_failed_child_loses_nothing(tmp_path: Path) -> None:
    snapshot = big_snapshot(FORK_FROM * 2)
    notes = tmp_path / "pids"
    encoded = snapshot_json(snapshot, snapshot.topics, noting_pids(notes, fail_in_child=True))
    assert encoded == one_encoder(snapshot)
    by_pid = encoders(notes)
    assert len(by_pid) == 2  # a child did start, and failed
    assert sorted(by_pid[os.getpid()]) == sorted(every_partition(snapshot))


def test_a_small_snapshot_or_some_topics_stay_in_one_process(tmp_path: Path) -> None:
    snapshot = demo_snapshot()
    notes = tmp_path / "pids"
    assert snapshot_json(snapshot, snapshot.topics, noting_pids(notes)) == one_encoder(snapshot)
    assert list(encoders(notes)) == [os.getpid()]
    some = snapshot.topics[:1]
    expected = snapshot_to_json(snapshot)
    expected["topics"] = expected["topics"][:1]
    assert orjson.loads(snapshot_json(snapshot, some)) == expected
