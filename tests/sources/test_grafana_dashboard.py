"""The Grafana dashboard shipped for the exporter (monitoring/kinspect.grafana.json): every metric
its panels' queries name is one `kinspect exporter` really serves on the lab (a scrape of it),
and Debian's Prometheus, scraping that exporter, evaluates every query without an error and
with a non-empty result (the test makes a topic and a group: every panel has series).
Loopback only; all torn down."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from kinspect.lab.topics import create_topics
from tests.helpers import wait_until

pytestmark = [pytest.mark.lab, pytest.mark.slow]

DASHBOARD = Path(__file__).parents[2] / "monitoring" / "kinspect.grafana.json"
# An identifier followed by `{`, `[`, `(`-less space or the end: a metric, a function or a keyword
NAME = re.compile(r"(?<![\w\"'{=~])([a-zA-Z_:][\w:]*)\s*(?=[{\[\s)]|$)")
LABELS = re.compile(r"\{[^}]*\}|\b(?:by|without|on|ignoring)\s*\([^)]*\)")
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group", "by", "without", "on", "ignoring", "group_left", "group_right",
    "and", "or", "unless", "bool", "offset", "rate", "irate", "increase", "delta", "idelta",
    "abs", "absent", "clamp_min", "clamp_max", "label_replace", "vector", "scalar", "time",
    "max_over_time", "min_over_time", "avg_over_time", "changes", "resets", "sort", "sort_desc",
}
PROMETHEUS_OWN = {"up"}  # made by Prometheus for each scrape target, not by the exporter
TOPIC = "dashboard"


def queries() -> list[tuple[str, str]]:
    """(panel title, expr) for every target of every panel."""
    board = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]]


def metric_names(expr: str) -> set[str]:
    bare = LABELS.sub(" ", expr)  # label matchers and by (...) lists hold label names, not metrics
    return {m for m in NAME.findall(bare) if m not in PROMQL_WORDS}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> str | None:
    try:
        return str(urllib.request.urlopen(url, timeout=5).read().decode())
    except OSError:
        return None


def test_the_dashboard_is_grafana_json_with_a_datasource_input() -> None:
    board = json.loads(DASHBOARD.read_text())
    assert board["schemaVersion"] == 39
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
        assert panel["targets"], panel["title"]
    assert metric_names('sum by (topic) (kinspect_partition_offline{topic="a b"} == 1)') == {
        "kinspect_partition_offline"}


@pytest.fixture
def exporter(lab: dict[str, Any]) -> Iterator[int]:
    """`kinspect exporter` on the lab, on a loopback port, once the brokers answered a poll and
    its snapshot holds TOPIC and a group committed on it (the partition and the group gauges
    have a series for each: none without)."""
    create_topics(lab["bootstrap"], {TOPIC: 1}, 3)
    group = Consumer({"bootstrap.servers": lab["bootstrap"], "group.id": TOPIC})
    group.commit(offsets=[TopicPartition(TOPIC, 0, 0)], asynchronous=False)  # a group, for lag
    group.close()
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "kinspect", "exporter", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: (text := get(f"http://127.0.0.1:{port}/metrics"))
                   and "\nkinspect_up 1.0" in text and f'group="{TOPIC}"' in text, 60,
                   "the exporter's brokers answering and its snapshot holding the topic",
                   interval=0.5)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def prometheus(exporter: int, tmp_path: Path) -> Iterator[str]:
    """Debian's Prometheus scraping the exporter every second, on loopback; its API's base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus not found: `make system-deps` installs Debian's prometheus package")
    config = tmp_path / "prometheus.yml"
    config.write_text(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kinspect\n"
                      f"    static_configs:\n      - targets: ['127.0.0.1:{exporter}']\n")
    port = free_port()
    process = subprocess.Popen([binary, f"--config.file={config}",
                                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                f"--web.listen-address=127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)


def query(base: str, expr: str) -> dict[str, Any]:
    text = get(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    assert text is not None, f"Prometheus did not answer {expr!r}"
    answer: dict[str, Any] = json.loads(text)
    return answer


def test_every_panel_query_names_served_metrics_and_prometheus_evaluates_it(
        exporter: int, prometheus: str) -> None:
    """One exporter for both (the lab fixture is per test): the scrape's names, then the API."""
    text = get(f"http://127.0.0.1:{exporter}/metrics")
    assert text is not None
    served = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    for title, expr in queries():
        names = metric_names(expr)
        assert names, f"{title}: no metric found in {expr!r}"
        assert names - PROMETHEUS_OWN <= served, f"{title}: {sorted(names - served)} not served"
    wait_until(lambda: (get(f"{prometheus}/-/ready") is not None
                        and query(prometheus, 'kinspect_up{job="kinspect"} == 1')["data"]["result"]),
               60, "Prometheus to have scraped the exporter", interval=0.5)
    for title, expr in queries():
        answer = query(prometheus, expr)
        assert answer["status"] == "success", f"{title}: {expr!r}: {answer}"
        assert answer["data"]["result"], f"{title}: {expr!r} is empty on the lab"
