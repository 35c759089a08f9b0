"""`lab up --feature` / `[lab] features`: the levels kinspect formats a KRaft quorum with,
read back by Kafka's own DumpLogSegments from the bootstrap checkpoint `kafka-storage format`
wrote (a level of 0 is no record at all: the feature off)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinspect.lab import dist
from kinspect.lab.nodes import format_storage, new_cluster_id
from tests.helpers.oracles import kafka_tool

pytestmark = [pytest.mark.slow]
ELR = "eligible.leader.replicas.version"


def formatted_levels(tmp_path: Path, features: dict[str, int] | None) -> dict[str, int]:
    data = tmp_path / "data"
    tmp_path.mkdir(parents=True)
    config = tmp_path / "controller.properties"
    config.write_text("process.roles=controller\nnode.id=101\n"
                      "controller.quorum.voters=101@127.0.0.1:9093\n"
                      "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:9093\n"
                      f"log.dirs={data}\n")
    kafka = dist.ensure(version="4")
    format_storage(kafka, config, data, new_cluster_id(), features)
    checkpoints = sorted((data / "__cluster_metadata-0").glob("*.checkpoint"))
    out = kafka_tool(kafka.dump_log_segments, "--cluster-metadata-decoder", "--files",
                     ",".join(map(str, checkpoints)), kafka="4")
    records = [json.loads(line.split("payload: ", 1)[1]) for line in out.splitlines()
               if "payload: {" in line]
    return {r["data"]["name"]: r["data"]["featureLevel"] for r in records
            if r["type"] == "FEATURE_LEVEL_RECORD"}


def test_a_feature_level_is_formatted_in_and_the_default_is_the_releases(tmp_path: Path) -> None:
    assert formatted_levels(tmp_path / "default", None)[ELR] == 1  # 4.1+: ELR on when new
    off = formatted_levels(tmp_path / "off", {ELR: 0})
    assert ELR not in off and "metadata.version" in off
