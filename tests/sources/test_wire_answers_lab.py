"""What kinspect asks brokers directly (reassignments, ELR, log dirs), judged against Kafka's own
tools on a real lab: kafka-topics --describe (TopicCommand) and kafka-log-dirs --describe, of the
same Kafka release as the lab. One ZooKeeper lab (3.9) and one KRaft 4.x lab."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kinspect.clients.log_dirs import ask_log_dirs
from kinspect.clients.reassignments import ask_reassignments
from kinspect.clients.topic_partitions import ask_eligible_leaders
from kinspect.clients.wire import BrokerLink, ask_claims
from kinspect.lab.topics import create_topics
from kinspect.model.facts import Unknown
from kinspect.model.views import EligibleLeaders, Reassignment
from tests.helpers import kinspect, wait_until
from tests.helpers.oracles import (
    REASSIGN_COMMAND,
    TOPIC_COMMAND,
    kafka_log_dirs,
    kafka_tool,
    kafka_topics,
)

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]

TIMEOUT_S = 5.0
THROTTLE = "300000"  # bytes/s: ~6 MB to copy takes ~20 s


def links_of(status: dict[str, Any]) -> dict[int, BrokerLink]:
    return {n["broker_id"]: BrokerLink(n["address"], broker_id=n["broker_id"])
            for n in status["nodes"] if n["role"] == "broker"}


def moving_by_kafka_topics(bootstrap: str, topic: str) -> dict[tuple[str, int], Reassignment]:
    return {(r["topic"], r["partition"]): Reassignment(r["replicas"], r["adding"], r["removing"])
            for r in kafka_topics(bootstrap, topic=topic) if r["adding"] or r["removing"]}


def produce(bootstrap: str, topic: str, count: int, size: int) -> None:
    lines = b"".join(b"%08d-" % i + b"x" * size + b"\n" for i in range(count))
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-X", "linger.ms=50"],
                   input=lines, check=True, timeout=120)


def assert_log_dirs_match(status: dict[str, Any], kafka: str | None) -> None:
    """Each broker's DescribeLogDirs lists every partition kafka-log-dirs --describe says it
    holds, in the same dir."""
    links = links_of(status)
    told = kafka_log_dirs(status["bootstrap"], sorted(links), kafka=kafka)
    assert any(told.values()), told
    for broker, link in links.items():
        answer = ask_log_dirs(link, TIMEOUT_S)
        assert not isinstance(answer, Unknown), answer
        assert set(answer.replicas) == set(told[broker]), broker
        assert {k: r.log_dir for k, r in answer.replicas.items()} == \
            {k: r["log_dir"] for k, r in told[broker].items()}
        assert all(r.broker == broker and r.size >= 0 for r in answer.replicas.values())
        link.close()


def test_a_throttled_reassignment_as_the_controller_and_kafka_topics_say_it(
        lab: dict[str, Any], tmp_path: Path) -> None:
    bootstrap, topic = lab["bootstrap"], "wire-moving"
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--create", "--if-not-exists",
               "--topic", topic, "--replica-assignment", "1:2")
    produce(bootstrap, topic, 6000, 1000)
    links = links_of(lab)
    controller = ask_claims(links[1], TIMEOUT_S).controller_id
    other = next(b for b in links if b != controller)
    plan = tmp_path / "move.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 3]}]}))
    reassign = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    kafka_tool(REASSIGN_COMMAND, *reassign, "--execute", "--throttle", THROTTLE)
    try:
        during = ask_reassignments(links[controller], TIMEOUT_S)
        told = moving_by_kafka_topics(bootstrap, topic)
        assert during == told == {(topic, 0): Reassignment((2, 3, 1), (3,), (1,))}, (during, told)
        refused = ask_reassignments(links[other], TIMEOUT_S)
        assert isinstance(refused, Unknown) and "is not the controller" in refused.reason
    finally:  # --verify also lifts the throttle once the move is done
        wait_until(lambda: "is completed" in kafka_tool(REASSIGN_COMMAND, *reassign, "--verify",
                                                        check=False),
                   120, "the reassignment to complete", interval=2)
    assert ask_reassignments(links[controller], TIMEOUT_S) == {}
    assert moving_by_kafka_topics(bootstrap, topic) == {}
    assert_log_dirs_match(lab, None)
    for link in links.values():
        link.close()


def elr_by_kafka_topics(bootstrap: str, topic: str) -> dict[tuple[str, int], Any]:
    return {(r["topic"], r["partition"]): EligibleLeaders(tuple(sorted(r["elr"])),
                                                          tuple(sorted(r["last_known_elr"])))
            for r in kafka_topics(bootstrap, topic=topic, kafka="4")}


def kinspect_elr(topic: str, eligible: int) -> dict[str, Any] | None:
    """kinspect's own CLI on the lab: snapshot --json's elr of partition 0 and health's
    explanation, when the snapshot says what kafka-topics said."""
    snapshot = json.loads(kinspect("snapshot", "--json", "--topic", topic).stdout)
    part = snapshot["topics"][0]["partitions"][0]
    if part["elr"] != {"eligible": [eligible], "last_known": []}:
        return None
    report = json.loads(kinspect("health", "--json", check=False).stdout)
    return report["elr"].get(f"{topic}-0")


def test_eligible_leaders_on_kafka_4_as_kafka_topics_says_them(
        kraft4_lab: dict[str, Any]) -> None:
    bootstrap, topic = kraft4_lab["bootstrap"], "wire-elr"
    create_topics(bootstrap, {topic: 2}, 3, {"min.insync.replicas": "2"})
    links = links_of(kraft4_lab)
    assert_log_dirs_match(kraft4_lab, "4")
    leader = wait_until(lambda: (c := ask_claims(links[1], TIMEOUT_S).partitions.get((topic, 0)))
                        and c.leader, 30, "a leader for the new topic")
    followers = [b for b in sorted(links) if b != leader]
    stopped = []

    def agree(asked: int) -> dict[tuple[str, int], Any] | None:
        answer = ask_eligible_leaders(links[asked], [topic], TIMEOUT_S)
        told = elr_by_kafka_topics(bootstrap, topic)
        return answer if answer == told else None

    try:
        for broker in followers:  # the second one leaves the ISR below min.insync: into the ELR
            kinspect("lab", "kill", f"kafka{broker}")
            stopped.append(broker)
            wait_until(lambda: all(broker not in r["isr"]  # noqa: B023 (called in this turn)
                                   for r in kafka_topics(bootstrap, topic=topic, kafka="4")),
                       60, f"broker {broker} out of the ISR", interval=1)
        answer = wait_until(lambda: (a := agree(leader)) and
                            a[(topic, 0)] == EligibleLeaders((followers[1],), ()) and a,
                            60, "the last follower in the ELR", interval=1)
        assert len(answer) == 2
        seen = wait_until(lambda: kinspect_elr(topic, followers[1]), 30,
                          "kinspect's snapshot and health showing the same ELR", interval=1)
        assert "can still be elected cleanly" in seen["explained"], seen
        kinspect("lab", "kill", f"kafka{leader}")  # the ISR empties: the leader joins the ELR
        stopped.append(leader)
        kinspect("lab", "start", f"kafka{followers[0]}")
        stopped.remove(followers[0])
        back = wait_until(lambda: (a := agree(followers[0])) and
                          a[(topic, 0)].last_known and a, 90,
                          "an empty ISR with a last known ELR", interval=1)
        assert back[(topic, 0)] == EligibleLeaders(tuple(sorted((leader, followers[1]))),
                                                   (leader,)), back
    finally:
        for broker in stopped:
            kinspect("lab", "start", f"kafka{broker}")
        for link in links.values():
            link.close()
