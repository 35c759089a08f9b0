"""Config files and JVM command lines for lab nodes, and checking that a pid is really ours.

A pid alone is not proof: after a reboot or a crash it may belong to someone else. Every lab
JVM carries `-Dkinspect.lab=<lab id>` on its command line, and we check for it before
signalling anything.
"""

from __future__ import annotations

from pathlib import Path

from kinspect.lab import sasl
from kinspect.lab.dist import KafkaDist, resource_path
from kinspect.lab.state import LabState, NodeRecord

ZK_HEAP = "128m"
BROKER_HEAP = "384m"

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


def render_broker(node: NodeRecord, state: LabState, data: Path) -> str:
    settings = {
        "broker.id": str(node.broker_id),
        "listeners": f"PLAINTEXT://{node.address}",
        "advertised.listeners": f"PLAINTEXT://{node.address}",
        "log.dirs": str(data),
        "zookeeper.connect": state.zookeeper.address,
        **state.broker_config,
        **sasl.broker_settings(node, state),
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def write_config(root: Path, node: NodeRecord, state: LabState) -> Path:
    """Write the node's properties file (data and logs live next to it) and return its path."""
    base = node_dir(root, node.name)
    data, logs = base / "data", base / "logs"
    data.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    if node.role == "zookeeper":
        path = base / "zookeeper.properties"
        path.write_text(render_zookeeper(node, data))
    else:
        path = base / "server.properties"
        path.write_text(render_broker(node, state, data))
    return path


def java_command(dist: KafkaDist, root: Path, node: NodeRecord, lab_id: str) -> list[str]:
    """The JVM command line for a node, tagged with the lab id."""
    base = node_dir(root, node.name)
    is_zk = node.role == "zookeeper"
    log4j = resource_path("zookeeper-log4j.properties" if is_zk else "broker-log4j.properties")
    heap = ZK_HEAP if is_zk else BROKER_HEAP
    main = "org.apache.zookeeper.server.quorum.QuorumPeerMain" if is_zk else "kafka.Kafka"
    config = base / ("zookeeper.properties" if is_zk else "server.properties")
    return [
        dist.java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *JVM_FLAGS,
        f"-Dkinspect.lab={lab_id}",
        f"-Dkinspect.node={node.name}",
        f"-Dkafka.logs.dir={base / 'logs'}",
        f"-Dlog4j.configuration=file:{log4j}",
        "-Dzookeeper.admin.enableServer=false",
        "-cp",
        dist.classpath,
        main,
        str(config),
    ]


def process_state(pid: int | None, lab_id: str) -> str:
    """'running', 'paused' or 'dead' for a pid, counting it dead unless it carries our tag."""
    if not pid:
        return "dead"
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "dead"
    if f"-Dkinspect.lab={lab_id}".encode() not in cmdline:
        return "dead"
    code = stat.rsplit(")", 1)[1].split()[0]
    if code in {"Z", "X"}:
        return "dead"
    return "paused" if code in {"T", "t"} else "running"
