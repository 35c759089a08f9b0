"""`lab up --broker-heap`: a lab big enough for tens of thousands of partitions, refused plainly
when the size is nonsense, and carried to every broker's JVM and a dedicated controller's (they
hold the same metadata), never ZooKeeper's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import presets
from kinspect.lab.backend import (
    BROKER_WAIT_S,
    START_WAIT_S,
    UpOptions,
    plan_nodes,
    status_json,
)
from kinspect.lab.dist import KafkaDist
from kinspect.lab.host_checks import lab_memory_mib
from kinspect.lab.nodes import BROKER_HEAP, heap_of, java_command
from kinspect.lab.state import LabState
from tests.helpers import kinspect
from tests.helpers.errors import one_line_error


def lab(broker_heap: str | None) -> LabState:
    nodes = plan_nodes(2, lambda index, name: (f"198.18.9.{10 + index}", 9092), None,
                       lambda index: 9093)
    return LabState(lab_id="x", backend="process", preset="demo", network="netns",
                    kafka_version="3.9.2", nodes=nodes, created_at=0, overrides={},
                    broker_config=presets.effective("demo", {}, "zookeeper"),
                    extra={"broker_heap": broker_heap} if broker_heap else {})


def heaps(state: LabState) -> dict[str, list[str]]:
    kafka = KafkaDist(home=Path("/k"), version="3.9.2", java="java")
    return {node.name: [flag for flag in java_command(kafka, Path("/r"), node, "x",
                                                      heap=heap_of(node.role, state))
                        if flag.startswith(("-Xmx", "-Xms"))] for node in state.nodes}


def test_only_the_brokers_get_the_chosen_heap() -> None:
    assert heaps(lab("2g")) == {"zk1": ["-Xms128m", "-Xmx128m"], "kafka1": ["-Xms2g", "-Xmx2g"],
                                "kafka2": ["-Xms2g", "-Xmx2g"]}
    assert heaps(lab(None))["kafka1"] == [f"-Xms{BROKER_HEAP}", f"-Xmx{BROKER_HEAP}"]


def test_status_says_the_heap_and_the_memory_check_counts_it() -> None:
    assert status_json(lab("2g"), network_faults=True)["broker_heap"] == "2g"
    assert status_json(lab(None), network_faults=True)["broker_heap"] == BROKER_HEAP
    small = lab_memory_mib(UpOptions(brokers=3))
    big = lab_memory_mib(UpOptions(brokers=3, broker_heap="2g"))
    assert big - small == 3 * (2048 - 384)  # zk1 keeps its own
    kraft = UpOptions(brokers=3, broker_heap="2g", mode="kraft")  # and ctl1 takes it too
    assert lab_memory_mib(kraft) - lab_memory_mib(UpOptions(brokers=3, mode="kraft")) == \
        3 * (2048 - 384) + (2048 - 256)
    assert heap_of("controller", lab("1g")) == "1g" and heap_of("controller", lab(None)) == "256m"


@pytest.mark.parametrize(("size", "words"), [
    ("lots", "expected a JVM size such as 768m or 2g, not 'lots'"),
    ("100m", "must be between 256m and 16g, not 100m"),
    ("64g", "must be between 256m and 16g, not 64g"),
])
def test_a_bad_size_is_refused_before_anything_starts(size: str, words: str) -> None:
    with pytest.raises(KinspectError, match=words):
        UpOptions(broker_heap=size).validate()


def test_the_command_line_refuses_it_in_one_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINSPECT_HOME", str(tmp_path))
    message = one_line_error(kinspect("lab", "up", "--broker-heap", "12x", check=False))
    assert message == "kinspect: error: --broker-heap expected a JVM size such as 768m or 2g, " \
                      "not '12x'"
    assert not (tmp_path / "lab").exists()  # nothing made


def test_lab_up_waits_longer_for_more_brokers_unless_told() -> None:
    """Brokers start side by side on the same cores: nine took ~14 s each on two, and the
    fixed 120 s ran out before the ninth joined."""
    assert UpOptions().wait_s == UpOptions(brokers=1).wait_s == START_WAIT_S == 120.0
    assert UpOptions(brokers=9).wait_s == START_WAIT_S + 6 * BROKER_WAIT_S
    assert UpOptions(brokers=9, timeout_s=30).wait_s == 30
