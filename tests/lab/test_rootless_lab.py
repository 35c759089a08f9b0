"""A lab without root: a throwaway unprivileged user types the same commands as root and gets
real network faults, inside a user namespace kinspect holds (kinspect/lab/userns.py).

Every check is made from outside kinspect, by root entering the user's namespaces with
nsenter: ping for the slow link, a TCP connect for the partition, kcat for the metadata and
the final log, DuckDB and DumpLogSegments for the verdict."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kinspect, wait_until
from tests.helpers.attribution import check_blame
from tests.helpers.throwaway_user import ThrowawayUser, host_network_things

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.lab_lifecycle]


def in_lab(holder: int, *cmd: str) -> tuple[str, ...]:
    """A command run by root in the rootless lab's network and mounts (`ip netns` works)."""
    return ("nsenter", f"--target={holder}", "--net", "--mount", "--", *cmd)


def reaches(holder: int, from_node: str, address: str) -> bool:
    """A TCP connect from inside one node's namespace (root's own, not kinspect's)."""
    host, port = address.split(":")
    probe = f"timeout 3 bash -c '</dev/tcp/{host}/{port}'"
    return subprocess.run(in_lab(holder, "ip", "netns", "exec", f"ks1-{from_node}", "bash", "-c",
                                 probe), capture_output=True).returncode == 0


def ping(holder: int, host: str) -> tuple[float, float]:
    """(loss %, average RTT ms) of 60 large pings from the lab's client side, by ping itself."""
    out = subprocess.run(in_lab(holder, "ping", "-q", "-n", "-c", "60", "-i", "0.02", "-s",
                                "1400", "-W", "2", host), capture_output=True, text=True).stdout
    loss = float(out.split("% packet loss")[0].rsplit(" ", 1)[1])
    rtt = out.split("rtt min/avg/max/mdev = ")[1].split("/")[1] if "rtt" in out else "inf"
    return loss, float(rtt)


def brokers_in_metadata(holder: int, bootstrap: str) -> set[int]:
    out = subprocess.run(in_lab(holder, "kcat", "-b", bootstrap, "-L", "-J"),
                         capture_output=True, text=True, timeout=30).stdout
    return {b["id"] for b in json.loads(out)["brokers"]} if out else set()


def test_an_unprivileged_user_gets_real_network_faults(tmp_path: Path) -> None:
    kinspect("lab", "down", check=False)  # the session lab: one lab at a time
    before = host_network_things()
    with ThrowawayUser() as user:
        status = json.loads(user.kinspect("lab", "up", "--json").stdout)
        holder = status["rootless_holder"]
        assert holder and status["network"] == "netns" and status["network_faults"]
        # The lab's namespaces are the user's: not on the host, and its JVMs run as the user.
        names = subprocess.run(in_lab(holder, "ip", "netns", "list"), capture_output=True,
                               text=True).stdout
        assert {"ks1-zk1", "ks1-kafka1", "ks1-kafka2", "ks1-kafka3"} <= \
            {line.split()[0] for line in names.splitlines()}
        assert user.lab_processes(status["lab_id"]) and all(
            uid == user.uid for uid in user.lab_processes(status["lab_id"]).values())
        partition_drops_traffic(user, holder, status)
        slow_link_slows_and_drops(user, holder, status)
        kill_key_in_the_tui(user, holder, status)
        holder_death_takes_every_node(user)
    assert host_network_things() == before  # nothing of the lab was on the host


@pytest.mark.extended  # `make matrix`: CI runs the same scenario as root, and the lab above
def test_an_unprivileged_users_loss_experiment_is_counted_right() -> None:
    kinspect("lab", "down", check=False)
    before = host_network_things()
    with ThrowawayUser() as user:
        status = json.loads(user.kinspect("lab", "up", "--json").stdout)
        verdict_of_a_loss_experiment(user, status["rootless_holder"])
        holder_death_takes_every_node(user)
    assert host_network_things() == before


def partition_drops_traffic(user: ThrowawayUser, holder: int, status: dict[str, Any]) -> None:
    kafka1, kafka3 = (n["address"] for n in status["nodes"] if n["name"] in ("kafka1", "kafka3"))
    assert reaches(holder, "kafka2", kafka1)
    user.kinspect("lab", "partition", "kafka1", "kafka2,kafka3,zk1")
    assert not reaches(holder, "kafka2", kafka1) and reaches(holder, "kafka2", kafka3)
    user.kinspect("lab", "heal")
    assert reaches(holder, "kafka2", kafka1)


def slow_link_slows_and_drops(user: ThrowawayUser, holder: int,
                              status: dict[str, Any]) -> None:
    kafka2 = next(n["address"] for n in status["nodes"] if n["name"] == "kafka2")
    host = kafka2.split(":")[0]
    loss, rtt = ping(holder, host)
    assert loss == 0.0
    user.kinspect("lab", "slow", "kafka2", "--rate", "256kbit", "--loss", "30")
    slowed_loss, slowed_rtt = ping(holder, host)
    # 30 % each way; and a 1,428-byte packet takes 44.6 ms to pass 256 kbit/s each way.
    assert slowed_loss >= 10.0 and slowed_rtt >= 40.0, (slowed_loss, slowed_rtt, rtt)
    user.kinspect("lab", "unslow", "kafka2")
    assert ping(holder, host)[0] == 0.0


def kill_key_in_the_tui(user: ThrowawayUser, holder: int, status: dict[str, Any]) -> None:
    """The user's own tmux runs `kinspect ui`; the keys 3, k kill kafka3."""
    user.tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "36",
              f"env TERM=xterm-256color {user.command('ui', '--no-confirm')}")
    try:
        wait_until(lambda: "controller" in user.tmux("capture-pane", "-p", "-t", "ui"), 60,
                   "the TUI's first snapshot")
        time.sleep(1.0)  # keys typed while Textual switches the tty to raw mode are lost
        user.tmux("send-keys", "-t", "ui", "3")
        time.sleep(0.3)
        user.tmux("send-keys", "-t", "ui", "k")
        wait_until(lambda: brokers_in_metadata(holder, status["bootstrap"]) == {1, 2}, 60,
                   "kafka3 gone from the metadata kcat reads")
        wait_until(lambda: "killed" in user.tmux("capture-pane", "-p", "-t", "ui"), 30,
                   "the TUI to show kafka3 killed")
    finally:
        user.tmux("kill-server", check=False)
    user.kinspect("lab", "start", "kafka3")
    assert brokers_in_metadata(holder, status["bootstrap"]) == {1, 2, 3}


def verdict_of_a_loss_experiment(user: ThrowawayUser, holder: int) -> None:
    """The classic acks=1 isolated leader (CI's run of it on the process backend): the loss
    counted by kinspect, live and after, equals kcat + DuckDB's recount, and DumpLogSegments
    finds it in the isolated broker's kept segments."""
    run_dir = user.home / "runs" / "isolate"
    row = json.loads(user.kinspect("scenario", "run", "acks1-isolate-leader", "--json",
                                   "--keep-lab", "--run-dir", str(run_dir), timeout=600).stdout)
    assert row["expectation_met"] and row["acked_lost"] >= 1000, row
    assert row["live_lost"] == row["acked_lost"] and row["in_log"] < row["acked"], row
    assert row["failover_ms"] is not None and row["failover_ms"] > 0
    status = json.loads(user.kinspect("lab", "status", "--json").stdout)
    holder = status["rootless_holder"]
    check_blame(run_dir, row, status["bootstrap"], via=in_lab(holder))


def holder_death_takes_every_node(user: ThrowawayUser) -> None:
    """Kill the holder: the kernel ends every process in the namespace; the lab says so in
    one line and `lab down` tidies."""
    status = json.loads(user.kinspect("lab", "status", "--json").stdout)
    assert user.lab_processes(status["lab_id"])
    subprocess.run(["kill", "-KILL", str(status["rootless_holder"])], check=True)
    wait_until(lambda: not user.lab_processes(status["lab_id"]) or None, 30,
               "every JVM of the lab gone with its holder")
    gone = user.kinspect("lab", "status", check=False)
    assert gone.returncode == 2 and "namespace" in gone.stderr and "Traceback" not in gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1
    assert user.kinspect("lab", "down").returncode == 0
    assert user.kinspect("lab", "status", check=False).returncode == 2  # no lab at all
