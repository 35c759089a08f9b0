"""Whether a process lab's nodes still run, read from /proc: `health` and `snapshot` ask it at
every start, so it lives apart from the backend (whose imports cost them ~0.1 s)."""

from __future__ import annotations

from kinspect.lab.state import LabState, NodeState
from kinspect.procs import read_process


def process_state(pid: int | None, lab_id: str) -> str:
    """'running', 'paused' or 'dead' for a pid, counting it dead unless it carries our tag
    (read across an exec: a starting node is `ip netns exec` becoming java)."""
    process = read_process(pid) if pid else None
    if process is None or process.exited or f"-Dkinspect.lab={lab_id}".encode() not in process.args:
        return "dead"
    return "paused" if process.stopped else "running"


def reconciled(state: LabState) -> LabState:
    """The recorded lab with each node's state as its process says it (dead ones noticed)."""
    for node in state.nodes:
        actual = process_state(node.pid, state.lab_id)
        if actual == "dead" and node.state.alive:
            node.state = NodeState.EXITED
        elif actual in {"running", "paused"}:
            node.state = NodeState(actual)
    return state
