"""The event log's line for each journaled fault: what a person reads in the screen's events."""

from __future__ import annotations

from kinspect.lab.faults import Scope
from kinspect.lab.journal import JournalEntry
from kinspect.tui.render import fault_line

CUT = (("kafka1", "kafka2", "kafka3"), ("zk1", "kafka2", "kafka3"))


def line(entry: JournalEntry) -> str:
    return fault_line(entry).plain.split(" ", 1)[1]  # past the clock


def test_an_isolation_says_from_what_then_its_cut() -> None:
    entry = JournalEntry(0, "isolate", node="kafka1", groups=CUT, scope=Scope.ZK)
    assert " ".join(line(entry).split()) == (
        "fault: isolate kafka1 from zk (kafka1,kafka2,kafka3 | zk1,kafka2,kafka3)")


def test_a_partition_is_its_groups_and_a_kill_its_node() -> None:
    partition = JournalEntry(0, "partition", groups=(("kafka1",), ("kafka2", "zk1")))
    assert " ".join(line(partition).split()) == "fault: partition kafka1 | kafka2,zk1"
    kill = JournalEntry(0, "kill", node="kafka2", detail="SIGKILL")
    assert " ".join(line(kill).split()) == "fault: kill kafka2 SIGKILL"


def test_a_version_1_isolation_reads_as_it_was_written() -> None:
    old = JournalEntry(0, "partition", groups=CUT, version=1)
    assert " ".join(line(old).split()) == (
        "fault: partition kafka1,kafka2,kafka3 | zk1,kafka2,kafka3")
