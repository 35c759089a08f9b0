"""The docker backend: the same lab in containers, driven through the Docker SDK.

Every node is two containers sharing one network namespace: `<node>-net` holds the node's
address on the lab network and its fault rules (it alone has NET_ADMIN), and `<node>` runs the
JVM. Killing, stopping or pausing the JVM leaves the namespace and its rules alone, as a process
lab's namespace outlives its process. The network is `internal`: nodes reach each other and this
host, nothing else. Everything made carries the label kinspect.lab=<lab id>, and only what
carries our lab's label is ever touched; someone else's container, whatever its name, is safe.
"""

from __future__ import annotations

import functools
import io
import ipaddress
import shlex
import shutil
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import docker
from docker.errors import APIError, DockerException, NotFound
from docker.types import IPAMConfig, IPAMPool

from kinspect.errors import KinspectError
from kinspect.lab import (
    dist,
    docker_engine,
    firewall,
    images,
    oauth,
    power,
    reach,
    shaping,
    tls,
)
from kinspect.lab.backend import LabBackend, Progress, UpOptions, new_lab_id, plan_nodes
from kinspect.lab.netns import routed_networks
from kinspect.lab.nodes import (
    CONTROLLER_PORT,
    JVM_FLAGS,
    heap_of,
    node_dir,
    render_broker,
    render_zookeeper,
    write_config,
)
from kinspect.lab.shaping import Kit
from kinspect.lab.state import LabState, NodeRecord, NodeState, clear_state, load_state, save_state
from kinspect.paths import lab_dir

LABEL = "kinspect.lab"
NODE_LABEL = "kinspect.node"
PART_LABEL = "kinspect.part"  # "net": holds the namespace; "jvm": runs ZooKeeper or Kafka
BLOCK = ipaddress.ip_network("198.19.0.0/16")  # process labs take 198.18.x; docker labs 198.19.x
LAST_LAB_SUBNET = 238  # .239 is docker-compose.yml's; 198.19.240.0/20 dockerd's (docker/engine.sh)
STOP_GRACE_S = 30
IN_CONTAINER = Path("/kinspect/data")
OAUTH_IN_CONTAINER = Path("/kinspect/conf/oauth")  # the key set OAUTHBEARER tokens are checked by
TLS_IN_CONTAINER = Path("/kinspect/conf/tls")  # the node's key and certificate, the lab's CA
P = ParamSpec("P")
R = TypeVar("R")


def engine_errors(method: Callable[P, R]) -> Callable[P, R]:
    """A refusal or hiccup of the Docker engine becomes a one-line KinspectError."""
    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except DockerException as exc:
            text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
            raise KinspectError(f"Docker engine: {str(text).splitlines()[0][:200]}") from None
    return wrapper


class DockerBackend(LabBackend):
    name = "docker"
    means = {"kill": "docker kill", "pause": "docker pause"}

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or lab_dir()
        self._kit: Kit | None = None

    @property
    def client(self) -> docker.DockerClient:
        return docker_engine.shared_client()

    # ----- lifecycle -------------------------------------------------------------------

    @engine_errors
    def _plan(self, options: UpOptions, progress: Progress) -> LabState:
        if options.network not in {"auto", "docker"}:
            raise KinspectError(f"--network {options.network} is for the process backend; "
                                "docker labs always get their own network")
        number = self._free_subnet()
        controllers = options.dedicated_controllers
        firsts = 1 if controllers is None else controllers

        def port(index: int) -> int:
            if index >= firsts:
                return 9092
            return 2181 if controllers is None else CONTROLLER_PORT

        nodes = plan_nodes(options.brokers, lambda index, name: (
            f"198.19.{number}.{10 + index}", port(index)), controllers,
            lambda index: CONTROLLER_PORT)
        kafka = dist.ensure(progress, version=options.kafka)
        image = images.ensure(self.client, kafka, progress)
        lab_id = new_lab_id()
        for node in nodes:
            node.container = f"ks-{lab_id[:8]}-{node.name}"
        return self._new_state(options, nodes, kafka.version, "docker", number,
                               f"198.19.{number}.1", lab_id=lab_id, image=image,
                               docker_network=f"ks-{lab_id[:8]}")

    def _free_subnet(self) -> int:
        """The first 198.19.<n>.0/24 that no route here and no Docker network already uses."""
        taken = [net for net in routed_networks() if net.overlaps(BLOCK)]
        for network in self.client.networks.list():
            for pool in (network.attrs.get("IPAM") or {}).get("Config") or []:
                try:
                    subnet = ipaddress.ip_network(pool.get("Subnet", ""), strict=False)
                except ValueError:
                    continue
                if subnet.version == 4:
                    taken.append(subnet)
        for number in range(1, LAST_LAB_SUBNET + 1):
            candidate = ipaddress.IPv4Network(f"198.19.{number}.0/24")
            if not any(candidate.overlaps(net) for net in taken):
                return number
        raise KinspectError("no free address block in 198.19.0.0/16 for a docker lab")

    @engine_errors
    def _build(self, state: LabState, options: UpOptions, progress: Progress) -> None:
        deadline = time.monotonic() + options.wait_s
        labels = {LABEL: state.lab_id}
        subnet = f"198.19.{state.slot}.0/24"
        network = self.client.networks.create(
            state.extra["docker_network"], driver="bridge", internal=True, labels=labels,
            ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=subnet, gateway=state.host_address)]))
        reach.join_lab_network(network, state)  # kinspect's relay container, if here
        progress(f"network: docker network {state.extra['docker_network']} (internal), {subnet}, "
                 f"image {state.extra['image']}")
        for node in state.nodes:
            self._make_namespace(state, node)
        self._start_cluster(state, deadline, progress)

    def _labels(self, state: LabState, node: NodeRecord, part: str) -> dict[str, str]:
        return {LABEL: state.lab_id, NODE_LABEL: node.name, PART_LABEL: part}

    def _make_namespace(self, state: LabState, node: NodeRecord) -> None:
        """The `-net` container: the node's address and fault rules, alive for the whole lab."""
        api, network = self.client.api, state.extra["docker_network"]
        created = api.create_container(
            state.extra["image"], command=["kinspect-node", "net"], name=f"{node.container}-net",
            hostname=node.name, labels=self._labels(state, node, "net"),
            host_config=api.create_host_config(cap_add=["NET_ADMIN"], network_mode=network),
            networking_config=api.create_networking_config(
                {network: api.create_endpoint_config(ipv4_address=node.host)}))
        api.start(created["Id"])
        self._exec(state, node, firewall.setup_commands())

    def _launch(self, state: LabState, node: NodeRecord) -> None:
        """Create the node's JVM container in its namespace, put its config in, start it."""
        api = self.client.api
        is_zk = node.role == "zookeeper"
        role = node.role  # zookeeper, broker or controller: kinspect-node's roles
        heap = heap_of(role, state)
        self._data_dir(node)
        config_file = write_config(self.root, node, state)
        data = self._storage(state, node, config_file)  # formatted here, on what it mounts
        created = api.create_container(
            state.extra["image"], command=["kinspect-node", role], name=node.container,
            labels=self._labels(state, node, "jvm"),
            environment=_node_environment(state, node, heap),
            host_config=api.create_host_config(
                network_mode=f"container:{node.container}-net",
                binds={str(data): {"bind": str(IN_CONTAINER), "mode": "rw"}}))
        if is_zk:
            config = render_zookeeper(node, IN_CONTAINER)
        else:
            config = render_broker(node, state, IN_CONTAINER, TLS_IN_CONTAINER)
        files: dict[str, str | bytes] = {f"{role}.properties": config}
        if tls.enabled(state) and node.role == "broker":  # copies: the container sees no host path
            files.update({f"{TLS_IN_CONTAINER.name}/{name}": data
                          for name, data in tls.node_files(self.root, node).items()})
        if oauth.enabled(state) and node.role == "broker":
            files.update({f"{OAUTH_IN_CONTAINER.name}/{name}": data
                          for name, data in oauth.node_files(state).items()})
        api.put_archive(created["Id"], "/kinspect/conf", _tar(files))
        self._start(state, node)

    def _data_dir(self, node: NodeRecord) -> Path:
        """The node's data lives on this machine: it outlives a killed container like a disk,
        and the replica snapshots read segments from it directly. A container is made only when
        the lab is built, and starts on empty data, as a docker lab always has (a process lab's
        leftovers in the same home are not mixed in)."""
        path = node_dir(self.root, node.name) / "data"
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True, exist_ok=True)
        return path

    @engine_errors
    def _teardown(self, state: LabState, progress: Progress) -> None:
        ours = {"label": f"{LABEL}={state.lab_id}"}
        containers = self.client.containers.list(all=True, filters=ours)
        # JVMs first: a `-net` container cannot go while a JVM still shares its namespace.
        for container in sorted(containers, key=lambda c: c.labels.get(PART_LABEL) == "net"):
            try:
                container.remove(force=True)
            except NotFound:
                continue
        for network in self.client.networks.list(filters=ours):
            reach.leave_lab_network(self.client, network)
            network.remove()
        if containers:
            progress(f"removed {len(containers)} containers and network "
                     f"{state.extra.get('docker_network')} of lab {state.lab_id}")
        if power.unmount_all(self.root, state):
            progress("unmounted the brokers' power filesystems")
        clear_state(self.root)

    @engine_errors
    def state(self) -> LabState | None:
        state = load_state(self.root)
        if state is None:
            return None
        found = {c.labels.get(NODE_LABEL): c for c in self._containers(state, "jvm")}
        for node in state.nodes:
            container = found.get(node.name)
            actual, node.pid = "missing", None
            if container:
                actual, node.pid = container.status, container.attrs["State"].get("Pid") or None
            if actual in {"running", "paused"}:
                node.state = NodeState(actual)
            elif node.state.alive:
                node.state = NodeState.EXITED
        return state

    def _containers(self, state: LabState, part: str) -> list[Any]:
        return list(self.client.containers.list(
            all=True, filters={"label": [f"{LABEL}={state.lab_id}", f"{PART_LABEL}={part}"]}))

    def _container(self, state: LabState, node: NodeRecord, part: str = "jvm") -> Any:
        """The node's container, checked to be this lab's (a same-named stranger is refused)."""
        assert node.container is not None
        name = node.container + ("-net" if part == "net" else "")
        try:
            container = self.client.containers.get(name)
        except NotFound:
            raise KinspectError(f"{node.name}'s container {name} is gone") from None
        if (container.labels.get(LABEL), container.labels.get(NODE_LABEL)) != (state.lab_id, node.name):
            raise KinspectError(f"container {name} is not one of this lab's; not touching it")
        return container

    def _running(self, state: LabState, node: NodeRecord) -> bool:
        return bool(self._container(state, node).status == "running")

    def _where(self, node: NodeRecord) -> str:
        return f" (container {node.container})"

    # ----- faults ----------------------------------------------------------------------

    @engine_errors
    def _kill(self, state: LabState, node: NodeRecord) -> None:
        container = self._container(state, node)
        container.kill()  # SIGKILL, also to a paused container's frozen JVM
        container.wait(timeout=10)

    @engine_errors
    def _stop(self, state: LabState, node: NodeRecord) -> None:
        container = self._container(state, node)
        if container.status == "paused":
            container.unpause()  # a frozen JVM cannot shut down cleanly
        container.stop(timeout=STOP_GRACE_S)

    @engine_errors
    def _start(self, state: LabState, node: NodeRecord) -> None:
        container = self._container(state, node)
        if node.role == "broker" and power.enabled(state):  # powered on: its disk first
            power.mount(self.root, node, power.expire_s(state))
        container.start()
        container.reload()
        node.pid, node.state = container.attrs["State"].get("Pid") or None, NodeState.RUNNING
        save_state(state, self.root)

    @engine_errors
    def _pause(self, state: LabState, node: NodeRecord) -> None:
        self._container(state, node).pause()  # the cgroup freezer: the JVM stops as under SIGSTOP

    @engine_errors
    def _resume(self, state: LabState, node: NodeRecord) -> None:
        self._container(state, node).unpause()

    @engine_errors
    def _block(self, state: LabState, node: NodeRecord, addresses: list[str]) -> None:
        self._exec(state, node, firewall.block_commands(addresses))

    def _client_addresses(self, state: LabState) -> list[str]:
        """The host, and the addresses kinspect's relay containers take on the lab's network:
        where the host cannot reach the lab, that is where the clients run."""
        return [state.host_address, *reach.relay_addresses(state)]

    def _exec(self, state: LabState, node: NodeRecord, commands: list[list[str]]) -> None:
        """Run commands in the node's namespace container, all in one exec, stopping at a failure."""
        script = " && ".join(shlex.join(command) for command in commands)
        code, output = self._container(state, node, "net").exec_run(["sh", "-c", script])
        text = output.decode(errors="replace").strip()
        if code != 0 and text:
            raise KinspectError(f"{node.name}: {text.splitlines()[-1]}")
        if code != 0:
            raise KinspectError(f"{node.name}: exit {code}")

    def shaping_kit(self) -> Kit:
        """Ask the kernel through a throwaway container, as the process lab asks a namespace."""
        if self._kit is None:
            self._kit = self._probe_kit()
        return self._kit

    def _probe_kit(self) -> Kit:
        kafka = dist.installed()
        try:
            tag = images.kafka_tag(kafka) if kafka else None
            if tag is None or not images.have(self.client, tag):
                return Kit.broken("the docker lab's image is not built yet (kinspect lab images)")
            output = self.client.containers.run(
                tag, ["sh", "-c", shaping.PROBE_SCRIPT], cap_add=["NET_ADMIN"],
                network_mode="none", remove=True, stderr=True)
        except (docker.errors.ContainerError, KinspectError, APIError) as exc:
            return Kit.broken(f"cannot probe link shaping: {exc}")
        return shaping.kit_from_probe(output.decode(errors="replace"))

    @engine_errors
    def _in_node(self, state: LabState, node: NodeRecord, commands: list[list[str]],
                 check: bool) -> None:
        if check:
            self._exec(state, node, commands)
            return
        script = "; ".join(shlex.join(command) + " 2>/dev/null" for command in commands)
        self._container(state, node, "net").exec_run(["sh", "-c", script + "; true"])

    def broker_log_dir(self, node: str) -> Path | None:
        """Copy /kinspect/logs out of the node's container (running or not) and return the copy."""
        state = load_state(self.root)
        record = state.node(node) if state else None
        if state is None or record is None or record.container is None:
            return None
        try:
            stream, _ = self._container(state, record).get_archive("/kinspect/logs")
        except (KinspectError, NotFound, APIError):
            return None
        target = node_dir(self.root, node)
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(target, filter="data")
            else:  # Python before 3.11.4 (Debian bookworm's, in the kinspect image)
                archive.extractall(target)
        return target / "logs"


def _node_environment(state: LabState, node: NodeRecord, heap: str) -> dict[str, str]:
    """What kinspect-node reads in a node's container: the lab, the node, its heap and JVM
    flags (a broker's OAuth ones too) and, in KRaft, the cluster id (it logs the quorum's lines
    too)."""
    flags = list(JVM_FLAGS)
    if node.role == "broker":
        flags += oauth.jvm_flags(state, OAUTH_IN_CONTAINER)
    environment = {"KINSPECT_LAB": state.lab_id, "KINSPECT_NODE": node.name,
                   "KINSPECT_HEAP": heap, "KINSPECT_JVM_OPTS": " ".join(flags)}
    if state.kraft:
        environment["KINSPECT_CLUSTER_ID"] = state.extra["cluster_id"]
    return environment


def _tar(files: dict[str, str | bytes]) -> bytes:
    """A tar of these files (folders in their names made first), for put_archive."""
    buffer = io.BytesIO()
    folders = sorted({str(Path(name).parent) for name in files} - {"."})
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for folder in folders:
            entry = tarfile.TarInfo(folder)
            entry.type, entry.mode, entry.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            archive.addfile(entry)
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
