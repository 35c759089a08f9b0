"""A broker's disks as on-call meets them: sizes per broker and per replica, then one of a
broker's two log dirs filled until Kafka takes it offline. Each step is judged against Kafka's
own tools on the same lab: kafka-log-dirs --describe (sizes, dirs, the offline dir's error, the
partitions the dir held) and kafka-topics --describe (the ISRs the broker left; 3.9's
TopicCommand no longer prints the metadata's offline replicas)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kinspect.model.brokers import HostedReplica, Role, hosted_by
from kinspect.model.serialize import snapshot_from_json
from tests.helpers import kinspect, wait_until
from tests.helpers.lab import Lab
from tests.helpers.oracles import LOG_DIRS_COMMAND, TOPIC_COMMAND, kafka_tool, kafka_topics

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab]

TOPIC = "disks"
FULL_BROKER = 2


def log_dirs_by_kafka(bootstrap: str) -> dict[int, list[dict[str, Any]]]:
    """broker -> its log dirs as kafka-log-dirs --describe prints them (its JSON)."""
    out = kafka_tool(LOG_DIRS_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                     "--broker-list", "1,2,3")
    described = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    return {int(b["broker"]): b["logDirs"] for b in described["brokers"]}


def out_of_isr_by_kafka_topics(bootstrap: str, broker: int) -> set[str]:
    """The partitions of the topic whose ISR `broker` is not in, by kafka-topics --describe."""
    return {f"{TOPIC}-{r['partition']}" for r in kafka_topics(bootstrap, topic=TOPIC)
            if broker not in (r["isr"] or ())}


def broker_view_agrees(bootstrap: str, broker: int) -> dict[str, HostedReplica] | None:
    """The broker view's replicas when their roles and ISR membership are kafka-topics'."""
    hosted = {r.name: r for r in hosted_by(snapshot_from_json(snapshot()), broker)}
    rows = {f"{r['topic']}-{r['partition']}": r for r in kafka_topics(bootstrap)
            if broker in r["replicas"]}
    leads = {n for n, r in rows.items() if r["leader"] == broker}
    out = {n for n, r in rows.items() if broker not in (r["isr"] or ())}
    same = (set(hosted) == set(rows)
            and {n for n, r in hosted.items() if r.role is Role.LEADER} == leads
            and {n for n, r in hosted.items() if not r.in_isr} == out)
    return hosted if same else None


def snapshot() -> dict[str, Any]:
    return dict(json.loads(kinspect("snapshot", "--json").stdout))


def kinspect_dirs(snap: dict[str, Any]) -> dict[int, dict[str, dict[str, Any]]]:
    return {b["id"]: {d["path"]: d for d in b["log_dirs"]} for b in snap["brokers"]}


def produce(bootstrap: str, count: int) -> None:
    import subprocess

    lines = b"".join(b"%08d-" % i + b"x" * 500 + b"\n" for i in range(count))
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", TOPIC, "-X", "acks=all"],
                   input=lines, check=False, timeout=120)


def test_sizes_then_a_full_disk_as_kafka_says_them(lab_session: Lab, lab_backend: str) -> None:
    lab = lab_session.ensure_up(lab_backend, log_dirs=2)
    bootstrap = lab["bootstrap"]
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--create", "--topic", TOPIC,
               "--partitions", "4", "--replication-factor", "3",
               "--config", "min.insync.replicas=2")
    produce(bootstrap, 4000)

    # At rest, kinspect's sizes per replica and per dir are kafka-log-dirs' to the byte.
    by_kafka = log_dirs_by_kafka(bootstrap)
    snap = snapshot()
    ours = kinspect_dirs(snap)
    for broker, dirs in by_kafka.items():
        assert set(ours[broker]) == {d["logDir"] for d in dirs}
        for d in dirs:
            assert ours[broker][d["logDir"]]["size"] == sum(p["size"] for p in d["partitions"])
            assert ours[broker][d["logDir"]]["offline"] is False
    replica_sizes = {(f"{t['name']}-{p['partition']}", disk["broker"]): disk["size"]
                     for t in snap["topics"] for p in t["partitions"] for disk in p["disks"]}
    for broker, dirs in by_kafka.items():
        for d in dirs:
            for p in d["partitions"]:
                assert replica_sizes[(p["partition"], broker)] == p["size"], p
    full_dir = next(d["logDir"] for d in by_kafka[FULL_BROKER] if d["logDir"].endswith("data2"))
    on_dir = {p["partition"] for d in by_kafka[FULL_BROKER] if d["logDir"] == full_dir
              for p in d["partitions"]}  # the topic's, and any of __consumer_offsets
    on_full = {name for name in on_dir if name.startswith(TOPIC)}
    assert on_full, "no partition of the topic on the dir to fill"

    # The disk fills; the next write there fails and Kafka takes the dir offline.
    said = kinspect("lab", "fill-disk", f"kafka{FULL_BROKER}").stdout
    assert "filled" in said
    produce(bootstrap, 2000)

    def offline_seen() -> dict[str, Any] | None:
        dirs = kinspect_dirs(snapshot())[FULL_BROKER]
        return dirs if dirs[full_dir]["offline"] else None

    dirs = wait_until(offline_seen, 60, "kinspect to see the dir offline", interval=2)
    assert "KafkaStorage" in dirs[full_dir]["error"]
    kafka_dir = next(d for d in log_dirs_by_kafka(bootstrap)[FULL_BROKER]
                     if d["logDir"] == full_dir)
    assert "KafkaStorage" in (kafka_dir["error"] or ""), kafka_dir

    # The replicas it held are offline: exactly the partitions kafka-log-dirs had on that dir,
    # and the ones whose ISR the broker left, as kafka-topics says; and health pages.
    def offline_replicas_agree() -> dict[str, list[int]] | None:
        ours = {f"{TOPIC}-{p['partition']}": p["offline_replicas"]
                for t in snapshot()["topics"] if t["name"] == TOPIC for p in t["partitions"]
                if p["offline_replicas"]}
        out = out_of_isr_by_kafka_topics(bootstrap, FULL_BROKER)
        return ours if set(ours) == on_full == out else None

    told = wait_until(offline_replicas_agree, 60, "offline replicas where kafka-log-dirs and "
                      "kafka-topics put them", interval=2)
    assert all(v == [FULL_BROKER] for v in told.values()), told
    # The broker view (`b`) of that broker lists what kafka-topics says it hosts, leads and is
    # out of the ISR on, its offline replicas those on the failed dir.
    view = wait_until(lambda: broker_view_agrees(bootstrap, FULL_BROKER), 60,
                      "the broker view to list what kafka-topics says", interval=2)
    assert {n for n, r in view.items() if r.offline} == on_dir, view
    health = kinspect("health", "--json", check=False)
    assert health.returncode == 2, health.stdout
    problems = json.loads(health.stdout)["problems"]
    assert any(f"log dir offline on broker {FULL_BROKER}: {full_dir}" in p for p in problems)

    # Freed and restarted, the broker uses the dir again.
    kinspect("lab", "free-disk", f"kafka{FULL_BROKER}")
    kinspect("lab", "restart", f"kafka{FULL_BROKER}")
    wait_until(lambda: not kinspect_dirs(snapshot())[FULL_BROKER][full_dir]["offline"], 90,
               "the dir back online after a restart", interval=2)
    assert all(d["error"] is None for d in log_dirs_by_kafka(bootstrap)[FULL_BROKER])
