"""Write docker/compose/*.properties: the demo preset as the docker backend renders it.

    python docker/compose_configs.py      (tests/lab/test_docker_folder.py checks they are current)
"""

from __future__ import annotations

from pathlib import Path

from kinspect.lab import presets
from kinspect.lab.backend import plan_nodes
from kinspect.lab.nodes import render_broker, render_zookeeper
from kinspect.lab.state import LabState

SUBNET = "198.19.239"  # the compose lab's own /24 (docker labs take 198.19.1-238)
FOLDER = Path(__file__).parent / "compose"
DATA = Path("/kinspect/data")


def compose_configs() -> dict[str, str]:
    """File name → content for zk1 and kafka1..3, as `lab up --backend docker` would write them."""
    nodes = plan_nodes(3, lambda index, name: (f"{SUBNET}.{10 + index}", 2181 if index == 0 else 9092))
    state = LabState(lab_id="compose", backend="docker", preset="demo", network="docker",
                     kafka_version="", broker_config=presets.effective("demo", {}), overrides={},
                     nodes=nodes, created_at=0)
    return {f"{node.name}.properties": render_zookeeper(node, DATA) if node.role == "zookeeper"
            else render_broker(node, state, DATA) for node in nodes}


if __name__ == "__main__":
    FOLDER.mkdir(exist_ok=True)
    for name, text in compose_configs().items():
        (FOLDER / name).write_text(text)
        print(f"wrote {FOLDER / name}")
