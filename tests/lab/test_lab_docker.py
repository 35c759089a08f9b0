"""What only the docker backend has to prove: it touches nothing that is not labelled as this
lab's, its fault rules outlive a killed JVM (as a namespace does), and broker logs come out of
the containers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from kinspect.lab import open_backend
from tests.helpers import kinspect
from tests.helpers.errors import one_line_error

pytestmark = [pytest.mark.lab, pytest.mark.backends("docker")]


def image_of(lab: dict[str, Any]) -> str:
    container = docker.from_env().containers.get(lab["nodes"][0]["container"])
    return str(container.image.tags[0])


def rules(lab: dict[str, Any], node: str) -> str:
    """iptables -S in the node's namespace container."""
    container = docker.from_env().containers.get(f"{_container(lab, node)}-net")
    return str(container.exec_run(["iptables", "-S"]).output.decode())


def _container(lab: dict[str, Any], node: str) -> str:
    return str(next(n["container"] for n in lab["nodes"] if n["name"] == node))


@pytest.fixture
def stranger(lab: dict[str, Any]) -> Iterator[Any]:
    """Someone else's container in kafka3's place: our name, even our node label, but another
    lab's id."""
    client = docker.from_env()
    name = _container(lab, "kafka3")
    client.containers.get(name).remove(force=True)
    foreign = client.containers.run(image_of(lab), ["sleep", "infinity"], name=name, detach=True,
                                    network_mode="none",
                                    labels={"kinspect.lab": "another-lab", "kinspect.node": "kafka3"})
    yield foreign
    foreign.remove(force=True)
    kinspect("lab", "down")  # kafka3 is gone for good: the next test gets a fresh lab


def test_a_stranger_with_our_name_is_refused_and_untouched(lab: dict[str, Any], stranger: Any
                                                            ) -> None:
    assert "not one of this lab's" in one_line_error(kinspect("lab", "start", "kafka3",
                                                               check=False))
    assert "cannot kill" in one_line_error(kinspect("lab", "kill", "kafka3", check=False))
    kinspect("lab", "isolate", "kafka3")  # rules go into our kafka3-net, never the stranger
    kinspect("lab", "heal")
    stranger.reload()
    assert stranger.status == "running"
    status = kinspect("lab", "status", "--json").stdout
    assert status.count('"running"') == 3  # zk1, kafka1, kafka2; kafka3's JVM is not ours to see


def test_up_faults_and_down_leave_foreign_containers_and_networks_alone(
        lab: dict[str, Any]) -> None:
    client = docker.from_env()
    network = client.networks.create(f"ks-{lab['lab_id'][:8]}x", labels={"owner": "someone-else"})
    look_alikes = [client.containers.run(image_of(lab), ["sleep", "infinity"], detach=True,
                                         name=f"{_container(lab, node)}-old", network_mode="none",
                                         labels={"kinspect.node": node})
                   for node in ("zk1", "kafka1")]
    try:
        kinspect("lab", "kill", "kafka1")
        kinspect("lab", "isolate", "kafka2")
        kinspect("lab", "heal")
        kinspect("lab", "start", "kafka1")
        kinspect("lab", "down")
        for container in look_alikes:
            container.reload()
            assert container.status == "running"
        assert client.networks.get(network.id).name == network.name
    finally:
        for container in look_alikes:
            container.remove(force=True)
        network.remove()


def test_fault_rules_outlive_a_killed_jvm(lab: dict[str, Any]) -> None:
    kinspect("lab", "isolate", "kafka2", "--from", "zk")
    zk = next(n["address"].split(":")[0] for n in lab["nodes"] if n["name"] == "zk1")
    assert f"-A KINSPECT-OUT -d {zk}/32 -j DROP" in rules(lab, "kafka2")
    kinspect("lab", "kill", "kafka2")
    kinspect("lab", "start", "kafka2")
    assert f"-A KINSPECT-OUT -d {zk}/32 -j DROP" in rules(lab, "kafka2")
    kinspect("lab", "heal")
    assert "DROP" not in rules(lab, "kafka2")


def test_broker_logs_come_out_of_the_container(lab: dict[str, Any]) -> None:
    folder = open_backend().broker_log_dir("kafka1")
    assert folder is not None
    server_log = folder / "server.log"
    assert "started (kafka.server.KafkaServer)" in server_log.read_text()


def test_the_other_backend_is_refused_while_a_docker_lab_runs(lab: dict[str, Any]) -> None:
    message = one_line_error(kinspect("lab", "up", "--backend", "process", check=False))
    assert "a docker lab is running" in message


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.resets_lab
@pytest.mark.extended  # CI's docker scenario: KRaft's zombie on 4.x (test_kafka4_scenarios_lab)
def test_a_whole_scenario_runs_unchanged_on_the_docker_lab(lab: dict[str, Any],
                                                           tmp_path: Path) -> None:
    """Reset (kept on docker), load with a ledger, isolate the leader, heal, verify, broker logs
    out of the containers, PySpark post-mortem: the acks=1 loss shows here as on processes."""
    from tests.helpers.attribution import check_blame
    from tests.helpers.scenario_runs import run

    row = run("acks1-isolate-leader", tmp_path)
    assert row["acked_lost"] > 0 and row["expectation_met"] is True, row
    assert kinspect("lab", "status", "--json").stdout.count('"backend": "docker"') == 1
    logs = sorted(p.name for p in (tmp_path / "broker-logs").iterdir())
    assert logs == ["kafka1", "kafka2", "kafka3", "zk1"]  # and ZooKeeper's own log
    assert (tmp_path / "broker-logs" / "kafka1" / "state-change.log").stat().st_size > 0
    # the isolated broker is blamed, as its segments (kept from the bind-mounted data) confirm
    check_blame(tmp_path, row, lab["bootstrap"])
