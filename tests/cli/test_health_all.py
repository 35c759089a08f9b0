"""`kinspect health --all`: every profile at once, one line each, the worst exit code. Against
real processes: clusters that refuse the connection, a profile that cannot be read, and the
lab itself beside them (lab-marked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinspect.cli.health_all import ClusterVerdict, worst
from tests.helpers import kinspect, wait_until

PROFILES = """
[clusters.down]
bootstrap = "127.0.0.1:1"

[clusters.broken]
zookeeper = "127.0.0.1:2181"

[clusters.down-too]
bootstrap = "127.0.0.1:2"
"""


def test_the_worst_code_is_what_pages_first() -> None:
    assert worst([0, 1, 3, 2]) == 2
    assert worst([0, 1, 3]) == 3
    assert worst([0, 1]) == 1
    assert worst([]) == 0
    line = ClusterVerdict("prod", "critical", 2, ("1 partition offline: a-0", "x", "y")).line
    assert line == "CRITICAL    prod: 1 partition offline: a-0 (+2 more)"


def test_every_profile_gets_a_line_and_the_worst_code(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(PROFILES)
    done = kinspect("health", "--all", "--config", str(config), "--timeout", "1", check=False)
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[1].rstrip(":") for line in lines] == ["down", "broken", "down-too"]
    assert lines[0].startswith("UNREACHABLE down: no broker answered")
    assert "bootstrap is required" in lines[1] and lines[1].startswith("UNKNOWN")
    as_json = json.loads(kinspect("health", "--all", "--json", "--config", str(config),
                                  "--timeout", "1", check=False).stdout)
    assert as_json["exit_code"] == 3
    assert [c["exit_code"] for c in as_json["clusters"]] == [3, 3, 3]


def test_all_with_one_cluster_named_is_refused_in_one_line(tmp_path: Path) -> None:
    done = kinspect("health", "--all", "--profile", "prod", check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kinspect: error: --all checks every profile: leave out --profile, --bootstrap and "
        "--zookeeper"]


@pytest.mark.lab
@pytest.mark.slow
def test_the_lab_beside_a_cluster_that_is_down(lab: dict[str, Any], tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[clusters.lab]\nbootstrap = "{lab["bootstrap"]}"\n'
                      f'zookeeper = "{lab["zookeeper"]}"\n\n'
                      f'[clusters.lab-bare]\nbootstrap = "{lab["bootstrap"]}"\n\n'
                      '[clusters.down]\nbootstrap = "127.0.0.1:1"\n')
    def both() -> tuple[Any, dict[str, Any]] | None:
        """`health --profile lab` and `--all` a moment apart: equal once the lab is settled
        (a broker a test before restarted may still be rejoining ISRs)."""
        alone = kinspect("health", "--profile", "lab", "--config", str(config), "--json",
                         check=False)
        every = kinspect("health", "--all", "--config", str(config), "--json", check=False)
        clusters = {c["profile"]: c for c in json.loads(every.stdout)["clusters"]}
        same = (clusters["lab"]["verdict"], clusters["lab"]["exit_code"]) == (
            json.loads(alone.stdout)["verdict"], alone.returncode)
        return (every, clusters) if same else None

    every, clusters = wait_until(both, 90, "health --all to say what health --profile says",
                                 interval=1)
    assert clusters["lab-bare"]["verdict"] != "unreachable"
    assert clusters["down"]["verdict"] == "unreachable"
    assert every.returncode == worst([c["exit_code"] for c in clusters.values()])
