"""Whether this host reaches a docker lab's containers, and where kinspect's relay container sits.

Docker Desktop (macOS, Windows) and rootless engines run containers where the host has no route
to them: kinspect then runs its commands in a container of its own on the lab's network
(kinspect/cli/container_relay.py). The question is asked by every command, so it is answered
with a route lookup and no packet: a UDP socket's connect() picks the source address the
kernel would send from. Where the host routes to a docker network, that is the network's
gateway, an address of the host's own bridge; without such a route the default route answers
with another address (or none does), and the containers are out of reach.

Relay containers take the lab network's addresses .2-.9 (nodes are .10 and up, the gateway
is .1): a partition that cuts "the clients" off cuts those addresses too, since the relay is
where the clients run.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kinspect.errors import KinspectError
from kinspect.lab.state import LabState

IN_CONTAINER_ENV = "KINSPECT_IN_CONTAINER"  # set in the kinspect image: never relay again
RELAY_CONTAINER_ENV = "KINSPECT_RELAY_CONTAINER"  # the relay's own container name
RELAY_ENV = "KINSPECT_RELAY"  # auto (default), always or never
RELAY_LABEL = "kinspect.relay"
RELAY_HOSTS = range(2, 10)


class RelayChoice(StrEnum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"

    @classmethod
    def from_env(cls) -> RelayChoice:
        value = os.environ.get(RELAY_ENV, "auto").strip().lower() or "auto"
        try:
            return cls(value)
        except ValueError:
            raise KinspectError(f"{RELAY_ENV} must be auto, always or never, not {value!r}") from None


@dataclass(frozen=True)
class Reach:
    """Whether the host reaches a docker network (None: it could not be told), and why."""

    reachable: bool | None
    why: str

    @property
    def relay(self) -> bool:
        """Relay only on a known no: what could not be told runs here, as it always did."""
        return self.reachable is False


def in_container() -> bool:
    return bool(os.environ.get(IN_CONTAINER_ENV))


def source_address(address: str) -> str | None:
    """The host's address for sending to `address` (a route lookup, nothing is sent); None
    when no route leads there."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((address, 9))
            return str(probe.getsockname()[0])
        except OSError:
            return None


def reaches(gateway: str, member: str, network: str) -> Reach:
    """Whether the host sends to `member` from the network's `gateway`, its own bridge."""
    source = source_address(member)
    if source == gateway:
        return Reach(True, f"this host routes to {network} (its bridge {gateway} is here)")
    via = f"from {source}, not from its gateway {gateway}" if source else "no route at all"
    return Reach(False, f"this host does not route to {network} ({via}: the engine runs "
                        "containers where this host cannot reach them, as Docker Desktop does)")


def lab_subnet(state: LabState) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"{state.host_address}/24", strict=False)


def host_reaches_lab(state: LabState) -> Reach:
    """Whether kinspect on this host reaches the running docker lab's nodes."""
    if state.backend != "docker" or not state.nodes:
        return Reach(True, f"a {state.backend} lab")
    return reaches(state.host_address, state.nodes[0].host, f"the lab's network {lab_subnet(state)}")


def host_reaches_engine(client: Any) -> Reach:
    """For a lab not made yet: whether this host reaches the engine's default bridge network
    (a lab's network is one more bridge of the same engine)."""
    try:
        pools = client.networks.get("bridge").attrs["IPAM"]["Config"] or []
    except Exception:  # no default bridge (dockerd --bridge=none): nothing to tell by
        return Reach(None, "the engine has no default bridge network to probe")
    for pool in pools:
        subnet = ipaddress.ip_network(pool.get("Subnet", "::/128"), strict=False)
        if subnet.version == 4 and subnet.num_addresses >= 4:
            gateway = pool.get("Gateway") or str(subnet.network_address + 1)
            member = next(a for a in subnet.hosts() if str(a) != gateway)
            return reaches(gateway, str(member), f"the engine's bridge network {subnet}")
    return Reach(None, "the engine's default bridge has no IPv4 subnet to probe")


def relay_addresses(state: LabState) -> list[str]:
    """Where relay containers sit on the lab's network."""
    base = lab_subnet(state).network_address
    return [str(base + host) for host in RELAY_HOSTS]


def free_relay_address(network: Any, state: LabState) -> str:
    """An address among .2-.9 of the lab's network that no container holds."""
    network.reload()
    taken = {str(endpoint.get("IPv4Address", "")).split("/")[0]
             for endpoint in (network.attrs.get("Containers") or {}).values()}
    for address in relay_addresses(state):
        if address not in taken:
            return address
    raise KinspectError(f"every relay address of the lab's network is taken "
                        f"({len(RELAY_HOSTS)} kinspect containers run on it)")


def join_lab_network(network: Any, state: LabState) -> None:
    """In a relay container that is making the lab: join the network just made, before any
    node starts, so the readiness waits reach the nodes."""
    name = os.environ.get(RELAY_CONTAINER_ENV)
    if not name or not in_container():
        return
    network.connect(name, ipv4_address=free_relay_address(network, state))


def leave_lab_network(client: Any, network: Any) -> None:
    """Before the lab's network goes: relay containers on it leave (an engine refuses to
    remove a network with containers attached), whichever kinspect takes the lab down."""
    network.reload()
    for container_id in network.attrs.get("Containers") or {}:
        container = client.containers.get(container_id)
        if RELAY_LABEL in (container.labels or {}):
            network.disconnect(container_id, force=True)
