"""kinspect's four partition lists equal Kafka's own `kafka-topics --describe` filters, partition
for partition, in the states an on-call engineer meets: healthy, a broker down, one replica
left under min.insync.replicas=2 (and an RF 1 topic offline), and a throttled reassignment
in progress, which is shown as one and does not make `health` warn."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kinspect.lab import dist
from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, lab_status, wait_until
from tests.helpers.oracles import kafka_topics

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]

FILTERS = {"under_replicated": "--under-replicated-partitions",
           "under_min_isr": "--under-min-isr-partitions",
           "at_min_isr": "--at-min-isr-partitions",
           "unavailable": "--unavailable-partitions"}
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def kafka_lists(bootstrap: str) -> dict[str, set[str]]:
    """The four filters, one TopicCommand each, run at once (48 JVMs a run otherwise took
    half of this test's two minutes one after the other)."""
    def listed(flag: str) -> set[str]:
        return {f"{row['topic']}-{row['partition']}" for row in kafka_topics(bootstrap, flag)}

    with ThreadPoolExecutor(len(FILTERS)) as pool:
        return dict(zip(FILTERS, pool.map(listed, FILTERS.values()), strict=True))


def kinspect_lists(*cluster: str, watch_moves: str = "0") -> dict[str, Any]:
    """health --json; the lists are one look (a reassignment's progress is watched apart)."""
    proc = kinspect("health", "--json", "--timeout", "10", "--watch-moves", watch_moves,
                    *cluster, check=False)
    return dict(json.loads(proc.stdout))


def same_lists(bootstrap: str, *cluster: str) -> dict[str, Any] | None:
    """kinspect's health report when its four lists equal Kafka's (asked around it)."""
    before = kafka_lists(bootstrap)
    report = kinspect_lists(*cluster)
    after = kafka_lists(bootstrap)
    ours = {name: set(report.get(name, [])) for name in FILTERS}
    return report if ours == before == after else None


def assert_same(bootstrap: str, state: str, *cluster: str) -> dict[str, Any]:
    report = wait_until(lambda: same_lists(bootstrap, *cluster), 90,
                        f"kinspect's lists = kafka-topics' ({state})")
    assert isinstance(report, dict)
    return report


@pytest.fixture(params=["zookeeper", pytest.param("kraft", marks=pytest.mark.extended)])
def lists_lab(lab_session: Any, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """A fresh lab (demo preset: min.insync.replicas=2 on the brokers; ZooKeeper mode in CI,
    KRaft in `make matrix`) with topics covering every list: RF 3, RF 3 with
    min.insync.replicas=3 (at min ISR while healthy), RF 1 on broker 3 (offline when it
    stops) with min.insync.replicas=1, and RF 2 on brokers 1,2 (reassigned to 1,3)."""
    kinspect("lab", "reset", "--mode", request.param, timeout=400)
    status = lab_status()
    bootstrap = status["bootstrap"]
    create_topics(bootstrap, {"lists-a": 3})
    kafka = dist.ensure()
    tool = "org.apache.kafka.tools.TopicCommand"
    for args in (["--topic", "lists-strict", "--partitions", "2", "--replication-factor", "3",
                  "--config", "min.insync.replicas=3"],
                 ["--topic", "lists-single", "--replica-assignment", "3",
                  "--config", "min.insync.replicas=1"],
                 ["--topic", "lists-move", "--replica-assignment", "1:2"]):
        subprocess.run(kafka.tool_command(tool, "--bootstrap-server", bootstrap, "--create", *args),
                       check=True, capture_output=True, timeout=120)
    yield status
    for node in ("kafka2", "kafka3"):
        kinspect("lab", "start", node, check=False, timeout=200)


def fill(bootstrap: str, topic: str, megabytes: int) -> None:
    """Records a throttled reassignment must copy (kcat: not our producer)."""
    line = b"x" * 1000 + b"\n"
    subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-z", "none"],
                   input=line * (megabytes * 1000), check=True, timeout=120)


def reassign(bootstrap: str, plan: str, *args: str) -> str:
    kafka = dist.ensure()
    return subprocess.run(kafka.tool_command(REASSIGN, "--bootstrap-server", bootstrap,
                                             "--reassignment-json-file", plan, *args),
                          check=True, capture_output=True, text=True, timeout=120).stdout


def test_the_four_lists_equal_kafka_topics_in_every_state(lists_lab: dict[str, Any],
                                                          tmp_path: Any) -> None:
    bootstrap = lists_lab["bootstrap"]
    healthy = assert_same(bootstrap, "healthy")
    # at min ISR while healthy: RF 3 with min 3, RF 2 under the brokers' 2, RF 1 with min 1
    assert set(healthy["at_min_isr"]) == {"lists-strict-0", "lists-strict-1", "lists-move-0",
                                          "lists-single-0"}
    assert not healthy["under_replicated"] and healthy["verdict"] == "warning", json.dumps(healthy)

    kinspect("lab", "stop", "kafka3")
    down = assert_same(bootstrap, "kafka3 down")
    assert "lists-single-0" in down["unavailable"] and "lists-a-0" in down["at_min_isr"]
    assert down["verdict"] == "critical"

    kinspect("lab", "stop", "kafka2")
    one_left = assert_same(bootstrap, "one replica left")
    assert {"lists-a-0", "lists-a-1", "lists-a-2"} <= set(one_left["under_min_isr"])

    for node in ("kafka2", "kafka3"):
        kinspect("lab", "start", node, timeout=200)
    healed = assert_same(bootstrap, "healed")

    fill(bootstrap, "lists-move", 8)
    plan = tmp_path / "move.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "lists-move", "partition": 0, "replicas": [1, 3]}]}))
    reassign(bootstrap, str(plan), "--execute", "--throttle", "100000")
    try:
        moving = assert_same(bootstrap, "a throttled reassignment")
        rows = kafka_topics(bootstrap, topic="lists-move")
        assert rows[0]["adding"] == (3,) and rows[0]["removing"] == (2,), rows
        assert "lists-move-0" not in moving["under_replicated"]
        shown = {m["partition"]: m for m in moving["reassignments"]}
        assert shown["lists-move-0"]["adding"] == [3] and shown["lists-move-0"]["removing"] == [2]
        # the reassignment adds no problem of its own: the same verdict as before it started,
        # also when health watches it copy (a throttled copy grows in bursts, ~every 11 s)
        watched = kinspect_lists(watch_moves="15")
        assert [m["partition"] for m in watched["reassignments"]] == ["lists-move-0"], watched
        assert (watched["verdict"], watched["problems"]) == (healed["verdict"], healed["problems"])
        bare = kinspect_lists("--bootstrap", bootstrap)  # no ZooKeeper: ListPartitionReassignments
        assert [m["partition"] for m in bare["reassignments"]] == ["lists-move-0"], bare
        assert "lists-move-0" not in bare["under_replicated"]
        snapshot = json.loads(kinspect("snapshot", "--json", "--topic", "lists-move").stdout)
        part = snapshot["topics"][0]["partitions"][0]
        assert part["reassignment"] == {"replicas": part["replicas"], "adding": [3],
                                        "removing": [2]}
        brokers = {b["id"]: b for b in snapshot["brokers"]}
        assert brokers[3]["throttle"]["follower_rate"] == 100000, brokers[3]
    finally:  # the copy is lifted to full speed (--additional changes a running one's throttle)
        reassign(bootstrap, str(plan), "--execute", "--additional", "--throttle", "1000000000")
        wait_until(lambda: "in progress" not in reassign(bootstrap, str(plan), "--verify"), 240,
                   "the reassignment done (--verify also removes the throttle)")
    done = assert_same(bootstrap, "after the reassignment")
    assert not done["reassignments"]
