"""The process backend: ZooKeeper and brokers as JVM processes, each in its own network namespace.

As root every node gets a namespace, a veth into one bridge and an address in 198.18.<slot>.0/24,
and partitions are iptables DROP rules inside the namespaces (as blockade did with containers).
Without root the nodes share loopback, and kill / stop / pause still work.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab import dist, journal, netns, presets, sasl, topology
from kinspect.lab.backend import LabBackend, Progress, UpOptions
from kinspect.lab.nodes import java_command, node_dir, process_state, write_config
from kinspect.lab.readiness import (
    clear_stale_registrations,
    port_open,
    wait_for_cluster,
    wait_for_port,
    wait_registration_gone,
    write_lab_mark,
)
from kinspect.lab.state import LabState, NodeRecord, clear_state, lab_lock, load_state, save_state
from kinspect.paths import lab_dir

STOP_GRACE_S = 30.0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ProcessBackend(LabBackend):
    name = "process"

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or lab_dir()

    # ----- lifecycle -------------------------------------------------------------------

    def up(self, options: UpOptions, progress: Progress) -> LabState:
        with lab_lock(self.root):
            current = self.state()
            if current and any(n.state in {"running", "paused"} for n in current.nodes):
                progress(f"a lab is already running (lab {current.lab_id}); not starting another")
                return current
            if current:
                progress("cleaning up a lab that is no longer running")
                self._teardown(current, progress)
            kafka = dist.ensure(progress)
            state = self._plan(options, kafka.version)
            save_state(state, self.root)
            try:
                self._build(state, kafka, options, progress)
            except BaseException:
                progress("start failed; removing what was made")
                self._teardown(state, progress)
                raise
            journal.record("up", state.lab_id, detail=f"{len(state.brokers)} brokers, "
                           f"preset {state.preset}", root=self.root)
            return state

    def _plan(self, options: UpOptions, version: str) -> LabState:
        if options.brokers < 1 or options.brokers > 9:
            raise KinspectError("--brokers must be between 1 and 9")
        config = presets.effective(options.preset, options.overrides)
        network = options.network
        reason = netns.can_use_netns()
        if network == "auto":
            network = "loopback" if reason else "netns"
        elif network == "netns" and reason:
            raise KinspectError(reason)
        names = ["zk1", *(f"kafka{i}" for i in range(1, options.brokers + 1))]
        nodes: list[NodeRecord] = []
        slot = netns.choose_slot() if network == "netns" else None
        for index, name in enumerate(names):
            broker_id = None if name == "zk1" else index
            if slot:
                host, port = slot.address(index), 2181 if name == "zk1" else 9092
            else:
                host, port = "127.0.0.1", options.base_port + index
                if port_open(host, port):
                    raise KinspectError(
                        f"port {port} on {host} is already in use (choose another --base-port)"
                    )
            nodes.append(NodeRecord(name=name, role="zookeeper" if name == "zk1" else "broker",
                                    host=host, port=port, broker_id=broker_id,
                                    netns=slot.netns(name) if slot else None))
        return LabState(
            lab_id=uuid.uuid4().hex[:12], backend=self.name, preset=options.preset,
            network=network, kafka_version=version, broker_config=config,
            overrides=dict(options.overrides), nodes=nodes, created_at=_now_ms(),
            slot=slot.number if slot else None,
            host_address=slot.host_address if slot else "127.0.0.1",
            extra={"brokers": options.brokers, "base_port": options.base_port,
                   **({"sasl": sasl.plan(self.root, options.sasl)} if options.sasl else {})},
        )

    def _build(self, state: LabState, kafka: dist.KafkaDist, options: UpOptions,
               progress: Progress) -> None:
        deadline = time.monotonic() + options.timeout_s
        if state.slot is not None:
            slot = netns.Slot(state.slot)
            progress(f"network: bridge {slot.bridge}, {slot.subnet}, one namespace per node")
            netns.create_bridge(slot)
            if netns.bridge_netfilter_on():
                state.forward_rule = True
                save_state(state, self.root)
                netns.add_forward_rule(slot)
            for node in state.nodes:
                netns.create_node(slot, node.name, node.host)
        else:
            progress("network: loopback (no network faults without root)")
        zk = state.zookeeper
        self._launch(state, zk, kafka)
        progress(f"zk1 starting at {zk.address}")
        wait_for_port(zk.host, zk.port, deadline, lambda: self._alive(state, zk), "zk1")
        clear_stale_registrations(zk.address, progress)
        write_lab_mark(zk.address, state.lab_id)
        for broker in state.brokers:
            self._launch(state, broker, kafka)
            progress(f"{broker.name} starting at {broker.address}")
        controller = wait_for_cluster(
            zk.address,
            [b.broker_id for b in state.brokers if b.broker_id is not None],
            deadline,
            lambda: [n.name for n in state.nodes if not self._alive(state, n)],
            progress,
        )
        progress(f"controller elected: broker {controller}")
        if "sasl" in state.extra:
            sasl.create_scram_user(state)
            progress(f"SASL_PLAINTEXT listeners at {sasl.bootstrap(state)} (user {sasl.USERNAME}, "
                     f"password in {sasl.password_file(self.root)})")

    def _launch(self, state: LabState, node: NodeRecord, kafka: dist.KafkaDist) -> None:
        write_config(self.root, node, state)
        cmd = java_command(kafka, self.root, node, state.lab_id)
        if node.netns:
            cmd = netns.in_ns(node.netns, *cmd)
        out = node_dir(self.root, node.name) / "logs" / f"{node.name}.out"
        with open(out, "ab") as sink:
            proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        # Reap it when it dies so a long-lived parent (the TUI) does not collect zombies.
        threading.Thread(target=proc.wait, daemon=True).start()
        node.pid, node.state = proc.pid, "running"
        save_state(state, self.root)

    def _alive(self, state: LabState, node: NodeRecord) -> bool:
        return process_state(node.pid, state.lab_id) != "dead"

    def down(self, progress: Progress) -> bool:
        with lab_lock(self.root):
            state = load_state(self.root)
            if state is None:
                return False
            self._teardown(state, progress)
            journal.record("down", state.lab_id, root=self.root)
            return True

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
        clear_state(self.root)

    def _wait_dead(self, state: LabState, node: NodeRecord, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process_state(node.pid, state.lab_id) == "dead":
                return True
            time.sleep(0.1)
        return False

    def wipe(self) -> None:
        """Delete data and broker logs (for `lab reset`); the journal stays."""
        shutil.rmtree(self.root / "nodes", ignore_errors=True)

    def state(self) -> LabState | None:
        state = load_state(self.root)
        if state is None:
            return None
        for node in state.nodes:
            actual = process_state(node.pid, state.lab_id)
            if actual == "dead" and node.state in {"running", "paused"}:
                node.state = "exited"
            elif actual in {"running", "paused"}:
                node.state = actual
        return state

    # ----- faults ----------------------------------------------------------------------

    def _require(self) -> LabState:
        state = self.state()
        if state is None:
            raise KinspectError("no lab is running (start one with: kinspect lab up)")
        return state

    def _node(self, state: LabState, name: str) -> NodeRecord:
        node = state.node(name)
        if node is None:
            names = ", ".join(n.name for n in state.nodes)
            raise KinspectError(f"unknown node {name!r} (nodes: {names})")
        return node

    def _signal(self, name: str, sig: signal.Signals, need: set[str], new_state: str,
                action: str) -> None:
        with lab_lock(self.root):
            state = self._require()
            node = self._node(state, name)
            if node.state not in need:
                raise KinspectError(f"{name} is {node.state}; cannot {action} it")
            assert node.pid is not None
            os.kill(node.pid, sig)
            if sig == signal.SIGKILL:
                self._wait_dead(state, node, 10.0)
            node.state = new_state
            save_state(state, self.root)
            journal.record(action, state.lab_id, node=name,
                           detail=f"{action} {name} (pid {node.pid})", root=self.root)

    def kill(self, node: str) -> None:
        self._signal(node, signal.SIGKILL, {"running", "paused"}, "killed", "kill")

    def pause(self, node: str) -> None:
        self._signal(node, signal.SIGSTOP, {"running"}, "paused", "pause")

    def resume(self, node: str) -> None:
        self._signal(node, signal.SIGCONT, {"paused"}, "running", "resume")

    def stop(self, node: str) -> None:
        with lab_lock(self.root):
            state = self._require()
            record = self._node(state, node)
            if record.state not in {"running", "paused"}:
                raise KinspectError(f"{node} is {record.state}; cannot stop it")
            assert record.pid is not None
            if record.state == "paused":
                os.kill(record.pid, signal.SIGCONT)
            os.kill(record.pid, signal.SIGTERM)
            if not self._wait_dead(state, record, STOP_GRACE_S):
                os.kill(record.pid, signal.SIGKILL)
                self._wait_dead(state, record, 10.0)
            record.state = "stopped"
            save_state(state, self.root)
            journal.record("stop", state.lab_id, node=node, detail=f"clean shutdown of {node}",
                           root=self.root)

    def start(self, node: str) -> None:
        with lab_lock(self.root):
            state = self._require()
            record = self._node(state, node)
            if record.state in {"running", "paused"}:
                raise KinspectError(f"{node} is already {record.state}")
            kafka = dist.ensure()
            if record.broker_id is not None and state.zookeeper.state == "running":
                session_ms = int(state.broker_config.get("zookeeper.session.timeout.ms", "18000"))
                wait_registration_gone(state.zookeeper.address, record.broker_id,
                                       session_ms / 1000 + 5, lambda line: None)
            self._launch(state, record, kafka)
            journal.record("start", state.lab_id, node=node, detail=f"start {node}",
                           root=self.root)

    def partition(self, groups: Sequence[Sequence[str]], clients_with: str | None) -> None:
        with lab_lock(self.root):
            state = self._require()
            if state.slot is None:
                raise KinspectError(
                    "network faults need root (or the docker backend); this lab runs on loopback"
                )
            names = [n.name for n in state.nodes]
            blocked = topology.blocked_pairs(names, groups, clients_with)
            self._apply(state, blocked)
            state.groups = [list(g) for g in groups]
            state.clients_with = clients_with
            save_state(state, self.root)
            text = " | ".join(",".join(g) for g in groups)
            if clients_with:
                text += f" (clients with {clients_with})"
            journal.record("partition", state.lab_id, groups=state.groups,
                           detail=f"partition {text}", root=self.root)

    def _apply(self, state: LabState, blocked: set[frozenset[str]]) -> None:
        assert state.slot is not None
        slot = netns.Slot(state.slot)
        address = {n.name: n.host for n in state.nodes}
        address[topology.CLIENTS] = state.host_address
        for node in state.nodes:
            cut = [address[other] for pair in blocked if node.name in pair
                   for other in pair if other != node.name]
            netns.apply_blocks(slot, node.name, cut)

    def heal(self) -> None:
        with lab_lock(self.root):
            state = self._require()
            if state.slot is None:
                raise KinspectError(
                    "network faults need root (or the docker backend); this lab runs on loopback"
                )
            self._apply(state, set())
            state.groups, state.clients_with = [], None
            save_state(state, self.root)
            journal.record("heal", state.lab_id, detail="all partitions removed", root=self.root)

    def slow(self, node: str, delay_ms: int, jitter_ms: int) -> None:
        with lab_lock(self.root):
            state = self._require()
            if state.slot is None or state.node(node) is None:
                raise KinspectError(f"cannot slow {node}: no such node in a namespace lab")
            reason = netns.netem_available()
            if reason:
                raise KinspectError(reason)
            netns.slow_node(netns.Slot(state.slot), node, delay_ms, jitter_ms)
            state.extra["slowed"] = sorted({*state.extra.get("slowed", []), node})
            save_state(state, self.root)
            journal.record("slow", state.lab_id, node=node, root=self.root,
                           detail=f"netem delay {delay_ms} ms ± {jitter_ms} ms on {node}")

    def unslow(self) -> None:
        with lab_lock(self.root):
            state = self._require()
            slowed = state.extra.pop("slowed", [])
            if state.slot is None or not slowed:
                return
            for node in slowed:
                netns.unslow_node(netns.Slot(state.slot), node)
            save_state(state, self.root)
            journal.record("unslow", state.lab_id, detail="links at full speed", root=self.root)

    def broker_log_dir(self, node: str) -> Path | None:
        path = node_dir(self.root, node) / "logs"
        return path if path.exists() else None
