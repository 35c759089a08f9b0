"""Reaching a Docker engine, with one-line reasons when there is none."""

from __future__ import annotations

import os

import docker
from docker.errors import DockerException

from kinspect.errors import KinspectError

TIMEOUT_S = 120  # image builds and `docker stop` with a 30 s grace take a while


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def connect(timeout: int = TIMEOUT_S) -> docker.DockerClient:
    """A client to a Docker engine that answered a ping, or a KinspectError saying why not."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "FileNotFoundError" in reason or "No such file" in reason:
            reason = "no socket (is dockerd running?)"
        elif "PermissionError" in reason or "Permission denied" in reason:
            reason = "permission denied (add yourself to the docker group)"
        raise KinspectError(f"no Docker engine answers at {engine_address()}: {reason[:160]}") from None
    return client


_SHARED: list[docker.DockerClient] = []


def shared_client() -> docker.DockerClient:
    """One client per process: the TUI asks for the lab's state every second."""
    if not _SHARED:
        _SHARED.append(connect())
    return _SHARED[0]


def engine_problem() -> str | None:
    """None when an engine answers, else the one-line reason why not."""
    try:
        connect(timeout=5).close()
    except KinspectError as exc:
        return str(exc)
    return None
