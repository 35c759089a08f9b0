"""The process backend: ZooKeeper and brokers as JVM processes, each in its own network namespace.

As root every node gets a namespace, a veth into one bridge and an address in 198.18.<slot>.0/24,
and partitions are iptables DROP rules inside the namespaces (as blockade did with containers).
Without root the nodes share loopback, and kill / stop / pause still work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from kinspect.errors import KinspectError
from kinspect.lab import disks, dist, netns, oauth, power, userns
from kinspect.lab.alive import process_state, reconciled
from kinspect.lab.backend import LabBackend, Progress, UpOptions, plan_nodes
from kinspect.lab.nodes import (
    CONTROLLER_PORT,
    clear_foreign_data,
    heap_of,
    java_command,
    node_dir,
    write_config,
)
from kinspect.lab.readiness import port_open
from kinspect.lab.shaping import Kit
from kinspect.lab.state import LabState, NodeRecord, NodeState, clear_state, load_state, save_state
from kinspect.lab.topology import node_names
from kinspect.paths import lab_dir

STOP_GRACE_S = 30.0
LOOPBACK_ONLY = "network faults need root, user namespaces (see kinspect doctor) or docker"


def loopback_port(options: UpOptions, index: int, controller: bool = False) -> int:
    """A loopback lab's port for its index-th node (a combined node's controller listener sits
    100 above its broker's)."""
    return options.base_port + index + (100 if controller else 0)


def loopback_ports(options: UpOptions) -> list[int]:
    """Every 127.0.0.1 port a loopback lab of these options listens on."""
    names = node_names(options.brokers, options.dedicated_controllers)
    combined = options.dedicated_controllers == 0
    return [loopback_port(options, i, controller) for controller in (False, True)[:1 + combined]
            for i in range(len(names))]


def _network(asked: Literal["auto", "netns", "loopback"], reason: str | None
             ) -> Literal["netns", "loopback"]:
    """The network a lab gets: namespaces where they can be made (`reason`: why not), else
    loopback; namespaces asked for where they cannot be made are one line."""
    if asked == "auto":
        if reason:
            return "loopback"
        return "netns"
    if asked == "netns" and reason:
        raise KinspectError(reason)
    return asked


Addresses = tuple[Callable[[int, str], tuple[str, int]], Callable[[int], int]]


def _namespace_addresses(slot: netns.Slot, controllers: int | None) -> Addresses:
    """Each node's address and port in its own namespace: the first nodes (ZooKeeper, or the
    dedicated controllers) on the quorum's port, the brokers on 9092; a combined node's
    controller listener on CONTROLLER_PORT."""
    firsts, quorum_port = 1, 2181
    if controllers is not None:
        firsts, quorum_port = controllers, CONTROLLER_PORT

    def address(index: int, name: str) -> tuple[str, int]:
        if index < firsts:
            return slot.address(index), quorum_port
        return slot.address(index), 9092

    return address, lambda index: CONTROLLER_PORT


def _loopback_addresses(options: UpOptions) -> Addresses:
    """Each node's port on 127.0.0.1 from the base port (a combined node's controller listener
    100 above its broker's), each checked free."""

    def address(index: int, name: str) -> tuple[str, int]:
        return "127.0.0.1", _free(loopback_port(options, index))

    def controller_port(index: int) -> int:
        return _free(loopback_port(options, index, controller=True))

    return address, controller_port


def _free(port: int) -> int:
    if port_open("127.0.0.1", port):
        raise KinspectError(
            f"port {port} on 127.0.0.1 is already in use (choose another --base-port)")
    return port


class ProcessBackend(LabBackend):
    name = "process"

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or lab_dir()

    # ----- lifecycle -------------------------------------------------------------------

    def _plan(self, options: UpOptions, progress: Progress) -> LabState:
        network = _network(options.network, netns.can_use_netns())
        if network == "netns":
            slot = netns.choose_slot()
            address, controller_port = _namespace_addresses(slot, options.dedicated_controllers)
        else:
            address, controller_port = _loopback_addresses(options)
        nodes = plan_nodes(options.brokers, address, options.dedicated_controllers,
                           controller_port)
        version = dist.ensure(progress, version=options.kafka).version
        holder = userns.inside()
        if network != "netns":
            return self._new_state(options, nodes, version, network, None, "127.0.0.1",
                                   base_port=options.base_port, userns_holder=holder)
        for node in nodes:
            node.netns = slot.netns(node.name)
        return self._new_state(options, nodes, version, network, slot.number, slot.host_address,
                               base_port=options.base_port, userns_holder=holder)

    def _build(self, state: LabState, options: UpOptions, progress: Progress) -> None:
        deadline = time.monotonic() + options.wait_s
        if state.slot is not None:
            slot = netns.Slot(state.slot)
            progress(f"network: bridge {slot.bridge}, {slot.subnet}, one namespace per node"
                     + (" (rootless: in a user namespace of its own)"
                        if state.extra.get("userns_holder") else ""))
            netns.create_bridge(slot)
            if netns.bridge_netfilter_on():
                state.forward_rule = True
                save_state(state, self.root)
                netns.add_forward_rule(slot)
            for node in state.nodes:
                netns.create_node(slot, node.name, node.host)
        else:
            progress("network: loopback (no network faults without root)")
        self._start_cluster(state, deadline, progress)

    def _launch(self, state: LabState, node: NodeRecord) -> None:
        config = write_config(self.root, node, state)
        if node.role == "broker":  # --log-dirs: the extra dirs on small disks, before format
            for extra in disks.log_dirs(node_dir(self.root, node.name) / "data",
                                        int(state.extra.get("log_dirs", 1)))[1:]:
                disks.mount_small(extra)
        kafka = dist.ensure(version=state.kafka_version)
        data = self._storage(state, node, config)
        if not state.kraft and node.role == "broker":
            clear_foreign_data(data, None)  # a KRaft lab's, left in this home
        cmd = java_command(kafka, self.root, node, state.lab_id, kraft=state.kraft,
                           heap=heap_of(node.role, state),
                           flags=tuple(oauth.jvm_flags(state)) if node.role == "broker" else ())
        if node.netns:
            cmd = netns.in_ns(node.netns, *cmd)
        out = node_dir(self.root, node.name) / "logs" / f"{node.name}.out"
        with open(out, "ab") as sink:
            proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        # Reap it when it dies so a long-lived parent (the TUI) does not collect zombies.
        threading.Thread(target=proc.wait, daemon=True).start()
        node.pid, node.state = proc.pid, NodeState.RUNNING
        save_state(state, self.root)

    def _running(self, state: LabState, node: NodeRecord) -> bool:
        return process_state(node.pid, state.lab_id) != "dead"

    def _teardown(self, state: LabState, progress: Progress) -> None:
        for node in state.nodes:
            if process_state(node.pid, state.lab_id) != "dead" and node.pid:
                os.kill(node.pid, signal.SIGKILL)
                progress(f"{node.name} killed (pid {node.pid})")
        for node in state.nodes:
            self._wait_dead(state, node, 10.0)
        if state.slot is not None:
            slot = netns.Slot(state.slot)
            for node in state.nodes:
                netns.delete_node(slot, node.name)
            netns.delete_bridge(slot)
            if state.forward_rule:
                netns.remove_forward_rule(slot)
            progress(f"removed namespaces, veths and bridge {slot.bridge}")
        if power.unmount_all(self.root, state):
            progress("unmounted the brokers' power filesystems")
        if disks.unmount_under(self.root / "nodes"):
            progress("unmounted the brokers' small disks")
        clear_state(self.root)

    def _wait_dead(self, state: LabState, node: NodeRecord, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process_state(node.pid, state.lab_id) == "dead":
                return True
            time.sleep(0.1)
        return False

    def state(self) -> LabState | None:
        state = load_state(self.root)
        return reconciled(state) if state is not None else None

    # ----- faults ----------------------------------------------------------------------

    def _signal(self, node: NodeRecord, sig: signal.Signals) -> None:
        assert node.pid is not None
        os.kill(node.pid, sig)

    def _kill(self, state: LabState, node: NodeRecord) -> None:
        self._signal(node, signal.SIGKILL)
        self._wait_dead(state, node, 10.0)

    def _pause(self, state: LabState, node: NodeRecord) -> None:
        self._signal(node, signal.SIGSTOP)

    def _resume(self, state: LabState, node: NodeRecord) -> None:
        self._signal(node, signal.SIGCONT)

    def _stop(self, state: LabState, node: NodeRecord) -> None:
        if node.state == NodeState.PAUSED:
            self._signal(node, signal.SIGCONT)  # a frozen JVM cannot shut down cleanly
        self._signal(node, signal.SIGTERM)
        if not self._wait_dead(state, node, STOP_GRACE_S):
            self._signal(node, signal.SIGKILL)
            self._wait_dead(state, node, 10.0)

    def _start(self, state: LabState, node: NodeRecord) -> None:
        self._launch(state, node)

    def network_faults_unavailable(self, state: LabState) -> str | None:
        if state.slot is None:
            return f"{LOOPBACK_ONLY}; this lab runs on loopback"
        return None

    def _block(self, state: LabState, node: NodeRecord, addresses: list[str]) -> None:
        assert state.slot is not None
        netns.apply_blocks(netns.Slot(state.slot), node.name, addresses)

    def shaping_kit(self) -> Kit:
        return netns.shaping_kit()

    def _in_node(self, state: LabState, node: NodeRecord, commands: list[list[str]],
                 check: bool) -> None:
        if state.slot is None:
            raise KinspectError(f"{LOOPBACK_ONLY}; this lab runs on loopback")
        netns.run_in_node(netns.Slot(state.slot), node.name, commands, check)

    def broker_log_dir(self, node: str) -> Path | None:
        path = node_dir(self.root, node) / "logs"
        return path if path.exists() else None
