"""The groups probe's line is the contract between the probe's process and the watcher that
reads it: what ProbeAnswer writes, read_probe_line reads back whole."""

from __future__ import annotations

import json

from kinspect.clients.groups import GroupAnswer, ProbeAnswer
from kinspect.clients.groups_watch import read_probe_line


def line(answer: ProbeAnswer) -> str:
    return json.dumps(answer.to_json())


def test_a_poll_reads_back_whole() -> None:
    read = GroupAnswer("Stable", 2, (("orders", 0, 41), ("orders", 1, 7)),
                       (("orders", 0, 1_795_000_000_000),))
    not_read = GroupAnswer("Empty", 0, (("test1", 0, 0),))
    answer = ProbeAnswer(("a", "b", "c"), {"a": read, "b": not_read},
                         {"c": "GROUP_AUTHORIZATION_FAILED"})
    listed, views, refused = read_probe_line(line(answer))
    assert listed == ["a", "b", "c"]
    assert (views["a"].state, views["a"].members) == ("Stable", 2)
    assert views["a"].committed == {("orders", 0): 41, ("orders", 1): 7}
    assert views["a"].next_ts == {("orders", 0): 1_795_000_000_000}
    assert views["b"].committed == {("test1", 0): 0}  # a commit at 0 is a commit
    assert views["b"].next_ts == {}  # not read yet
    assert refused == {"c": "GROUP_AUTHORIZATION_FAILED"}


def test_no_group_listed_reads_as_none() -> None:
    assert read_probe_line(line(ProbeAnswer((), {}))) == ([], {}, {})
