"""The journal names what was done: an isolation is an isolation, a partition a partition, and
an older journal's isolation (journaled as the partition it made) is still read as one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinspect.lab import journal, presets
from kinspect.lab.backend import LabBackend, plan_nodes
from kinspect.lab.faults import Fault, FaultKind, Scope
from kinspect.lab.journal import JournalEntry, old_isolation
from kinspect.lab.state import LabState
from kinspect.lab.topology import isolate_groups
from kinspect.lessons.flow import Happening
from kinspect.lessons.lesson_values import Trigger
from kinspect.model.events import TimelineEvent
from kinspect.postmortem.evidence.inputs import fault_event
from kinspect.postmortem.story.lanes import label
from kinspect.tui.lesson_app import journal_happenings

NODES = ["zk1", "kafka1", "kafka2", "kafka3"]


def _stub(_self: Any, *_args: Any, **_kwargs: Any) -> None:
    return None


class Bench(LabBackend):
    """A backend that cuts nothing: only the shared steps (state file, journal) run."""

    name = "process"

    def __init__(self, root: Path) -> None:
        self.root = root


for _method in LabBackend.__abstractmethods__:
    setattr(Bench, _method, _stub)
Bench.__abstractmethods__ = frozenset()


def lab() -> LabState:
    nodes = plan_nodes(3, lambda index, name: (f"198.18.9.{10 + index}", 9092))
    return LabState(lab_id="lab1", backend="process", preset="demo", network="netns",
                    kafka_version="3.9.2", nodes=nodes, created_at=0, overrides={},
                    broker_config=presets.effective("demo", {}, "zookeeper"))


def test_an_isolation_is_journaled_as_one_and_a_partition_as_a_partition(
        tmp_path: Path) -> None:
    backend = Bench(tmp_path)
    said = backend._partition(lab(), Fault(FaultKind.ISOLATE, "kafka1", Scope.ZK))
    backend._partition(lab(), Fault(FaultKind.PARTITION, groups=(("kafka2",),)))
    isolation, partition = journal.read(tmp_path)
    assert said.startswith("isolated kafka1 from ZooKeeper")
    assert (isolation.action, isolation.node, isolation.scope) == ("isolate", "kafka1", Scope.ZK)
    assert isolation.groups == (("kafka1", "kafka2", "kafka3"), ("zk1", "kafka2", "kafka3"))
    assert isolation.kind is FaultKind.ISOLATE and isolation.words == "isolate kafka1 from zk"
    assert (partition.action, partition.kind, partition.isolation) == (
        "partition", FaultKind.PARTITION, None)
    assert journal_happenings(isolation) == [Happening(Trigger.FAULT, "isolate")]
    # a hand-made partition is no isolation: its own fault (a step word since the nemesis)
    assert journal_happenings(partition) == [Happening(Trigger.FAULT, "partition")]
    event = fault_event(isolation)
    assert event.detail == ("fault: isolate kafka1 from zk "
                            "(kafka1,kafka2,kafka3 | zk1,kafka2,kafka3)")
    assert event.broker == 1


@pytest.mark.parametrize("scope", list(Scope))
def test_an_isolations_band_says_the_same_from_the_events_and_from_the_report(
        scope: Scope) -> None:
    """timeline.png reads the events (their groups), the TUI's report screen report.json's
    entries (the groups only in their words): both name the cut, as for a partition."""
    groups = isolate_groups("kafka1", NODES, scope)
    entry = JournalEntry(5, "isolate", "lab1", "kafka1", tuple(map(tuple, groups)),
                         journal.cut_text(groups), scope)
    event = fault_event(entry)
    entry_of_report = TimelineEvent.from_json(event.to_json())
    assert entry_of_report is not None and entry_of_report.groups is None
    assert label(entry_of_report) == label(event) != "isolate kafka1"


@pytest.mark.parametrize("scope", list(Scope))
def test_an_older_journals_isolation_is_read_as_one(scope: Scope) -> None:
    groups = isolate_groups("kafka2", NODES, scope)
    old = JournalEntry.from_json({"ts": 5, "action": "partition", "node": None,
                                  "groups": groups, "detail": "", "lab_id": "x"})
    assert old.version == 1 and old.action == "partition"
    assert old.isolation == ("kafka2", scope) and old.kind is FaultKind.ISOLATE
    assert journal_happenings(old) == [Happening(Trigger.FAULT, "isolate")]
    # the post-mortem keeps it as written: recorded runs' reports stay as they were
    assert fault_event(old).action == "partition"


def test_an_older_journals_partition_of_another_shape_stays_a_partition() -> None:
    assert old_isolation((("kafka1", "kafka2"), ("kafka3", "zk1"))) is None
    assert old_isolation((("kafka1",), ("kafka2",), ("kafka3", "zk1"))) is None
    # groups may share nodes: kafka1 keeps kafka2 alone, so it is cut from kafka3 as well as
    # from zk1, which `isolate kafka1 --from zk` (and --from brokers) does not do
    assert old_isolation((("kafka1", "kafka2"), ("kafka2", "kafka3", "zk1"))) is None
    assert old_isolation((("kafka1", "zk1"), ("zk1", "zk2", "kafka2"))) is None
    assert old_isolation(None) is None
    new = JournalEntry(1, "partition", groups=(("kafka1",), ("kafka2", "kafka3", "zk1")))
    assert new.isolation is None  # version 2 says an isolation in its own word


def test_an_entry_survives_its_json_and_reads_what_older_lines_lack() -> None:
    entry = JournalEntry(7, "isolate", "lab1", "kafka1", (("kafka1",), ("kafka2", "zk1")),
                         "kafka1 | kafka2,zk1", Scope.ALL)
    assert JournalEntry.from_json(entry.to_json()) == entry
    assert JournalEntry.from_json({"ts": 3.0, "action": "kill", "node": "kafka2"}) == \
        JournalEntry(3, "kill", node="kafka2", version=1)
    assert JournalEntry.from_json({"ts": 1, "action": "isolate", "scope": "nowhere"}).scope is None


def test_a_heal_is_the_heal_trigger_and_the_fault(tmp_path: Path) -> None:
    entry = journal.record(FaultKind.HEAL, "lab1", root=tmp_path)
    assert journal.read(tmp_path) == [entry]
    assert journal_happenings(entry) == [Happening(Trigger.HEAL), Happening(Trigger.FAULT, "heal")]
    assert journal_happenings(JournalEntry(1, "up")) == []
