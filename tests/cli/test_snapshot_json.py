"""`snapshot --json` encoded on two cores writes the very bytes one encoder writes."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from kinspect.cli.snapshot_json import FORK_FROM, OPTIONS, snapshot_json
from kinspect.model import ClusterSnapshot, TopicInfo, snapshot_to_json, topic_to_json
from tests.helpers.model_fixtures import demo_snapshot


def big_snapshot(partitions: int) -> ClusterSnapshot:
    """The demo snapshot's topics copied under new names until it holds `partitions`."""
    base = demo_snapshot()
    topics: list[TopicInfo] = []
    while sum(len(t.partitions) for t in topics) < partitions:
        for topic in base.topics:
            name = f"{topic.name}-{len(topics)}"
            topics.append(replace(topic, name=name, partitions=tuple(
                replace(p, topic=name) for p in topic.partitions)))
    return replace(base, topics=tuple(topics))


def one_encoder(snapshot: ClusterSnapshot) -> bytes:
    return orjson.dumps(snapshot_to_json(snapshot), option=OPTIONS)


def noting_pids(where: Path, fail_in_child: bool = False) -> Any:
    """topic_to_json that notes which process encoded each topic (and fails in the child)."""
    parent = os.getpid()

    def encode(topic: TopicInfo) -> dict[str, Any]:
        with where.open("a") as out:
            out.write(f"{os.getpid()} {topic.name}\n")
        if fail_in_child and os.getpid() != parent:
            raise RuntimeError("the child fails")
        return topic_to_json(topic)
    return encode


def encoders(where: Path) -> dict[int, list[str]]:
    seen: dict[int, list[str]] = {}
    for line in where.read_text().splitlines():
        pid, name = line.split()
        seen.setdefault(int(pid), []).append(name)
    return seen


def test_a_big_snapshot_is_encoded_in_two_processes_into_the_same_bytes(tmp_path: Path) -> None:
    snapshot = big_snapshot(FORK_FROM * 2)
    notes = tmp_path / "pids"
    encoded = snapshot_json(snapshot, snapshot.topics, noting_pids(notes))
    assert encoded == one_encoder(snapshot)
    by_pid = encoders(notes)
    assert len(by_pid) == 2 and os.getpid() in by_pid
    names = [t.name for t in snapshot.topics]
    assert by_pid.pop(os.getpid()) + next(iter(by_pid.values())) == names  # in order, once each


def test_a_failed_child_loses_nothing(tmp_path: Path) -> None:
    snapshot = big_snapshot(FORK_FROM * 2)
    notes = tmp_path / "pids"
    encoded = snapshot_json(snapshot, snapshot.topics, noting_pids(notes, fail_in_child=True))
    assert encoded == one_encoder(snapshot)
    assert set(encoders(notes)[os.getpid()]) == {t.name for t in snapshot.topics}


def test_a_small_snapshot_or_some_topics_stay_in_one_process(tmp_path: Path) -> None:
    snapshot = demo_snapshot()
    notes = tmp_path / "pids"
    assert snapshot_json(snapshot, snapshot.topics, noting_pids(notes)) == one_encoder(snapshot)
    assert list(encoders(notes)) == [os.getpid()]
    some = snapshot.topics[:1]
    expected = snapshot_to_json(snapshot)
    expected["topics"] = expected["topics"][:1]
    assert orjson.loads(snapshot_json(snapshot, some)) == expected
