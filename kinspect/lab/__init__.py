"""The lab that acts: start, break and tear down a local Kafka cluster (zk1 + kafka1..N).

In: `UpOptions` (ZooKeeper or KRaft, brokers, a preset, SASL, TLS, ACLs) and `Fault` values
(faults.py: the one fault vocabulary every front end builds). Out: a running lab behind one
interface (backend.py: the process backend in network namespaces, or docker), its state on disk
(state.py) for any later command, the fault journal (journal.py) and replica snapshots kept as
evidence (replicas.py). `kinspect doctor`'s lab-side probes are host_checks.py. The lab acts;
it does not observe (the sources do, and the two do not import each other).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.lab.state import LabState, load_state

if TYPE_CHECKING:
    from kinspect.lab.backend import LabBackend, Progress, UpOptions, status_json

__all__ = ["BACKENDS", "LabBackend", "LabState", "UpOptions", "choose_backend", "open_backend",
           "reset_lab", "running_lab", "status_json"]

BACKENDS = ("auto", "process", "docker")
_FROM_BACKEND = frozenset({"LabBackend", "Progress", "UpOptions", "status_json"})


def __getattr__(name: str) -> Any:
    """The backend's names, imported when first asked for: `kinspect health` and `snapshot`
    only ask whether a lab runs, and the backend (its readiness checks pull in kafka-python)
    would cost them a fifth of a second at every start."""
    if name in _FROM_BACKEND:
        from kinspect.lab import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def choose_backend(progress: Progress | None = None) -> str:
    """`--backend auto`: $KINSPECT_BACKEND if set, else docker when an engine answers and our
    image can be had, else process."""
    from kinspect.lab import docker_engine, images

    say = progress or (lambda line: None)
    preferred = os.environ.get("KINSPECT_BACKEND", "")
    if preferred in {"process", "docker"}:
        say(f"backend: {preferred} (KINSPECT_BACKEND)")
        return preferred
    problem = docker_engine.engine_problem()
    if problem is None:
        try:
            images.docker_folder()
        except KinspectError as exc:
            problem = str(exc)
    if problem is None:
        say("backend: docker (a Docker engine answers; --backend process to use JVM processes)")
        return "docker"
    say(f"backend: process ({problem})")
    return "process"


def open_backend(name: str | None = None, root: Path | None = None,
                 progress: Progress | None = None) -> LabBackend:
    """The backend of the lab on disk, or for a new lab the one asked for (auto: chosen).

    With no lab on disk and no name, a process handle answers "no lab" without asking Docker.
    """
    state = load_state(root)
    if state and name not in (None, "auto", state.backend):
        raise KinspectError(f"a {state.backend} lab is running (lab {state.lab_id}); take it down "
                            f"first with: kinspect lab down")
    chosen = name or "process"
    if state:
        chosen = state.backend
    elif name == "auto":
        chosen = choose_backend(progress)
    if chosen == "process":
        from kinspect.lab.process import ProcessBackend

        return ProcessBackend(root)
    if chosen == "docker":
        from kinspect.lab.containers import DockerBackend

        return DockerBackend(root)
    raise KinspectError(f"unknown lab backend {chosen!r} (available: {', '.join(BACKENDS)})")


def running_lab(root: Path | None = None) -> LabState | None:
    """The lab state if one is up, reconciled with the processes that actually run."""
    state = load_state(root)
    if state is None:
        return None
    if state.backend == "process":  # read from /proc, without the backend's imports
        from kinspect.lab.alive import reconciled

        return reconciled(state)
    return open_backend(state.backend, root).state()


def reset_lab(options: UpOptions, progress: Progress,
              backend: str = "auto") -> tuple[LabBackend, LabState]:
    """Down, wipe, up with these options: nothing of an earlier lab leaks in. A running lab
    keeps its backend (a docker lab is reset as a docker lab)."""
    options.validate()
    lab = open_backend(backend, progress=progress)
    lab.down(progress)
    lab.wipe()
    return lab, lab.up(options, progress)
