"""The lab interface every backend (process, docker) implements, and the status contract.

The TUI, the scenarios and the CLI only talk to this interface, so a fault works the same
whether the broker is a JVM in a network namespace or a container.
"""

from __future__ import annotations

import contextlib
import shutil
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kinspect.errors import KinspectError
from kinspect.lab import (
    authorizer,
    disks,
    dist,
    journal,
    oauth,
    power,
    presets,
    sasl,
    shaping,
    tls,
    topology,
)
from kinspect.lab.faults import Fault, FaultKind
from kinspect.lab.nodes import (
    broker_heap_problem,
    format_storage,
    heap_of,
    log_root,
    new_cluster_id,
    node_dir,
)
from kinspect.lab.readiness import (
    clear_stale_registrations,
    describe_gaps,
    wait_for_cluster,
    wait_for_kraft,
    wait_for_port,
    wait_registration_gone,
    wait_until_served,
    write_lab_mark,
)
from kinspect.lab.replicas import keep_replicas
from kinspect.lab.shaping import Kit
from kinspect.lab.state import (
    LabState,
    Network,
    NodeRecord,
    NodeState,
    Role,
    lab_lock,
    load_state,
    save_state,
)
from kinspect.lab.topology import isolate_groups, node_names, parse_groups

Progress = Callable[[str], None]
ALIVE = {NodeState.RUNNING, NodeState.PAUSED}
MODES = ("zookeeper", "kraft")
DONE = {FaultKind.KILL: "killed", FaultKind.STOP: "stopped", FaultKind.PAUSE: "paused",
        FaultKind.RESUME: "resumed"}


START_WAIT_S, BROKER_WAIT_S = 120.0, 15.0
RESTART_WAIT_S = 60.0  # a node started again (start, restart, power-on) until it is served
START_TRIES = 3  # a broker that exits while starting is started again, as a service manager would


class LabChanged(KinspectError):
    """The lab on disk is another backend's than this handle's: open it again."""


@dataclass(frozen=True)
class UpOptions:
    """What `lab up` was asked for."""

    brokers: int = 3
    preset: str = "demo"
    overrides: dict[str, str] = field(default_factory=dict)
    network: Literal["auto", "netns", "loopback"] = "auto"
    base_port: int = 39090
    timeout_s: float | None = None  # None: `wait_s`
    sasl: str | None = None  # "plain" or "scram-sha-256": add a SASL_PLAINTEXT listener
    mode: str = "zookeeper"  # or "kraft"
    controllers: int | None = None  # KRaft: dedicated controllers (None: 1; 0: combined)
    kafka: str | None = None  # a Kafka version other than the pinned one
    tls: bool = False  # SSL and SASL_SSL listeners, certificates of the lab's own CA
    authorizer: bool = False  # Kafka's ACL authorizer, nothing allowed without an ACL
    # KRaft on 4.x: feature levels the storage is formatted with, e.g.
    # {"eligible.leader.replicas.version": 0} for a lab without eligible leader replicas
    features: dict[str, int] = field(default_factory=dict)
    # log dirs per broker: the second and third on small disks a fault can fill (disks.py)
    log_dirs: int = 1
    # each broker's -Xmx (None: nodes.BROKER_HEAP); a lab of tens of thousands of partitions
    broker_heap: str | None = None
    # each broker's log dirs on kinspect's filesystem, which `lab power-off` cuts (power.py)
    power: bool = False

    @property
    def kraft(self) -> bool:
        return self.mode == "kraft"

    @property
    def wait_s(self) -> float:
        """How long `lab up` waits for the cluster: --timeout, else 120 s and 15 s for each
        broker past three. Brokers start side by side on the same cores: nine took ~14 s
        each on two cores, and a fixed 120 s ran out before the ninth joined."""
        if self.timeout_s is not None:
            return self.timeout_s
        return START_WAIT_S + BROKER_WAIT_S * max(0, self.brokers - 3)

    @property
    def oauth(self) -> bool:
        """--sasl oauthbearer: OAUTHBEARER on the SASL listeners, the lab's token endpoint."""
        if self.sasl is None:
            return False
        return self.sasl.lower() == "oauthbearer"

    @property
    def sasl_mechanism(self) -> str | None:
        """--sasl, or SCRAM-SHA-256 for --tls alone (its SASL_SSL listener needs a user)."""
        if self.sasl:
            return self.sasl
        if self.tls:
            return "scram-sha-256"
        return None

    @property
    def dedicated_controllers(self) -> int | None:
        """How many ctl nodes (KRaft), None in a ZooKeeper lab."""
        if not self.kraft:
            return None
        if self.controllers is None:
            return 1
        return self.controllers

    def validate(self) -> None:
        """Refuse bad options before anything is made or torn down."""
        if not 1 <= self.brokers <= 9:
            raise KinspectError("--brokers must be between 1 and 9")
        if self.mode not in MODES:
            raise KinspectError(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        self._validate_controllers()
        self._validate_release()
        if self.authorizer and not self.sasl_mechanism:
            raise KinspectError("--authorizer needs --sasl or --tls: its users log in with SASL")
        self._validate_resources()
        presets.effective(self.preset, self.overrides, self.mode)

    def _validate_controllers(self) -> None:
        """--controllers: a KRaft lab's, 0 (combined) to 5."""
        if self.controllers is None:
            return
        if not self.kraft:
            raise KinspectError("--controllers is for --mode kraft (a ZooKeeper lab has zk1)")
        if not 0 <= self.controllers <= 5:
            raise KinspectError("--controllers must be between 0 and 5")

    def _validate_release(self) -> None:
        """--kafka and --feature: a release of the lab's mode, its features known to it."""
        if self.kafka is not None:
            version = dist.resolve_version(self.kafka)  # a one-line refusal of nonsense
            if not self.kraft and not dist.supports_zookeeper(version):
                raise KinspectError(f"Kafka {version} has no ZooKeeper mode (removed in 4.0): "
                                    "add --mode kraft")
        if not self.features:
            return
        if not self.kraft or dist.supports_zookeeper(self.kafka):
            raise KinspectError("--feature needs --mode kraft on Kafka 4.x (kafka-storage "
                                "format --feature)")
        for name in self.features:
            problem = dist.feature_problem(name)
            if problem is not None:
                raise KinspectError(f"--feature: {problem}")

    def _validate_resources(self) -> None:
        """The brokers' heaps and disks."""
        if self.broker_heap is not None:
            problem = broker_heap_problem(self.broker_heap)
            if problem:
                raise KinspectError(f"--broker-heap {problem}")
        if not 1 <= self.log_dirs <= disks.MAX_LOG_DIRS:
            raise KinspectError(f"--log-dirs must be between 1 and {disks.MAX_LOG_DIRS}")
        if self.power and self.log_dirs > 1:
            raise KinspectError("--power and --log-dirs 2 do not go together: the small disks "
                                "are tmpfs, which a power cut empties whole")
        if self.power:
            problem = power.problem()
            if problem:
                raise KinspectError(f"--power: {problem}")


class LabBackend(ABC):
    """Starts, breaks and tears down a lab cluster of zk1 + kafka1..N.

    The steps every backend shares (locking, the state file, the journal, refusing a fault a
    node's state does not allow, blockade's partition semantics) live here; a backend supplies
    how a node is made, signalled and cut off.
    """

    name: str
    root: Path
    # How this backend carries out a fault, in the words shown to the user.
    means: dict[str, str] = {"kill": "SIGKILL", "pause": "SIGSTOP"}

    # ----- lifecycle -------------------------------------------------------------------

    def up(self, options: UpOptions, progress: Progress) -> LabState:
        options.validate()
        with lab_lock(self.root, create=True):
            current = self.state()
            if current and any(n.state.alive for n in current.nodes):
                progress(f"a lab is already running (lab {current.lab_id}); not starting another")
                return current
            if current:
                progress("cleaning up a lab that is no longer running")
                oauth.stop(current)
                self._teardown(current, progress)
            state = self._plan(options, progress)
            save_state(state, self.root)  # before anything is made: `down` can always clean up
            try:
                self._build(state, options, progress)
            except BaseException:
                self._failed_start(state, progress)
                raise
            journal.record("up", state.lab_id, detail=f"{len(state.brokers)} brokers"
                           f"{quorum_words(state)}, preset {state.preset}, {self.name} backend",
                           root=self.root)
            return state

    def _failed_start(self, state: LabState, progress: Progress) -> None:
        """Remove what a failed start made, its nodes' logs kept aside first."""
        kept = self._keep_start_logs()
        if kept:
            progress(f"start failed; removing what was made (the nodes' logs kept in {kept})")
        else:
            progress("start failed; removing what was made")
        oauth.stop(state)
        self._teardown(state, progress)

    def down(self, progress: Progress) -> bool:
        """Remove everything the lab made; False when there was nothing to remove."""
        if not self.root.is_dir():
            return False
        with lab_lock(self.root):
            state = load_state(self.root)
            if state is None:
                return False
            oauth.stop(state)
            self._teardown(state, progress)
            journal.record("down", state.lab_id, root=self.root)
            return True

    def wipe(self) -> None:
        """Delete data and broker logs kept on this machine (for `lab reset`); the journal stays."""
        disks.unmount_under(self.root / "nodes")
        shutil.rmtree(self.root / "nodes", ignore_errors=True)

    @abstractmethod
    def state(self) -> LabState | None:
        """The running lab, reconciled with reality (dead processes noticed)."""

    @abstractmethod
    def _plan(self, options: UpOptions, progress: Progress) -> LabState:
        """Choose names, addresses and settings; nothing is made yet."""

    def _new_state(self, options: UpOptions, nodes: list[NodeRecord], kafka_version: str,
                   network: Network, slot: int | None, host_address: str,
                   lab_id: str | None = None,
                   **extra: Any) -> LabState:
        """The state of a lab about to be made, from what `up` was asked for."""
        authorizer.clear_users(self.root)
        secure = self._secure(options, nodes)
        if not lab_id:
            lab_id = new_lab_id()
        return LabState(
            lab_id=lab_id, backend=self.name, preset=options.preset,
            network=network, kafka_version=kafka_version,
            overrides=dict(options.overrides), nodes=nodes, created_at=journal.now_ms(),
            slot=slot, host_address=host_address, mode=options.mode,
            broker_config=presets.effective(options.preset, options.overrides, options.mode),
            extra={"brokers": options.brokers, **extra, **_asked_extra(options), **secure})

    def _secure(self, options: UpOptions, nodes: list[NodeRecord]) -> dict[str, object]:
        """The state's security parts `up` was asked for: SASL, OAUTHBEARER, TLS, ACLs."""
        secure: dict[str, object] = {}
        if options.sasl_mechanism:
            secure["sasl"] = sasl.plan(self.root, options.sasl_mechanism)
        if options.oauth:
            secure["oauth"] = oauth.plan(self.root)
        if options.tls:
            secure["tls"] = tls.plan(self.root, nodes)
        if options.authorizer:
            secure["authorizer"] = authorizer.plan(self.root, options.mode)
        return secure

    @abstractmethod
    def _build(self, state: LabState, options: UpOptions, progress: Progress) -> None:
        """Make the network and start every node, saving the state as things appear."""

    def _start_cluster(self, state: LabState, deadline: float, progress: Progress) -> None:
        """ZooKeeper (or the KRaft controllers) first, then the brokers; back when every
        broker answers with metadata listing them all (a node that dies meanwhile is an error
        at once)."""
        if state.kraft:
            self._start_kraft(state, deadline, progress)
        else:
            self._start_zookeeper_cluster(state, deadline, progress)
        gaps = wait_until_served(serving(state), deadline, progress)
        if gaps:
            raise KinspectError(f"the lab is not usable in time: {describe_gaps(gaps)}")
        progress(f"  every broker answers and lists all {len(state.brokers)}")
        if "sasl" in state.extra:
            sasl.create_scram_user(state)
            progress(f"SASL_PLAINTEXT listeners at {sasl.bootstrap(state)} (user {sasl.USERNAME}, "
                     f"password in {sasl.password_file(self.root)})")
        if oauth.enabled(state):
            state.extra["oauth"] = oauth.start(state)
            save_state(state, self.root)
            progress(f"OAUTHBEARER on the SASL listeners: tokens at "
                     f"{state.extra['oauth']['token_endpoint']} (client {oauth.CLIENT_ID}, "
                     f"secret in {state.extra['oauth']['client_secret_file']})")
        if tls.enabled(state):
            progress(f"SSL listeners at {tls.ssl_bootstrap(state)}, SASL_SSL at "
                     f"{tls.sasl_ssl_bootstrap(state)} (CA {tls.ca_file(state)})")
        if authorizer.enabled(state):
            progress(f"ACL authorizer on ({state.extra['authorizer']['class'].rsplit('.', 1)[1]}"
                     f"; super users {', '.join(state.extra['authorizer']['super_users'])})")

    def _start_zookeeper_cluster(self, state: LabState, deadline: float,
                                 progress: Progress) -> None:
        zk = state.zookeeper
        assert zk is not None
        self._launch(state, zk)
        progress(f"zk1 starting at {zk.address}{self._where(zk)}")
        wait_for_port(zk.host, zk.port, deadline, lambda: self._running(state, zk), "zk1")
        clear_stale_registrations(zk.address, progress)
        write_lab_mark(zk.address, state.lab_id)
        for broker in state.brokers:
            self._launch(state, broker)
            progress(f"{broker.name} starting at {broker.address}{self._where(broker)}")
        controller = wait_for_cluster(
            zk.address, [b.broker_id for b in state.brokers if b.broker_id is not None], deadline,
            lambda: [f"{n.name}{self._why_dead(n)}" for n in state.nodes
                     if not self._running(state, n)], progress)
        progress(f"controller elected: broker {controller}")

    def _start_kraft(self, state: LabState, deadline: float, progress: Progress) -> None:
        """Every node's storage formatted with the lab's cluster id, all started at once (a
        quorum needs its majority up to elect), then wait for the brokers to be unfenced."""
        for node in state.nodes:
            self._launch(state, node)
            progress(f"{node.name} ({kraft_roles(node)}, node {node.kraft_id}) starting at "
                     f"{kraft_address(node)}{self._where(node)}")
        leader = wait_for_kraft(state, deadline, lambda: [
            f"{n.name}{self._why_dead(n)}" for n in state.nodes if not self._running(state, n)],
            progress)
        progress(f"quorum leader elected: node {leader}")

    @abstractmethod
    def _launch(self, state: LabState, node: NodeRecord) -> None:
        """Start the node (its network already made), recording its pid in the state."""

    @abstractmethod
    def _running(self, state: LabState, node: NodeRecord) -> bool: ...

    def _storage(self, state: LabState, node: NodeRecord, config: Path) -> Path:
        """The node's log dir as it sees it, ready: in a power lab a broker's filesystem
        mounted; a KRaft node's storage formatted (once), the format then counted as on disk
        (an installation is long written back before a power cut)."""
        powered = node.role == "broker" and power.enabled(state)
        if powered:
            power.mount(self.root, node, power.expire_s(state))
        data = log_root(self.root, node, state)
        if state.kraft:
            format_storage(dist.ensure(version=state.kafka_version), config, data,
                           state.extra["cluster_id"], state.extra.get("features"))
        if powered:
            power.settle(self.root, node)
        return data

    def _why_dead(self, node: NodeRecord) -> str:
        """The last error line a node that died left in its console log or its server.log (4.x
        logs a fatal error there, not on the console) (" (…)"), if any: "kafka3 exited while
        starting" alone sends the user digging."""
        logs = self.root / "nodes" / node.name / "logs"
        said: list[str] = []
        for name in (f"{node.name}.out", "server.log"):
            try:
                lines = (logs / name).read_text(errors="replace").splitlines()[-40:]
            except OSError:
                continue
            said += [line.strip() for line in lines if _an_error(line)]
        if not said:
            return ""
        return f" ({said[-1][:200]})"

    def _keep_start_logs(self) -> Path | None:
        """A copy of every node's logs when a start fails, out of the lab dir: the next reset
        wipes the lab's nodes, and with them why the start failed (None: nothing to keep)."""
        nodes = self.root / "nodes"
        if not nodes.is_dir():
            return None
        kept = self.root.parent / "lab-failures" / time.strftime("%Y%m%d-%H%M%S")
        for logs in nodes.glob("*/logs"):
            shutil.copytree(logs, kept / logs.parent.name, dirs_exist_ok=True)
        if not kept.is_dir():
            return None
        return kept

    def _where(self, node: NodeRecord) -> str:
        """Where a starting node can be found, for the progress lines."""
        return ""

    @abstractmethod
    def _teardown(self, state: LabState, progress: Progress) -> None:
        """Remove everything `state` describes (even half-built) and clear the state file."""

    # ----- faults ----------------------------------------------------------------------

    def apply(self, fault: Fault) -> str:
        """Carry out one fault, under the lab lock and from one read of the lab's state;
        the line that says what was done (the CLI prints it, the TUI toasts it)."""
        with lab_lock(self.root):
            state = self._require()
            if state.backend != self.name:
                raise LabChanged(f"the lab is now a {state.backend} lab; open it again")
            return self._carry_out(state, fault)

    def _carry_out(self, state: LabState, fault: Fault) -> str:
        match fault.kind:
            case FaultKind.PARTITION | FaultKind.ISOLATE:
                return self._partition(state, fault)
            case FaultKind.HEAL:
                return self._heal(state)
            case FaultKind.UNSLOW:
                return self._unslow_links(state, fault.node)
            case FaultKind.POWER_OFF:
                return self._power_off(state, self._powered_nodes(state, fault))
            case FaultKind.POWER_ON:
                return self._power_on(state, self._powered_nodes(state, fault))
        return self._on_node(state, self._node(state, fault.node or ""), fault)

    def _on_node(self, state: LabState, node: NodeRecord, fault: Fault) -> str:
        """A fault of one node (every other kind names its node)."""
        match fault.kind:
            case FaultKind.START:
                return self._start_node(state, node)
            case FaultKind.RESTART:  # a node that is down is started
                if not node.state.alive:
                    return self._start_node(state, node)
                if node.state == NodeState.PAUSED:  # a frozen JVM cannot shut down cleanly
                    self._change(state, node, FaultKind.RESUME)
                self._change(state, node, FaultKind.STOP)
                self._start_node(state, node)
                return f"restarted {node.name}"
            case FaultKind.SLOW:
                return self._slow_link(state, node, fault)
            case FaultKind.FILL_DISK | FaultKind.FREE_DISK:
                return self._disk(state, node, fault.kind)
        return self._change(state, node, fault.kind)  # kill, stop, pause, resume

    def _disk(self, state: LabState, node: NodeRecord, kind: FaultKind) -> str:
        """Fill a broker's last log dir (a small disk of its own) or free it again."""
        count = int(state.extra.get("log_dirs", 1))
        if count < 2 or node.role != "broker" or self.name != "process":
            raise KinspectError(f"{kind} needs a broker of a lab made with --log-dirs 2 on the "
                                "process backend (its small disks are this machine's)")
        path = disks.log_dirs(node_dir(self.root, node.name) / "data", count)[-1]
        if kind is FaultKind.FILL_DISK:
            done = (f"filled {node.name}'s log dir {path.name} ({disks.fill(path) / 1e6:.0f} MB "
                    "written): Kafka takes it offline at its next write there")
        else:
            done = (f"freed {disks.free(path) / 1e6:.0f} MB on {node.name}'s log dir {path.name}"
                    " (Kafka uses it again when the broker restarts)")
        journal.record(kind, state.lab_id, node=node.name, root=self.root,
                       detail=f"{kind} {node.name} {path.name}")
        return done

    def _powered_nodes(self, state: LabState, fault: Fault) -> list[NodeRecord]:
        """The brokers a power fault names (`all`: every broker; or `kafka1,kafka2`), in a lab
        made with --power: the ones named lose power in the same instant."""
        if not power.enabled(state):
            raise KinspectError(f"{fault.kind} needs a lab made with `lab up --power` (its "
                                "brokers' log dirs on kinspect's filesystem)")
        if fault.node == "all":
            return list(state.brokers)
        nodes = [self._node(state, name) for name in (fault.node or "").split(",")]
        for node in nodes:
            if node.role != "broker":
                raise KinspectError(f"{fault.kind} is for brokers (kafka1…), not {node.name}")
        return nodes

    def _power_off(self, state: LabState, nodes: list[NodeRecord]) -> str:
        """As a power cut: every broker frozen first, then each one's unsynced writes dropped,
        then killed — nothing can be acknowledged between the cut and the kill."""
        down = [n.name for n in nodes if not n.state.alive]
        if down:
            raise KinspectError(f"{', '.join(down)} {'is' if len(down) == 1 else 'are'} not "
                                "running; cannot power-off")
        for node in nodes:
            if node.state == NodeState.RUNNING:
                self._pause(state, node)
        cuts = [power.cut(self.root, node) for node in nodes]
        pids = [node.pid for node in nodes]
        for node in nodes:
            self._kill(state, node)
        for node, cut, pid in zip(nodes, cuts, pids, strict=True):
            power.unmount(self.root, node)
            node.state = NodeState.POWERED_OFF
            save_state(state, self.root)
            journal.record(FaultKind.POWER_OFF, state.lab_id, node=node.name, root=self.root,
                           detail=f"power-off {node.name} (pid {pid}): {cut.words}; "
                                  f"evidence {cut.evidence.name}")
        return "; ".join(f"powered off {cut.node}: {cut.words}" for cut in cuts)

    def _power_on(self, state: LabState, nodes: list[NodeRecord]) -> str:
        """Mount each broker's filesystem again and start it (an unclean shutdown's recovery)."""
        said = []
        for node in nodes:
            if node.state.alive:
                raise KinspectError(f"{node.name} is {node.state}; cannot power-on")
            said.append(self._start_node(state, node, FaultKind.POWER_ON))
        return "; ".join(line.replace("started", "powered on", 1) for line in said)

    def _change(self, state: LabState, node: NodeRecord, kind: FaultKind) -> str:
        """Kill, stop, pause or resume one node: refused when its state does not allow it."""
        need, after, do = {
            FaultKind.KILL: (ALIVE, NodeState.KILLED, self._kill),
            FaultKind.STOP: (ALIVE, NodeState.STOPPED, self._stop),
            FaultKind.PAUSE: ({NodeState.RUNNING}, NodeState.PAUSED, self._pause),
            FaultKind.RESUME: ({NodeState.PAUSED}, NodeState.RUNNING, self._resume),
        }[kind]
        if node.state not in need:
            raise KinspectError(f"{node.name} is {node.state}; cannot {kind} it")
        pid = node.pid
        if kind is FaultKind.RESUME:
            self._keep_replicas(state, f"resume-{node.name}")
        do(state, node)
        node.state = after
        save_state(state, self.root)
        detail = f"{kind} {node.name}"
        if pid:
            detail += f" (pid {pid})"
        journal.record(kind, state.lab_id, node=node.name, root=self.root, detail=detail)
        done = f"{DONE[kind]} {node.name}"
        means = self.means.get(kind)
        if means:
            done += f" ({means})"
        return done

    def _start_node(self, state: LabState, node: NodeRecord,
                    kind: FaultKind = FaultKind.START) -> str:
        if node.state.alive:
            raise KinspectError(f"{node.name} is already {node.state}")
        self._keep_replicas(state, f"start-{node.name}")
        zk = state.zookeeper
        if node.broker_id is not None and zk is not None and zk.state == NodeState.RUNNING:
            # As a real restart would: the old session's registration must be gone first.
            session_ms = int(state.broker_config.get("zookeeper.session.timeout.ms", "18000"))
            wait_registration_gone(zk.address, node.broker_id, session_ms / 1000 + 5,
                                   lambda line: None)
        self._start(state, node)
        node.state = NodeState.RUNNING
        save_state(state, self.root)
        journal.record(kind, state.lab_id, node=node.name,
                       detail=f"{kind} {node.name}", root=self.root)
        return f"started {node.name}{self._served_after_start(state, node)}"

    def _served_after_start(self, state: LabState, node: NodeRecord) -> str:
        """Wait (as `lab up` does) until the running brokers answer and list each other, when
        the cluster can get there: not while partitioned, nor while ZooKeeper or the quorum's
        majority is down. A node that exits meanwhile (a broker whose ZooKeeper session
        expired while it started, say) is started again, up to START_TRIES in all, and said."""
        if state.groups:
            return " (not waited for: the network is partitioned)"
        if not can_converge(state):
            return " (not waited for: ZooKeeper or the controller quorum is down)"
        again = ""
        for tries in range(1, START_TRIES + 1):
            gaps = wait_until_served(serving(state), time.monotonic() + RESTART_WAIT_S,
                                     lambda line: None, lambda: not self._running(state, node))
            if self._running(state, node):
                break
            again = f"; it exited while starting{self._why_dead(node)}"
            if tries == START_TRIES:
                raise KinspectError(f"{node.name} exited while starting, {START_TRIES} times"
                                    f"{self._why_dead(node)}")
            self._start(state, node)
            again += ", and was started again"
        if not gaps:
            return again
        return f"{again} (not yet usable after {RESTART_WAIT_S:.0f} s: {describe_gaps(gaps)})"

    @abstractmethod
    def _kill(self, state: LabState, node: NodeRecord) -> None: ...

    @abstractmethod
    def _stop(self, state: LabState, node: NodeRecord) -> None: ...

    @abstractmethod
    def _start(self, state: LabState, node: NodeRecord) -> None: ...

    @abstractmethod
    def _pause(self, state: LabState, node: NodeRecord) -> None: ...

    @abstractmethod
    def _resume(self, state: LabState, node: NodeRecord) -> None: ...

    # ----- faults on the network -------------------------------------------------------

    def _partition(self, state: LabState, fault: Fault) -> str:
        names = [n.name for n in state.nodes]
        if fault.kind is FaultKind.ISOLATE:
            assert fault.node is not None
            groups = isolate_groups(fault.node, names, fault.scope)
        else:
            groups = parse_groups([",".join(g) for g in fault.groups], names)
        blocked = topology.blocked_pairs(names, groups, fault.clients_with)
        self._check_network_faults(state)
        if state.groups:  # a new partition may reconnect what the old one cut
            self._keep_replicas(state, "repartition")
        self._apply(state, blocked)
        state.groups = [list(g) for g in groups]
        state.clients_with = fault.clients_with
        save_state(state, self.root)
        text = journal.cut_text(groups)
        if fault.clients_with:
            text += f" (clients with {fault.clients_with})"
        if fault.kind is FaultKind.ISOLATE:
            journal.record(FaultKind.ISOLATE, state.lab_id, node=fault.node, groups=groups,
                           detail=text, root=self.root, scope=fault.scope)
            return f"isolated {fault.node} {fault.scope.words_in(state.kraft)}: {text}"
        journal.record(FaultKind.PARTITION, state.lab_id, groups=groups,
                       detail=f"partition {text}", root=self.root)
        return f"partitioned: {text}"

    def _heal(self, state: LabState) -> str:
        self._check_network_faults(state)
        if state.groups:
            self._keep_replicas(state, "heal")
        self._apply(state, set())
        state.groups, state.clients_with = [], None
        save_state(state, self.root)
        journal.record(FaultKind.HEAL, state.lab_id, detail="all partitions removed",
                       root=self.root)
        return "healed every partition"

    def _keep_replicas(self, state: LabState, reason: str) -> None:
        """Before a broker can come back and truncate: keep what every replica holds."""
        with contextlib.suppress(OSError):  # evidence is best effort; the fault must go on
            keep_replicas(self.root, state, reason)

    def _apply(self, state: LabState, blocked: set[frozenset[str]]) -> None:
        """Every node's rules at once, so a partition starts (and heals) everywhere together."""
        addresses = {n.name: [n.host] for n in state.nodes}
        addresses[topology.CLIENTS] = self._client_addresses(state)

        def block(node: NodeRecord) -> None:
            cut = [address for pair in blocked if node.name in pair
                   for other in pair if other != node.name for address in addresses[other]]
            self._block(state, node, cut)

        with ThreadPoolExecutor(max_workers=len(state.nodes)) as pool:
            list(pool.map(block, state.nodes))  # list(): a node's failure is raised here

    def _client_addresses(self, state: LabState) -> list[str]:
        """Where the lab's clients (kinspect, loads) reach the nodes from: the host."""
        return [state.host_address]

    def network_faults_unavailable(self, state: LabState) -> str | None:
        """None when this lab can cut links, else why not (one line)."""
        return None

    @abstractmethod
    def _block(self, state: LabState, node: NodeRecord, addresses: list[str]) -> None:
        """Replace the node's rules: it drops everything to and from these addresses."""

    def shaping_kit(self) -> Kit:
        """What this lab's kernel can shape links with (probed once)."""
        return Kit.broken(f"the {self.name} lab cannot slow links")

    def _slow_link(self, state: LabState, node: NodeRecord, fault: Fault) -> str:
        """Shape one node's link (replacing any shape it had): netem, or tbf + iptables."""
        self._check_network_faults(state)
        assert fault.shape is not None  # Fault checks it
        kit = self.shaping_kit()
        commands = shaping.shape_commands(fault.shape, kit)  # the one-line refusal, if any
        self._in_node(state, node, shaping.unshape_commands(), check=False)
        try:
            self._in_node(state, node, commands, check=True)
        except KinspectError:
            self._in_node(state, node, shaping.unshape_commands(), check=False)
            raise
        how = kit.mechanism(fault.shape)
        slowed = state.slowed_links()
        slowed[node.name] = {**fault.shape.as_dict(), "words": fault.shape.words, "how": how}
        state.extra["slowed"] = slowed
        save_state(state, self.root)
        what = f"{node.name}: {fault.shape.words} ({how})"
        journal.record(FaultKind.SLOW, state.lab_id, node=node.name, root=self.root,
                       detail=f"slow {what}")
        return f"slowed {what}"

    def _unslow_links(self, state: LabState, only: str | None) -> str:
        """One node's link (or every slowed link) back to full speed."""
        slowed = state.slowed_links()
        if only is not None:
            self._node(state, only)  # an unknown node is a one-line error
            if only not in slowed:
                return f"{only}'s link is not slowed"
        names = sorted(slowed)
        if only:
            names = [only]
        if not names:
            return "no link was slowed"
        for name in names:
            self._in_node(state, self._node(state, name), shaping.unshape_commands(),
                          check=False)
            del slowed[name]
            state.extra["slowed"] = slowed
            save_state(state, self.root)
            journal.record(FaultKind.UNSLOW, state.lab_id, node=name, root=self.root,
                           detail=f"unslow {name}: full speed")
        return f"{', '.join(names)} at full speed"

    def _in_node(self, state: LabState, node: NodeRecord, commands: list[list[str]],
                 check: bool) -> None:
        """Run commands in the node's network namespace (check: stop at the first failure)."""
        raise KinspectError(f"the {self.name} lab cannot change a node's network")

    # ----- logs and lookups ------------------------------------------------------------

    @abstractmethod
    def broker_log_dir(self, node: str) -> Path | None:
        """A local folder holding server.log, controller.log and state-change.log of a node."""

    def _require(self) -> LabState:
        state = self.state()
        if state is None:
            raise KinspectError("no lab is running (start one with: kinspect lab up)")
        return state

    def _check_network_faults(self, state: LabState) -> None:
        reason = self.network_faults_unavailable(state)
        if reason:
            raise KinspectError(reason)

    @staticmethod
    def _node(state: LabState, name: str) -> NodeRecord:
        node = state.node(name)
        if node is None:
            names = ", ".join(n.name for n in state.nodes)
            raise KinspectError(f"unknown node {name!r} (nodes: {names})")
        return node


def serving(state: LabState) -> dict[int, str]:
    """The brokers that should answer clients: running ones (not killed, stopped or paused)."""
    return {b.broker_id: b.address for b in state.brokers
            if b.broker_id is not None and b.state == NodeState.RUNNING}


def can_converge(state: LabState) -> bool:
    """Whether started brokers can join: ZooKeeper runs, or a majority of the voters do."""
    if state.zookeeper is not None:
        return state.zookeeper.state == NodeState.RUNNING
    voters = state.voters
    running = [v for v in voters if v.state == NodeState.RUNNING]
    return 2 * len(running) > len(voters)


def plan_nodes(brokers: int, address: Callable[[int, str], tuple[str, int]],
               controllers: int | None = None,
               controller_port: Callable[[int], int] | None = None) -> list[NodeRecord]:
    """zk1 and kafka1..N (broker id = N), or in KRaft ctl1..M (node id 100 + M) and
    kafka1..N; with M = 0 every broker is also a voter, its controller listener at
    `controller_port(index)`. `address(index, name)` gives each node its host and port."""
    nodes: list[NodeRecord] = []
    for index, name in enumerate(node_names(brokers, controllers)):
        host, port = address(index, name)
        broker_id = topology.broker_id_of(name)
        combined_port = None  # a broker's own controller listener, in combined mode
        if controllers == 0 and controller_port is not None:
            combined_port = controller_port(index)
        nodes.append(NodeRecord(
            name=name, role=_role(broker_id, controllers), host=host, port=port,
            broker_id=broker_id, node_id=topology.controller_id_of(name),
            controller_port=combined_port))
    return nodes


def _role(broker_id: int | None, controllers: int | None) -> Role:
    """A node's role: a broker, else ZooKeeper's (no controllers: a ZooKeeper lab) or a
    dedicated controller."""
    if broker_id is not None:
        return "broker"
    if controllers is None:
        return "zookeeper"
    return "controller"


def _asked_extra(options: UpOptions) -> dict[str, object]:
    """The state's extra parts `up` was asked for: KRaft's cluster id and quorum, the format's
    features, the log dirs and heap when not the default."""
    extra: dict[str, object] = {}
    if options.kraft:
        extra.update(cluster_id=new_cluster_id(), controllers=options.dedicated_controllers)
    if options.features:
        extra["features"] = dict(options.features)
    if options.log_dirs > 1:
        extra["log_dirs"] = options.log_dirs
    if options.broker_heap:
        extra["broker_heap"] = options.broker_heap
    if options.power:
        extra["power"] = {"expire_s": power.kernel_expire_s()}
    return extra


def kraft_roles(node: NodeRecord) -> str:
    """What a KRaft node is, in `lab up`'s progress lines."""
    if node.role == "controller":
        return "controller"
    if node.controller_address:
        return "broker + controller"
    return "broker"


def kraft_address(node: NodeRecord) -> str | None:
    """Where a starting KRaft node answers: a controller on its controller listener."""
    if node.role == "controller":
        return node.controller_address
    return node.address


_ERROR_WORDS = ("Exception", "ERROR", "FATAL")


def _an_error(line: str) -> bool:
    """A log line that says why a node died."""
    return any(word in line for word in _ERROR_WORDS)


def quorum_words(state: LabState) -> str:
    """`, KRaft with 3 controllers (combined)` for `lab up`'s journal line; "" for ZooKeeper."""
    if not state.kraft:
        return ""
    count = len(state.voters)
    words = f", KRaft with {count} controller"
    if count != 1:
        words += "s"
    if state.extra.get("controllers") == 0:
        words += " (combined)"
    return words


def new_lab_id() -> str:
    return uuid.uuid4().hex[:12]


def status_json(state: LabState, network_faults: bool) -> dict[str, Any]:
    """The stable `lab status --json` shape other tools and scripts rely on."""
    return {
        "backend": state.backend,
        "lab_id": state.lab_id,
        "network": state.network,
        "network_faults": network_faults,
        "rootless_holder": state.extra.get("userns_holder"),
        "preset": state.preset,
        "kafka_version": state.kafka_version,
        # the levels kinspect formatted the quorum with; None: the release's own defaults
        # (kinspect does not ask the cluster which: kafka-features describe does)
        "features": state.extra.get("features"),
        "log_dirs": int(state.extra.get("log_dirs", 1)),  # per broker (lab up --log-dirs)
        "power": power.enabled(state),  # the brokers' disks can lose power (lab up --power)
        "broker_heap": heap_of("broker", state),  # each broker's -Xmx (lab up --broker-heap)
        "mode": state.mode,
        "bootstrap": state.bootstrap,
        "zookeeper": state.zookeeper_address,
        "controllers": _controllers_json(state),
        "nodes": [_node_json(node) for node in state.nodes],
        "groups": state.groups,
        "slowed": state.slowed_links(),
        "sasl": _sasl_json(state),
        # --sasl oauthbearer: where clients get tokens (the secret: a file's name, never its text)
        "oauth": _oauth_json(state),
        "tls": _tls_json(state),
        "authorizer": _authorizer_json(state),
        "clients_with": state.clients_with,
        "broker_config": {k: state.broker_config[k] for k in presets.SHOWN_KEYS
                          if k in state.broker_config},
        "created_at": state.created_at,
    }


def _node_json(node: NodeRecord) -> dict[str, object]:
    """One node of `lab status --json`: the ids and addresses it has, in a fixed order."""
    entry: dict[str, object] = {"name": node.name, "role": node.role}
    if node.broker_id is not None:
        entry["broker_id"] = node.broker_id
    if node.node_id is not None:
        entry["node_id"] = node.node_id
    if node.controller_port is not None:
        entry["controller_address"] = node.controller_address
    entry.update(state=node.state, address=node.address, pid=node.pid)
    if node.netns:
        entry["netns"] = node.netns
    if node.container:
        entry["container"] = node.container
    return entry


def _controllers_json(state: LabState) -> dict[str, str] | None:
    if not state.kraft:
        return None
    return {str(i): address for i, address in state.controller_addresses.items()}


def _sasl_json(state: LabState) -> dict[str, object] | None:
    if "sasl" not in state.extra:
        return None
    shown = {k: v for k, v in state.extra["sasl"].items() if k != "port_offset"}
    return {"bootstrap": sasl.bootstrap(state), **shown}


_OAUTH_SHOWN = ("token_endpoint", "client_id", "client_secret_file", "audience", "issuer", "jwks")


def _oauth_json(state: LabState) -> dict[str, object] | None:
    if not oauth.enabled(state):
        return None
    return {k: state.extra["oauth"].get(k) for k in _OAUTH_SHOWN}


def _tls_json(state: LabState) -> dict[str, object] | None:
    if not tls.enabled(state):
        return None
    return {"ca": tls.ca_file(state), "ssl_bootstrap": tls.ssl_bootstrap(state),
            "sasl_ssl_bootstrap": tls.sasl_ssl_bootstrap(state)}


def _authorizer_json(state: LabState) -> dict[str, object] | None:
    if not authorizer.enabled(state):
        return None
    users = authorizer.load_users(Path(state.extra["authorizer"]["users_dir"]))
    return {**state.extra["authorizer"], "users": [user.name for user in users]}
