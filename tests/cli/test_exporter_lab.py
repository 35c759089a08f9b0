"""`kinspect exporter` scraped during a leader kill on the lab, its text read with
prometheus_client's own parser: the partition's flags and the event counters move, and the
under-replicated partitions it exports are the ones kafka-topics --describe
--under-replicated-partitions lists."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, wait_until
from tests.helpers.oracles import flagged_by_kafka_topics, kafka_topics

pytestmark = [pytest.mark.lab, pytest.mark.slow]

TOPIC = "exported"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    except OSError:
        return {}
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text.decode()) for s in f.samples}


def flagged(samples: dict[Any, float], flag: str) -> set[str]:
    return {f"{dict(labels)['topic']}-{dict(labels)['partition']}"
            for (name, labels), value in samples.items()
            if name == f"kinspect_partition_{flag}" and value == 1}


def has_topic(samples: dict[Any, float]) -> bool:
    return any(name == "kinspect_partition_isr_replicas" and dict(labels).get("topic") == TOPIC
               for name, labels in samples)


def counters(samples: dict[Any, float]) -> dict[str, float]:
    return {name: samples.get((f"kinspect_{name}_total", frozenset()), 0.0)
            for name in ("leader_changes", "isr_shrinks")}


def test_a_scrape_during_a_leader_kill(lab: dict[str, Any]) -> None:
    bootstrap = lab["bootstrap"]
    create_topics(bootstrap, {TOPIC: 1}, 3)
    port = free_port()
    exporter = subprocess.Popen([sys.executable, "-m", "kinspect", "exporter", "--port",
                                 str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    leader = None
    try:
        # kinspect_up is 0 until the brokers answered a poll (ZooKeeper's view may come first)
        before = wait_until(lambda: (s := scrape(port)) and has_topic(s)
                            and s.get(("kinspect_up", frozenset())) == 1 and s, 60,
                            "the exporter's snapshot with the topic, the brokers answering",
                            interval=0.5)
        assert TOPIC + "-0" not in flagged(before, "under_replicated")
        leader = next(r["leader"] for r in kafka_topics(bootstrap, topic=TOPIC))
        kinspect("lab", "kill", f"kafka{leader}")
        seen: list[str] = []  # what each scrape said, for the message if this never happens

        def moved() -> dict[Any, float] | None:
            s = scrape(port)
            seen.append(f"{sorted(flagged(s, 'under_replicated'))} {counters(s)}")
            return s if (f"{TOPIC}-0" in flagged(s, "under_replicated")
                         and counters(s)["leader_changes"] > counters(before)["leader_changes"]
                         and counters(s)["isr_shrinks"] >= 1) else None

        try:
            wait_until(moved, 60, "the partition under-replicated and its leader change "
                       "counted", interval=0.5)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; killed kafka{leader}; kafka-topics now says "
                                 f"{kafka_topics(bootstrap, topic=TOPIC)}; the scrapes: "
                                 + "; ".join(seen[-10:])) from None
        # Every ISR the dead broker was in shrinks within replica.lag.time.max.ms, one by one:
        # the two views are compared until the cluster settles, each a moment apart.
        def agree() -> set[str] | None:
            told = flagged_by_kafka_topics(bootstrap, ("--under-replicated-partitions",))
            ours = flagged(scrape(port), "under_replicated")
            return ours if ours == told["--under-replicated-partitions"] else None

        assert f"{TOPIC}-0" in wait_until(agree, 90, "the exported under-replicated "
                                          "partitions to be kafka-topics'", interval=1)
    finally:
        exporter.terminate()
        exporter.wait(timeout=30)
        if leader is not None:
            kinspect("lab", "start", f"kafka{leader}", check=False)
