"""Config files and JVM command lines for lab nodes, and checking that a pid is really ours.

A pid alone is not proof: after a reboot or a crash it may belong to someone else. Every lab
JVM carries `-Dkinspect.lab=<lab id>` on its command line, and we check for it before
signalling anything.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab import authorizer, disks, oauth, sasl, tls
from kinspect.lab.dist import STORAGE_TOOL, KafkaDist
from kinspect.lab.state import LabState, NodeRecord

ZK_HEAP = "128m"
BROKER_HEAP = "384m"
CONTROLLER_HEAP = "256m"
# lab up --broker-heap: the range a broker's -Xmx may take (a 384m broker holds ~5,000 logs;
# a lab of tens of thousands of partitions needs more, within what the host has).
BROKER_HEAP_RANGE_MIB = (256, 16_384)
CONTROLLER_PORT = 9093  # a KRaft controller's listener, on each node's own address

# Small, quiet JVMs: 2 cores have to carry ZooKeeper, three brokers and the tools. Both backends
# use these; every node logs in UTC, which is how the post-mortem reads broker-log stamps.
JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:ParallelGCThreads=1",
    "-XX:ConcGCThreads=1",
    "-XX:CICompilerCount=2",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
    "-Duser.timezone=UTC",
]


def node_dir(root: Path, node: str) -> Path:
    return root / "nodes" / node


def render_zookeeper(node: NodeRecord, data: Path) -> str:
    return "\n".join(
        [
            f"dataDir={data}",
            f"clientPort={node.port}",
            f"clientPortAddress={node.host}",
            "maxClientCnxns=0",
            "tickTime=1000",
            "minSessionTimeout=2000",
            "maxSessionTimeout=60000",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "",
        ]
    )


def render_broker(node: NodeRecord, state: LabState, data: Path,
                  tls_dir: Path | None = None) -> str:
    """server.properties of a broker, or of a KRaft controller (or of both in one node);
    `tls_dir`: where the node finds its key and the lab's CA (default: the lab's own)."""
    if state.kraft:
        return _properties(_kraft_settings(node, state, data, tls_dir))
    assert state.zookeeper is not None
    settings = {
        "broker.id": str(node.broker_id),
        "listeners": f"PLAINTEXT://{node.address}",
        "advertised.listeners": f"PLAINTEXT://{node.address}",
        "log.dirs": broker_log_dirs(state, data),
        "zookeeper.connect": state.zookeeper.address,
        **state.broker_config,
        **secure_listeners(node, state, tls_dir),
        **authorizer.broker_settings(state),
    }
    return _properties(settings)


def broker_log_dirs(state: LabState, data: Path) -> str:
    """log.dirs of a broker: `data`, and with `lab up --log-dirs N` data2… (small disks)."""
    return ",".join(map(str, disks.log_dirs(data, int(state.extra.get("log_dirs", 1)))))


def secure_listeners(node: NodeRecord, state: LabState, tls_dir: Path | None = None
                     ) -> dict[str, str]:
    """Listener settings of a broker with SASL and/or TLS listeners beside PLAINTEXT (which
    stays for inter-broker traffic and the lab's tools); empty for a plaintext-only lab."""
    extra = [*sasl.listeners(node, state), *tls.listeners(node, state)]
    if not extra:
        return {}
    pairs = [("PLAINTEXT", node.address), *extra]
    joined = ",".join(f"{name}://{address}" for name, address in pairs)
    return {
        "listeners": joined, "advertised.listeners": joined,
        "listener.security.protocol.map": ",".join(f"{name}:{name}" for name, _ in pairs),
        "inter.broker.listener.name": "PLAINTEXT",
        **sasl.broker_settings(state, [name for name, _ in extra if name.startswith("SASL")]),
        **tls.broker_settings(node, state, tls_dir),
        # a container's copies sit beside its TLS files (/kinspect/conf/oauth)
        **oauth.broker_settings(state, [name for name, _ in extra if name.startswith("SASL")],
                                tls_dir.parent / "oauth" if tls_dir else None),
    }


def _properties(settings: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def quorum_voters(state: LabState) -> str:
    """controller.quorum.voters: id@host:port of every voter (a static quorum)."""
    return ",".join(f"{n.kraft_id}@{n.controller_address}" for n in state.voters)


def _kraft_settings(node: NodeRecord, state: LabState, data: Path,
                    tls_dir: Path | None = None) -> dict[str, str]:
    """A KRaft node: the broker's settings as in ZooKeeper mode, minus ZooKeeper, plus its
    roles, its node id and the quorum it belongs to or asks."""
    roles = [r for r, on in (("broker", node.role == "broker"),
                             ("controller", node.controller_address is not None)) if on]
    base = {"process.roles": ",".join(roles), "node.id": str(node.kraft_id),
            "controller.quorum.voters": quorum_voters(state),
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(data) if node.role == "controller" else broker_log_dirs(state, data)}
    controller = (f"CONTROLLER://{node.controller_address}"
                  if node.controller_address is not None else "")
    if node.role == "controller":
        return {**base, "listeners": controller,
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                **{k: v for k, v in state.broker_config.items() if k in CONTROLLER_KEYS},
                **authorizer.broker_settings(state)}
    listeners = secure_listeners(node, state, tls_dir) or {
        "listeners": f"PLAINTEXT://{node.address}",
        "advertised.listeners": f"PLAINTEXT://{node.address}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT"}
    listeners["listener.security.protocol.map"] += ",CONTROLLER:PLAINTEXT"
    if controller:
        listeners["listeners"] += "," + controller
    return {**base, **state.broker_config, **listeners, **authorizer.broker_settings(state)}


# What a dedicated controller takes of the lab's settings: those that decide elections and
# broker liveness; the rest (thread pools aside) are a broker's.
CONTROLLER_KEYS = ("broker.session.timeout.ms", "broker.heartbeat.interval.ms",
                   "unclean.leader.election.enable", "min.insync.replicas",
                   "default.replication.factor", "auto.leader.rebalance.enable",
                   "num.network.threads", "num.io.threads", "background.threads")


POWER_MOUNT = "power"  # a power lab's broker writes through kinspect's filesystem (power.py)


def log_root(root: Path, node: NodeRecord, state: LabState) -> Path:
    """Where a node's log dir is as the node sees it: its data dir, or in a lab made with
    --power a broker's view of it through the filesystem that can lose power."""
    base = node_dir(root, node.name)
    if node.role == "broker" and state.extra.get("power"):
        return base / POWER_MOUNT
    return base / "data"


def write_config(root: Path, node: NodeRecord, state: LabState) -> Path:
    """Write the node's properties file (data and logs live next to it) and return its path."""
    base = node_dir(root, node.name)
    data, logs = log_root(root, node, state), base / "logs"
    data.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    if node.role == "zookeeper":
        path = base / "zookeeper.properties"
        path.write_text(render_zookeeper(node, data))
    else:
        path = base / "server.properties"
        path.write_text(render_broker(node, state, data))
    return path


def clear_foreign_data(data: Path, cluster_id: str | None) -> bool:
    """Clear a node's data that an earlier lab of another cluster left (True when it did).

    A broker refuses to start on it: a KRaft node on another cluster id's, a ZooKeeper-mode
    broker on a KRaft node's (meta.properties version 1). That cluster is gone with its lab.
    cluster_id None: a ZooKeeper lab, whose cluster id lives in its own zk1 and is kept."""
    meta = data / "meta.properties"
    if not meta.exists():
        return False
    lines = meta.read_text(errors="replace").splitlines()
    ours = (f"cluster.id={cluster_id}" in lines) if cluster_id else "version=1" not in lines
    if ours:
        return False
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True, exist_ok=True)
    return True


def format_storage(kafka: KafkaDist, config: Path, data: Path, cluster_id: str,
                   features: Mapping[str, int] | None = None) -> None:
    """`kafka-storage format` once, before a KRaft node first starts (a restart keeps it);
    `features` (4.x) are the levels the quorum starts with, the release's defaults otherwise."""
    clear_foreign_data(data, cluster_id)
    if (data / "meta.properties").exists():
        return
    result = subprocess.run(
        kafka.tool_command(STORAGE_TOOL, "format", "-t", cluster_id, "-c",
                           str(config), "--ignore-formatted",
                           *(arg for name, level in (features or {}).items()
                             for arg in ("--feature", f"{name}={level}"))),
        capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or [f"exit {result.returncode}"]
        raise KinspectError(f"formatting {data} for KRaft failed: {lines[-1][:300]}")


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64, as `kafka-storage random-uuid`,
    and as Kafka's Uuid.randomUuid never one starting with '-' (1 in 64 would: kafka-storage's
    argument parser then takes `-t -Xyz…` for a missing value and the lab fails to format)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def jvm_size_mib(size: str) -> int:
    """A JVM size ("384m", "2g", "512k") in MiB."""
    match = re.fullmatch(r"(\d+)([kmgt]?)", size.strip().lower())
    if not match:
        raise ValueError(f"not a JVM size: {size!r}")
    scale = {"": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024**2}[match.group(2)]
    return int(int(match.group(1)) * scale)


def broker_heap_problem(size: str) -> str | None:
    """Why `size` cannot be a broker's heap, or None."""
    try:
        value = jvm_size_mib(size)
    except ValueError:
        return f"expected a JVM size such as 768m or 2g, not {size!r}"
    low, high = BROKER_HEAP_RANGE_MIB
    if not low <= value <= high:
        return f"must be between {low}m and {high // 1024}g, not {size}"
    return None


def heap_of(role: str, state: LabState | None = None) -> str:
    """A node's -Xmx in a lab: `heap_for` with the heap its `lab up --broker-heap` chose."""
    chosen = None
    if state is not None and state.extra.get("broker_heap"):
        chosen = str(state.extra["broker_heap"])
    return heap_for(role, chosen)


def heap_for(role: str, chosen: str | None) -> str:
    """A node's -Xmx: ZooKeeper's own; the chosen heap for the brokers and for dedicated KRaft
    controllers (they hold the same metadata image), else the role's default."""
    if role == "zookeeper":
        return ZK_HEAP
    if chosen:
        return chosen
    if role == "controller":
        return CONTROLLER_HEAP
    return BROKER_HEAP


def java_command(dist: KafkaDist, root: Path, node: NodeRecord, lab_id: str,
                 kraft: bool = False, flags: tuple[str, ...] = (), heap: str | None = None,
                 ) -> list[str]:
    """The JVM command line for a node, tagged with the lab id (`flags`: a broker's extra
    system properties, e.g. the key set OAUTHBEARER may read; `heap`: its -Xmx, heap_of)."""
    base = node_dir(root, node.name)
    is_zk = node.role == "zookeeper"
    heap = heap or heap_of(node.role)
    main = "org.apache.zookeeper.server.quorum.QuorumPeerMain" if is_zk else "kafka.Kafka"
    config = base / ("zookeeper.properties" if is_zk else "server.properties")
    return [
        dist.java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *JVM_FLAGS,
        *flags,
        f"-Dkinspect.lab={lab_id}",
        f"-Dkinspect.node={node.name}",
        *dist.logging_flags(base / "logs", role=node.role, kraft=kraft),
        "-Dzookeeper.admin.enableServer=false",
        "-cp",
        dist.classpath,
        main,
        str(config),
    ]
