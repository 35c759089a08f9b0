"""kinspect behind Docker Desktop: the host has no route to the lab's network, so every command
runs in kinspect's own container on it (kinspect/cli/container_relay.py).

The host's route to the docker lab's network is taken away as Docker Desktop's host lacks it:
deleted, and an `unreachable` route put in its place (this machine's upstream gateway answers
any TCP connection itself, so a deleted route alone would still "connect"; a Mac has nothing
there). Each test puts the route back, whatever happens. The commands are the real CLI, as a
user types them; what they report is checked against tools that are not kinspect: Kafka's own
TopicCommand in a broker's container, `docker inspect`, kcat in a node's network namespace and
DuckDB over the ledger.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinspect.lab.topics import create_topics
from tests.helpers import kinspect, wait_until
from tests.helpers.oracles import TOPIC_COMMAND, duckdb_recount, kcat_ids, topic_line

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.backends("docker")]
RELAYED = "running this command in kinspect's container"
TMUX = "kinspect-relay-test"
TOPIC = "relay1"


def docker(*args: str) -> str:
    return str(subprocess.run(["docker", *args], capture_output=True, text=True, check=True,
                              timeout=60).stdout).strip()


def subnet_of(status: dict[str, Any]) -> str:
    return str(status["nodes"][0]["address"]).rsplit(".", 1)[0] + ".0/24"


def bridge_of(status: dict[str, Any]) -> str:
    """The Linux bridge of the lab's docker network (br-<first 12 of its id>)."""
    network_id = docker("network", "ls", "-q", "--no-trunc", "--filter",
                        f"label=kinspect.lab={status['lab_id']}")
    return f"br-{network_id.splitlines()[0][:12]}"


def ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def unreachable(lab: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The running lab with the host's route to its network taken away; restored after."""
    if os.geteuid() != 0:
        pytest.skip("taking a route away needs root")
    create_topics(lab["bootstrap"], {TOPIC: 3})  # test_snapshot's, while the host reaches it
    subnet, bridge = subnet_of(lab), bridge_of(lab)
    gateway = subnet.replace(".0/24", ".1")
    ip("route", "del", subnet, "dev", bridge)
    try:
        ip("route", "add", "unreachable", subnet)
        broker = lab["nodes"][1]["address"].split(":")
        with pytest.raises(OSError), socket.create_connection((broker[0], int(broker[1])), 2):
            pass  # the oracle: the host really cannot reach a broker
        yield lab
    finally:
        ip("route", "del", "unreachable", subnet, check=False)
        if Path(f"/sys/class/net/{bridge}").exists():  # a scenario's reset made a new one
            ip("route", "replace", subnet, "dev", bridge, "proto", "kernel", "scope", "link",
               "src", gateway, check=False)


def relayed(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = kinspect(*args, timeout=timeout)
    assert RELAYED in proc.stderr, proc.stderr
    return proc


def no_relay_left() -> None:
    assert docker("ps", "-aq", "--filter", "label=kinspect.relay") == ""


def test_snapshot_through_the_relay(unreachable: dict[str, Any]) -> None:
    started = time.monotonic()
    snapshot = json.loads(relayed("snapshot", "--json", "--topic", TOPIC).stdout)
    took = time.monotonic() - started
    seen = {p["partition"]: (p["leader"], sorted(p["replicas"]), sorted(p["isr"]))
            for t in snapshot["topics"] if t["name"] == TOPIC for p in t["partitions"]}
    kafka1 = unreachable["nodes"][1]
    out = docker("exec", kafka1["container"], "java", "-cp", "/opt/kafka/libs/*",
                 "-Dlog4j.configuration=file:/kinspect/conf/tools-log4j.properties",
                 TOPIC_COMMAND, "--bootstrap-server", kafka1["address"], "--describe",
                 "--topic", TOPIC)
    described = {row["partition"]: (row["leader"], sorted(row["replicas"]), sorted(row["isr"]))
                 for row in map(topic_line, out.splitlines()) if row is not None}
    assert described and seen == described, (seen, out)
    no_relay_left()
    print(f"relayed snapshot: {took:.1f} s")


def tmux(*args: str) -> str:
    return str(subprocess.run(["tmux", "-L", TMUX, *args], capture_output=True, text=True,
                              check=True).stdout)


def test_tui_keys_through_the_relay(unreachable: dict[str, Any]) -> None:
    """The TUI in the same terminal (a tmux pane), its kill key killing a broker's container."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (make system-deps installs it)")
    kafka2 = next(n for n in unreachable["nodes"] if n["name"] == "kafka2")
    started = time.monotonic()
    tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "36", "-c", os.getcwd(),
         f"env -u COLUMNS -u LINES KINSPECT_HOME={os.environ['KINSPECT_HOME']} "
         f"TERM=xterm-256color KINSPECT_WARM_ENGINE=0 {sys.executable} -m kinspect ui "
         "--no-confirm; sleep 60")
    try:
        def screen() -> str:
            return tmux("capture-pane", "-p", "-t", "ui")

        wait_until(lambda: "198.19." in screen() and "partitions" in screen(), 90,
                   "the relayed TUI to draw the lab's brokers")
        drawn = time.monotonic() - started
        time.sleep(1)  # keys sent before Textual's raw mode are lost
        tmux("send-keys", "-t", "ui", "2")
        time.sleep(0.5)
        tmux("send-keys", "-t", "ui", "k")
        wait_until(lambda: docker("inspect", "-f", "{{.State.Status}}",
                                  kafka2["container"]) == "exited", 20,
                   "kafka2's container to be killed by the k key")
        wait_until(lambda: "killed" in screen(), 20, "the screen to show kafka2 killed")
        tmux("send-keys", "-t", "ui", "q")
        wait_until(lambda: docker("ps", "-aq", "--filter", "label=kinspect.relay") == "", 20,
                   "the relay container to go with the TUI")
    finally:
        subprocess.run(["tmux", "-L", TMUX, "kill-server"], capture_output=True)
    print(f"relayed TUI: drawn in {drawn:.1f} s, whole test {time.monotonic() - started:.1f} s")


def net_namespace(status: dict[str, Any], node: str) -> tuple[str, ...]:
    """nsenter into a node's network namespace (its `-net` container), for kcat."""
    container = next(n["container"] for n in status["nodes"] if n["name"] == node)
    pid = docker("inspect", "-f", "{{.State.Pid}}", f"{container}-net")
    return ("nsenter", "-t", pid, "-n")


@pytest.mark.extended  # ~70 s: `make matrix` runs it; CI runs the snapshot and the TUI
@pytest.mark.resets_lab
def test_scenario_through_the_relay(unreachable: dict[str, Any], tmp_path: Path,
                                    lab_session: Any) -> None:
    """acks=1 with the leader isolated, the producer in the relay container: the clients' side
    of the partition holds the relay's addresses, so the loss is the 2018 lesson's, and the
    report lands in the user's folder."""
    run_dir = tmp_path / "run"
    started = time.monotonic()
    row = json.loads(relayed("scenario", "run", "acks1-isolate-leader", "--json",
                             "--keep-lab", "--run-dir", str(run_dir), timeout=600).stdout)
    took = time.monotonic() - started
    assert row["acked_lost"] >= 1000 and row["expectation_met"] is True, row
    report = json.loads((run_dir / "postmortem" / "report.json").read_text())
    assert (run_dir / "postmortem" / "report.json").stat().st_uid == os.geteuid()
    status = lab_session.status()
    in_log = kcat_ids(status["bootstrap"], report["topic"], report["run_id"],
                      via=net_namespace(status, "kafka1"))
    recount = duckdb_recount(run_dir, in_log)
    assert (recount["acked"], recount["acked_lost"], recount["in_log"]) == (
        row["acked"], row["acked_lost"], row["in_log"]), (recount, row)
    no_relay_left()
    print(f"relayed scenario: {took:.1f} s")
