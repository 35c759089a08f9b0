"""On call against a KRaft cluster: `kinspect health` with a bare --bootstrap (as an engineer
would point it at a production cluster), judged against Kafka's own metadata-quorum tool."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from kinspect.lab import dist
from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, wait_until

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]


def health(bootstrap: str) -> tuple[int, dict[str, Any]]:
    proc = kinspect("health", "--json", "--timeout", "10", "--bootstrap", bootstrap, check=False)
    result = json.loads(proc.stdout)
    assert proc.returncode == result["exit_code"], proc.stdout
    return proc.returncode, result


def quorum_leader(controllers: str) -> int:
    """kafka-metadata-quorum describe --status, asked of the controllers."""
    kafka = dist.installed()
    assert kafka is not None
    out = subprocess.run(kafka.tool_command("org.apache.kafka.tools.MetadataQuorumCommand",
                                            "--bootstrap-controller", controllers, "describe",
                                            "--status"),
                         capture_output=True, text=True, timeout=120, check=True).stdout
    found = re.search(r"^LeaderId:\s+(\d+)", out, re.MULTILINE)
    assert found, out
    return int(found[1])


def test_health_on_kraft_names_the_quorum_leader_not_a_broker(kraft_lab: dict[str, Any]) -> None:
    bootstrap = kraft_lab["bootstrap"]
    create_topics(bootstrap, {"health-kraft": 3})
    code, result = health(bootstrap)
    assert (code, result["verdict"], result["mode"]) == (0, "healthy", "kraft"), result
    leader = quorum_leader(",".join(kraft_lab["controllers"].values()))
    # DescribeCluster names some broker as "controller" in KRaft; the quorum's leader is ctl1
    assert result["controller"]["id"] == leader == 101, result
    assert result["quorum"]["leader_id"] == 101 and result["quorum"]["voters"] == [101]
    assert result["zookeeper"] == "not watched"
    assert not any("ZooKeeper" in p for p in result["problems"])

    kinspect("lab", "kill", "kafka3")
    try:
        code, result = wait_until(lambda: (r := health(bootstrap))[0] != 0 and r, 60,
                                  "health to notice kafka3 gone")
        assert code == 1 and result["verdict"] == "warning", (result["unchecked"], result)
        assert any("under-replicated" in p for p in result["problems"]), result
    finally:
        kinspect("lab", "start", "kafka3")
    wait_until(lambda: health(bootstrap)[0] == 0, 90, "healthy again")
