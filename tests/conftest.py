"""Fixtures for the real lab: one lab per test session, in its own KINSPECT_HOME.

Only one lab runs at a time (2 cores): tests that need a cluster share the session lab and
leave it healed and running; the lifecycle tests (marked `lab_lifecycle`) run last and take
it down themselves, asserting that nothing is left behind.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.helpers import kinspect
from tests.helpers.lab import Lab

BACKENDS = ("process", "docker")
IMAGES_WITHIN_S = 1800  # a deadline against a hang: the build takes minutes


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite the golden files (and the README's generated tables) from "
                     "what the code produces now, instead of comparing with them")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    """True under --update-goldens: a golden test writes what it got, then compares."""
    return bool(request.config.getoption("--update-goldens"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lab_lifecycle: takes the session lab down; runs last")
    # A lab started without --backend is a process lab, whether or not a Docker engine runs.
    os.environ.setdefault("KINSPECT_BACKEND", "process")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A lab test runs once per backend its `backends` marker names, wherever its module lives
    (`pytestmark = pytest.mark.backends("process", "docker")`); unmarked, on the process lab.
    `matrix_only=("docker",)` on a test keeps that backend's round trip to `make matrix`."""
    if "lab_backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        chosen = marker.args if marker else ("process",)
        in_matrix = marker.kwargs.get("matrix_only", ()) if marker else ()
        params = [pytest.param(name, marks=pytest.mark.extended) if name in in_matrix else name
                  for name in chosen]
        metafunc.parametrize("lab_backend", params, indirect=True, scope="session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One lab at a time: every process-lab test, then every docker-lab test. Within a backend,
    tests marked resets_lab (scenarios, on-call) reset the lab with their own settings, so they
    run after those sharing the session lab; among them those marked shares_lab with the same
    name run first, side by side (a TLS lab is made once, and the plain lab the last of the
    others leaves is the one the lifecycle tests, which take it down, find)."""
    def order(item: pytest.Item) -> tuple[int, int, int, str]:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("lab_backend", "process") if callspec else "process"
        if item.get_closest_marker("lab_lifecycle"):
            stage = 2
        else:
            stage = 1 if item.get_closest_marker("resets_lab") else 0
        shared = item.get_closest_marker("shares_lab")
        if shared is None:
            return BACKENDS.index(backend), stage, 1, ""
        return BACKENDS.index(backend), stage, 0, str(shared.args[0])

    items.sort(key=order)


@pytest.fixture(scope="session")
def lab_backend(request: pytest.FixtureRequest) -> str:
    """The backend under test. No Docker engine: skipped for a user, a failure for root (CI),
    because `make test` starts one as root."""
    backend = str(getattr(request, "param", "process"))
    if backend == "docker":
        from kinspect.lab.docker_engine import engine_problem

        problem = engine_problem()
        if problem and os.geteuid() == 0:
            pytest.fail(f"docker backend: {problem} (make test starts dockerd as root)")
        if problem:
            pytest.skip(f"docker backend: {problem}")
        wait_for_images()
    return backend


def wait_for_images() -> None:
    """`tests/run-suite` builds the docker lab's images beside the process lab's tests and
    writes the build's exit code to KINSPECT_TEST_IMAGES_RC; the docker tests wait for it (a
    `lab up` of their own would build the same images a second time, at once)."""
    rc_file = os.environ.get("KINSPECT_TEST_IMAGES_RC")
    if not rc_file:
        return
    deadline = time.monotonic() + IMAGES_WITHIN_S
    while not Path(rc_file).exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the docker lab's images were not built within {IMAGES_WITHIN_S} s")
        time.sleep(2)
    rc = Path(rc_file).read_text().strip()
    if rc != "0":
        pytest.fail(f"`kinspect lab images` failed (exit {rc}); its log's end is printed "
                    "after the lab tests")


@pytest.fixture(scope="session")
def lab_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tests never touch the user's own lab: they get a KINSPECT_HOME of their own."""
    home = tmp_path_factory.mktemp("kinspect-home")
    os.environ["KINSPECT_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def lab_session(lab_home: Path) -> Iterator[Lab]:
    """The one lab of the session. KINSPECT_TEST_NO_LAB=1 skips every test that needs it: a
    second worker on the same two cores (a helper, an editor's test run) must not start another."""
    if os.environ.get("KINSPECT_TEST_NO_LAB"):
        pytest.skip("KINSPECT_TEST_NO_LAB is set: no lab is started")
    lab = Lab(lab_home)
    yield lab
    lab.down()


@pytest.fixture
def lab(lab_session: Lab, lab_backend: str) -> Iterator[dict[str, Any]]:
    """A running, healed lab with every node up; the status JSON."""
    yield from _healed(lab_session, lab_session.ensure_up(lab_backend))


@pytest.fixture
def kraft_lab(lab_session: Lab, lab_backend: str) -> Iterator[dict[str, Any]]:
    """The same, in KRaft mode: ctl1 (node 101) and kafka1..3. Tests using it are marked
    resets_lab: they run after those sharing the ZooKeeper lab."""
    yield from _healed(lab_session, lab_session.ensure_up(lab_backend, mode="kraft"))


@pytest.fixture
def kraft4_lab(lab_session: Lab, lab_backend: str) -> Iterator[dict[str, Any]]:
    """A KRaft lab of the tested Kafka 4.x (ELR on, as 4.4 formats a cluster). Marked
    resets_lab too."""
    yield from _healed(lab_session, lab_session.ensure_up(lab_backend, mode="kraft", kafka="4"))


def _healed(lab_session: Lab, status: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if status["groups"]:
        kinspect("lab", "heal")
    yield lab_session.every_node_up(status)
    after = kinspect("lab", "status", "--json", check=False)
    if after.returncode == 0 and json.loads(after.stdout)["groups"]:
        kinspect("lab", "heal")


@pytest.fixture
def zk(lab: dict[str, Any]) -> Iterator[KazooClient]:
    client = KazooClient(hosts=lab["zookeeper"], timeout=10.0)
    client.start(timeout=20)
    yield client
    client.stop()
    client.close()
