"""`lab up` means usable: a workshop script that creates a replication-factor-3 topic right
after `kinspect lab up` (or `lab restart`) must not meet "larger than available brokers" or
"Connection refused". Before the fix it failed in 3 of 5 tries on this machine."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import kinspect

pytestmark = [pytest.mark.lab, pytest.mark.lab_lifecycle]
TRIES = 6  # the race this guards against lost 3 of 5 tries


def create_rf3(bootstrap: str, topic: str) -> list[int]:
    """Create the topic at once, as a script would; each partition's replica count, as the
    brokers then describe it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic] \
        .result(timeout=30)
    # CreateTopics answers once the controller decided; the broker asked next may not have
    # heard yet (Kafka's own eventual metadata: CI once saw the topic with no partitions), so
    # the description is read as a script should, until the brokers know the topic.
    deadline = time.monotonic() + 15
    while True:
        described = admin.list_topics(topic, timeout=10).topics[topic].partitions
        if described or time.monotonic() > deadline:
            return [len(described[p].replicas) for p in sorted(described)]
        time.sleep(0.2)


@pytest.mark.extended  # six lab ups of its own; in CI every lab test makes topics right after its up
@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_rf3_topic_right_after_lab_up(lab_home: Path, mode: str) -> None:
    up_ten_times("process", mode)


@pytest.mark.extended
@pytest.mark.backends("docker")
@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_rf3_topic_right_after_docker_lab_up(lab_home: Path, lab_backend: str, mode: str) -> None:
    up_ten_times(lab_backend, mode)


def up_ten_times(backend: str, mode: str) -> None:
    kinspect("lab", "down", check=False)
    try:
        for attempt in range(TRIES):
            up = kinspect("lab", "up", "--backend", backend, "--mode", mode, "--json",
                          timeout=400)
            bootstrap = json.loads(up.stdout)["bootstrap"]
            assert create_rf3(bootstrap, f"usable-{attempt}") == [3, 3, 3], up.stderr
            if attempt == TRIES - 1:  # restart returns with the broker back for clients
                kinspect("lab", "restart", "kafka2")
                assert create_rf3(bootstrap, "usable-after-restart") == [3, 3, 3]
            kinspect("lab", "down")
    finally:
        kinspect("lab", "down", check=False)
