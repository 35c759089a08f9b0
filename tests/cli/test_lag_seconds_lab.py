"""A consumer group stopped for a known time, on the lab: kinspect's lag in seconds is the age of
the record at its committed offset, whose timestamp kcat reads; its lag in records is what
kafka-consumer-groups --describe says; records deleted under it (kafka-delete-records, as
retention would) are counted; health --max-lag-seconds judges it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab import dist
from kinspect.lab.dist import CONSUMER_GROUPS
from tests.helpers import kinspect
from tests.helpers.oracles import TOPIC_COMMAND, group_offsets, kafka_tool

pytestmark = [pytest.mark.lab, pytest.mark.slow]

TOPIC, GROUP = "lag-seconds", "stopped-consumer"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"


def produce(bootstrap: str, count: int) -> None:
    lines = b"".join(b"record-%d\n" % i for i in range(count))
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", TOPIC, "-p", "0"], input=lines,
                   check=True, timeout=60)


def kcat_timestamp(bootstrap: str, offset: int) -> int:
    out = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", TOPIC, "-p", "0", "-o",
                          str(offset), "-c", "1", "-f", "%T"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return int(out.strip())


def group_of(snapshot: dict[str, Any]) -> dict[str, Any]:
    return next(g for g in snapshot["groups"] if g["group"] == GROUP)


def test_a_stopped_groups_lag_in_seconds_and_what_retention_took(
        lab: dict[str, Any], tmp_path: Path) -> None:
    bootstrap = lab["bootstrap"]
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--create", "--if-not-exists",
               "--topic", TOPIC, "--partitions", "1", "--replication-factor", "3")
    produce(bootstrap, 50)
    time.sleep(2)
    produce(bootstrap, 50)  # offsets 50..99, two seconds younger
    tool = dist.ensure().tool_command(CONSUMER_GROUPS, "--bootstrap-server", bootstrap,
                                      "--group", GROUP, "--topic", TOPIC, "--reset-offsets",
                                      "--to-offset", "50", "--execute")
    subprocess.run(tool, check=True, capture_output=True, timeout=120)
    assert group_offsets(bootstrap, GROUP) == {0: 50}
    stopped_at = kcat_timestamp(bootstrap, 50)

    def seen() -> dict[str, Any] | None:
        snapshot = json.loads(kinspect("snapshot", "--json", "--topic", TOPIC).stdout)
        group = group_of(snapshot)
        return snapshot if group["lag_seconds"] is not None else None

    from tests.helpers import wait_until

    snapshot = wait_until(seen, 60, "the group's lag in seconds", interval=1)
    group = group_of(snapshot)
    part = group["partitions"][0]
    assert part["next_timestamp"] == stopped_at  # the record at its offset, as kcat reads it
    assert (part["lag"], group["lag"]) == (50, 50)
    assert group["lag_seconds"] == pytest.approx((snapshot["taken_at"] - stopped_at) / 1000)
    assert group["lag_seconds"] >= 0 and group["lag_seconds_complete"] is True

    judged = kinspect("health", "--json", "--max-lag-seconds", "0.5", check=False)
    problems = json.loads(judged.stdout)["problems"]
    assert judged.returncode >= 1
    assert any(p.startswith(f"consumer group {GROUP} is ") for p in problems), problems
    relaxed = json.loads(kinspect("health", "--json", "--max-lag-seconds", "86400",
                                  check=False).stdout)["problems"]
    assert not any(GROUP in p for p in relaxed), relaxed

    # Records deleted under the group (as retention would): counted, and a warning.
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "offset": 60}]}))
    kafka_tool(DELETE_RECORDS, "--bootstrap-server", bootstrap, "--offset-json-file", str(plan))
    after = json.loads(kinspect("snapshot", "--json", "--topic", TOPIC).stdout)
    assert group_of(after)["partitions"][0]["deleted_unconsumed"] == 10
    warned = json.loads(kinspect("health", "--json", "--max-lag-seconds", "86400",
                                 check=False).stdout)["problems"]
    assert f"consumer group {GROUP} on {TOPIC}-0: retention deleted 10 records it had not " \
        "consumed" in warned
