"""docker/ stays in step with the lab: compose's configs are what the docker backend renders,
its addresses are the ones in those configs, and the image tag follows what goes into it."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from kinspect.lab import images
from kinspect.lab.dist import KafkaDist

DOCKER = Path(__file__).parents[2] / "docker"


def compose_configs() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("compose_configs", DOCKER / "compose_configs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.compose_configs())


def test_compose_properties_are_what_the_docker_backend_renders() -> None:
    for name, text in compose_configs().items():
        assert (DOCKER / "compose" / name).read_text() == text, (
            f"docker/compose/{name} is stale: run python docker/compose_configs.py")


def test_compose_services_use_the_addresses_in_their_configs() -> None:
    compose = (DOCKER / "docker-compose.yml").read_text()
    services = re.findall(r"^  (zk1|kafka\d):\n(.*?)(?=^  \S|^\S)", compose, re.M | re.S)
    assert [name for name, _ in services] == ["zk1", "kafka1", "kafka2", "kafka3"]
    for name, body in services:
        address = re.search(r"ipv4_address: ([\d.]+)", body)
        mount = re.search(r"\./compose/(\S+)\.properties:/kinspect/conf/(\w+)\.properties", body)
        assert address and mount and mount.group(1) == name
        config = (DOCKER / "compose" / f"{name}.properties").read_text()
        assert re.search(rf"(=|//){re.escape(address.group(1))}(:|\n)", config)
        assert mount.group(2) == ("zookeeper" if name == "zk1" else "broker")


def test_image_tag_changes_with_its_inputs(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-3.9.2.jar").write_bytes(b"")
    kafka = KafkaDist(home=tmp_path, version="3.9.2", java="java")
    first = images.kafka_tag(kafka)
    assert re.fullmatch(r"kinspect/kafka:3\.9\.2-[0-9a-f]{10}", first)
    assert images.kafka_tag(kafka) == first
    (libs / "zookeeper-3.8.4.jar").write_bytes(b"")
    assert images.kafka_tag(kafka) != first
