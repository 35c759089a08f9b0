"""What this machine can do for a lab, found by trying: `kinspect doctor`'s lab-side probes.

A workshop attendee needs to know before the workshop, not in it, whether partitions and slow
links will work here and what one step would fix it. Settings alone do not tell (a container
without CAP_NET_ADMIN, a kernel without netem, an AppArmor-confined unshare), so the network
checks make a throwaway namespace and try the very qdiscs, links and rules a lab makes, then
remove it. Every check is a `Check` value; none starts a lab or raises: a check that could not
be made is UNKNOWN with its reason. The post-mortem's checks (Spark) come from the layer above
and join through `diagnose(extra=...)`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from kinspect import extras
from kinspect.errors import KinspectError, error_line
from kinspect.lab import dist, shaping, topology, userns
from kinspect.lab.backend import UpOptions
from kinspect.lab.nodes import heap_for, jvm_size_mib
from kinspect.model.exits import MISSING, READY

JAVA_MIN = 17
# A lab JVM's memory beyond its heap (metaspace, code cache, thread stacks, GC and direct
# buffers): an upper estimate. Measured here, an idle loopback lab's RSS was 71 MiB (zk1) and
# 285-294 MiB per broker; under load a broker's heap fills towards its -Xmx as well.
JVM_OVERHEAD_MIB = 200
KINSPECT_MIB = 300  # the TUI or a load run beside the lab
CPUS_WANTED = 2  # the lab's JVM flags are sized so that 2 cores carry ZooKeeper and 3 brokers
TIMEOUT_S = 20
PROBE_NS = f"ks-doctor-{os.getpid()}"
# What a lab's network is made of, tried after shaping's own probe (one name echoed per success).
NETWORK_PROBE = "; ".join((
    shaping.PROBE_SCRIPT,
    "ip link add ks-doc-a type veth peer name ks-doc-b 2>/dev/null && echo veth",
    "ip link add ks-doc-br type bridge 2>/dev/null && echo bridge",
    "iptables -A INPUT -s 192.0.2.9 -j DROP 2>/dev/null && echo drop",
    "true",
))

# Check names: stable, a facilitator's script keys on them (`--json`).
ROOT, USERNS, TOOLS, PARTITIONS, SLOW = "root", "user-namespaces", "network-tools", "partitions", "slow-links"
JAVA, JARS, PORTS, MEMORY, CPUS = "java", "kafka-jars", "ports", "memory", "cpus"
POWER = "power-loss"
EXTRAS = "extras"
DOCKER_SDK, DOCKER_ENGINE, DOCKER_ROUTE, DOCKER_IMAGES = ("docker-sdk", "docker-engine",
                                                          "docker-routing", "docker-images")
PYSPARK, SPARK_ARCHIVE, SPARK_MEMORY = "pyspark", "spark-archive", "spark-memory"


class Status(StrEnum):
    """OK: nothing to do; WARN: works, with less; MISSING: needs the fix; UNKNOWN: not checked."""

    OK = "ok"
    WARN = "warn"
    MISSING = "missing"
    UNKNOWN = "unknown"

    @property
    def blocks(self) -> bool:
        """Whether a path needing this check cannot be promised to work."""
        return self in {Status.MISSING, Status.UNKNOWN}


@dataclass(frozen=True)
class Check:
    """One finding: what was found (or why it could not be checked), the exact fix, and what
    it enables, so a reader knows whether the fix matters to them."""

    name: str
    status: Status
    found: str
    fix: str | None = None
    enables: str = ""


@dataclass(frozen=True)
class UsePath:
    """One way to use kinspect here (a process lab with network faults, the post-mortem, ...)."""

    name: str
    works: bool
    blocked_by: tuple[str, ...]  # the checks (or alternatives, "root or user-namespaces") in the way
    network_faults: bool  # a lab that can partition and slow links
    via: tuple[str, ...] = ()  # of alternatives, the ones that made it work ("root")


@dataclass(frozen=True)
class Diagnosis:
    checks: tuple[Check, ...]
    paths: tuple[UsePath, ...]

    @property
    def faults_path(self) -> UsePath | None:
        """The first path giving a lab with network faults that works here."""
        return next((p for p in self.paths if p.works and p.network_faults), None)

    @property
    def exit_code(self) -> int:
        """0: a lab with network faults can run here; 1: something it needs is missing."""
        if self.faults_path:
            return READY.code
        return MISSING.code

    @property
    def missing(self) -> tuple[str, ...]:
        """What stands between this machine and a lab with network faults (each path's lot)."""
        if self.faults_path:
            return ()
        names = [n for p in self.paths if p.network_faults for n in p.blocked_by]
        return tuple(dict.fromkeys(names))


# ----- helpers -------------------------------------------------------------------------------


def _sudo() -> str:
    return "" if os.geteuid() == 0 else "sudo "


def install_hint(apt: str, dnf: str | None = None, brew: str | None = None) -> str:
    """The one command that installs a package with this machine's package manager."""
    if sys.platform == "darwin":
        return f"brew install {brew or apt}"
    for manager, command, package in (("apt-get", "apt", apt), ("dnf", "dnf", dnf or apt),
                                      ("yum", "yum", dnf or apt)):
        if shutil.which(manager) or Path("/usr/bin", manager).exists():
            return f"{_sudo()}{command} install {package}"
    return f"install {apt} with this system's package manager"


def pip_fix(module: str) -> str:
    """`pip install 'kinspect[<extra>]'`: the extra that brings `module` (kinspect.extras)."""
    return f"pip install 'kinspect[{extras.extra_for(module) or extras.ALL}]'"


def _run(argv: Sequence[str], timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit code {proc.returncode}"


def mem_available_mib() -> int | None:
    """MemAvailable from /proc/meminfo (what can be used without swapping), None off Linux."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None


def java_major(version_text: str) -> int | None:
    """The major release `java -version` names: 'version "17.0.15"' → 17, '"1.8.0_292"' → 8."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not match:
        return None
    first = int(match.group(1))
    if first == 1:  # Java 8 and before: 1.8
        return int(match.group(2) or 0)
    return first


def _linux_only(name: str, enables: str) -> Check | None:
    if sys.platform.startswith("linux"):
        return None
    return Check(name, Status.MISSING, f"network namespaces are Linux's ({sys.platform} has none)",
                 "use the docker backend: kinspect lab up --backend docker", enables)


# ----- privileges ----------------------------------------------------------------------------

FAULTS = "network faults (partition, isolate, slow)"


def check_root() -> Check:
    uid = os.geteuid()
    if uid == 0:
        return Check(ROOT, Status.OK, "uid 0 (root): the lab makes its network namespaces directly",
                     enables=FAULTS)
    return Check(ROOT, Status.WARN, f"uid {uid} (not root)",
                 "none where user namespaces work (next check); else run the lab as root: "
                 "sudo $(command -v kinspect) lab up", FAULTS + " without user namespaces")


@cache
def _userns_problem() -> str | None:
    """userns_support(), asked once (it makes a namespace to find out)."""
    return userns.userns_support()


def _userns_fix(reason: str) -> str:
    """The fix inside userns_support's one line (its root step), or the general one."""
    for marker in ("one root step may enable it: ", "one root step enables them: ", "one root step: "):
        if marker in reason:
            return reason.split(marker, 1)[1]
    if "apt install" in reason:
        return install_hint("util-linux iproute2 iptables")
    return "ask an administrator to allow unprivileged user namespaces, or run the lab as root"


def check_userns() -> Check:
    enables = FAULTS + " without root (a rootless lab)"
    if os.geteuid() == 0:
        return Check(USERNS, Status.OK, "not needed: root makes namespaces directly", enables=enables)
    if (other := _linux_only(USERNS, enables)) is not None:
        return other
    reason = _userns_problem()
    if reason is None:
        return Check(USERNS, Status.OK, "this user can hold a user namespace with its own network "
                     "(a rootless lab)", enables=enables)
    return Check(USERNS, Status.MISSING, reason, _userns_fix(reason), enables)


# ----- network faults --------------------------------------------------------------------------


def check_network_tools() -> Check:
    enables = FAULTS
    if (other := _linux_only(TOOLS, enables)) is not None:
        return other
    wanted = ["ip", "tc", "iptables"]
    if os.geteuid() != 0:  # a user namespace of its own: entered with unshare and nsenter
        wanted += ["unshare", "nsenter"]
    missing = [tool for tool in wanted if not shutil.which(tool)]
    if not missing:
        return Check(TOOLS, Status.OK, " ".join(wanted) + " present", enables=enables)
    packages = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables",
                "unshare": "util-linux", "nsenter": "util-linux"}
    need = " ".join(dict.fromkeys(packages[tool] for tool in missing))
    dnf = need.replace("iproute2", "iproute")
    return Check(TOOLS, Status.MISSING, "not found: " + " ".join(missing), install_hint(need, dnf), enables)


@dataclass(frozen=True)
class NetworkProbe:
    """What a throwaway network namespace took (names NETWORK_PROBE echoed), or why none ran."""

    took: frozenset[str]
    problem: str | None = None
    where: str = ""  # "a network namespace" or "a user namespace"


def probe_network() -> NetworkProbe:
    """Try a lab's links, qdiscs and rules for real, in a namespace removed afterwards."""
    if not sys.platform.startswith("linux"):
        return NetworkProbe(frozenset(), "network namespaces are Linux's")
    missing = [t for t in ("ip", "tc", "iptables") if not shutil.which(t)]
    if missing:
        return NetworkProbe(frozenset(), f"{' '.join(missing)} not found (see {TOOLS})")
    if os.geteuid() == 0:
        return _probe_as_root()
    if not shutil.which("unshare"):
        return NetworkProbe(frozenset(), f"not root and no unshare to make a user namespace (see {TOOLS})")
    if _userns_problem() is not None:
        return NetworkProbe(frozenset(), f"not root, and no user namespace here (see {USERNS})")
    proc = _run(["unshare", "--user", "--map-root-user", "--net", "sh", "-c", NETWORK_PROBE])
    if proc.returncode != 0:
        return NetworkProbe(frozenset(), f"unshare failed: {_last_line(proc)}")
    return NetworkProbe(frozenset(proc.stdout.split()), where="a user namespace")


def _probe_as_root() -> NetworkProbe:
    made = _run(["ip", "netns", "add", PROBE_NS])
    if made.returncode != 0:
        return NetworkProbe(frozenset(), f"ip netns add failed: {_last_line(made)}")
    try:
        proc = _run(["ip", "netns", "exec", PROBE_NS, "sh", "-c", NETWORK_PROBE])
        took = frozenset(proc.stdout.split())
    finally:
        _run(["ip", "netns", "delete", PROBE_NS])
    return NetworkProbe(took, where="a network namespace")


CONFIGS = {"sch_netem": "NET_SCH_NETEM", "sch_tbf": "NET_SCH_TBF", "xt_statistic":
           "NETFILTER_XT_MATCH_STATISTIC", "ifb": "IFB", "veth": "VETH", "bridge": "BRIDGE",
           "iptable_filter": "IP_NF_FILTER"}


def module_fix(modules: Sequence[str]) -> str:
    """Load these kernel modules, where this kernel has them as modules; else say which kernel
    option is missing (a kernel built without them, as some VMs' are: modprobe cannot help)."""
    tree = Path("/lib/modules") / os.uname().release
    if tree.is_dir():
        absent = [m for m in modules if not any(tree.rglob(f"{m}.ko*"))]
        fix = f"{_sudo()}modprobe {' '.join(modules)}"
        if absent and shutil.which("apt-get"):  # Ubuntu ships netem and ifb in an extra package
            fix = f"{install_hint('linux-modules-extra-$(uname -r)')} && {fix}"
        return fix
    options = ", ".join(f"CONFIG_{CONFIGS.get(m, m.upper())}" for m in modules)
    return (f"this kernel ({os.uname().release}) has no loadable modules: boot one built with "
            f"{options} (a distribution's stock kernel has them)")


def check_partitions(probe: NetworkProbe) -> Check:
    enables = "partition, isolate and heal"
    if probe.problem:
        return Check(PARTITIONS, Status.UNKNOWN, f"not tried: {probe.problem}", enables=enables)
    missing = [what for what in ("veth", "bridge", "drop") if what not in probe.took]
    if not missing:
        return Check(PARTITIONS, Status.OK, f"veth, bridge and iptables DROP work in {probe.where}",
                     enables=enables)
    words = {"veth": "veth pairs", "bridge": "bridges", "drop": "iptables DROP rules"}
    modules = {"veth": "veth", "bridge": "bridge", "drop": "iptable_filter"}
    return Check(PARTITIONS, Status.MISSING,
                 f"this kernel refused {', '.join(words[m] for m in missing)} in {probe.where}",
                 module_fix([modules[m] for m in missing]), enables)


def check_slow_links(probe: NetworkProbe) -> Check:
    enables = "slow links (kinspect lab slow: --delay, --rate, --loss)"
    if probe.problem:
        return Check(SLOW, Status.UNKNOWN, f"not tried: {probe.problem}", enables=enables)
    kit = shaping.kit_from_probe(" ".join(probe.took))
    if kit.unavailable:
        return Check(SLOW, Status.MISSING, kit.unavailable, module_fix(["sch_netem"]), enables)
    gaps, modules = [], []
    if not kit.netem:
        gaps.append("no netem: --rate and --loss work (tbf + iptables), --delay does not")
        modules.append("sch_netem")
    if not kit.ifb:
        gaps.append("no ifb: only --direction out")
        modules.append("ifb")
    if gaps:
        return Check(SLOW, Status.WARN, "; ".join(gaps), module_fix(modules), enables)
    return Check(SLOW, Status.OK, f"netem, tbf, ifb and iptables statistic work in {probe.where}",
                 enables=enables)


# ----- the JVMs ------------------------------------------------------------------------------


def check_java() -> Check:
    enables = "every lab (Kafka's JVMs) and the post-mortem (Spark)"
    fix = install_hint("openjdk-17-jre-headless", "java-17-openjdk-headless", "openjdk@17")
    java = shutil.which("java")
    if not java:
        return Check(JAVA, Status.MISSING, "no java on PATH", fix, enables)
    proc = _run([java, "-version"])
    text = proc.stderr + proc.stdout
    major = java_major(text)
    if major is None:
        return Check(JAVA, Status.UNKNOWN, f"{java} -version said: {_last_line(proc)[:120]}", fix, enables)
    first = text.strip().splitlines()[0]
    if major < JAVA_MIN:
        return Check(JAVA, Status.MISSING, f"Java {major} ({first}); kinspect needs {JAVA_MIN}+",
                     fix, enables)
    return Check(JAVA, Status.OK, f"Java {major}: {first} ({java})", enables=enables)


def check_power() -> Check:
    """FUSE for `lab up --power`: the device, libfuse 3 and its binding (power.py)."""
    from kinspect.lab import power

    enables = "lab up --power: brokers' disks that lose what was not fsynced (lab power-off)"
    problem = power.problem()
    if problem is None:
        return Check(POWER, Status.OK, "/dev/fuse, libfuse3 and the FUSE binding work",
                     enables=enables)
    if "libfuse3" in problem:
        return Check(POWER, Status.MISSING, problem, install_hint("fuse3", "fuse3"), enables)
    if "binding" in problem:
        return Check(POWER, Status.MISSING, problem, pip_fix("mfusepy"), enables)
    return Check(POWER, Status.MISSING, problem, "run as root with /dev/fuse (modprobe fuse)",
                 enables)


def check_kafka_jars() -> Check:
    enables = "every lab (Kafka's jars, fetched once with Maven)"
    version = dist.kafka_version()
    home = dist.dist_home(version)
    try:
        cached = dist.installed(version) is not None
    except KinspectError:  # no java: the marker alone says whether the jars are there
        cached = (home / "libs").is_dir() and any((home / "libs").glob("kafka_*.jar"))
    if cached:
        return Check(JARS, Status.OK, f"Kafka {version} cached in {home}", enables=enables)
    if shutil.which("mvn"):
        return Check(JARS, Status.WARN, f"Kafka {version} not cached yet ({home}); Maven present",
                     "kinspect lab fetch  (once, needs Maven Central; lab up does it too)", enables)
    return Check(JARS, Status.MISSING, f"Kafka {version} not cached ({home}) and no mvn on PATH",
                 f"{install_hint('maven')} && kinspect lab fetch", enables)


# ----- ports, memory, cores -------------------------------------------------------------------


def lab_ports(options: UpOptions | None = None) -> list[int]:
    """The 127.0.0.1 ports a loopback lab of these options listens on."""
    from kinspect.lab.process import loopback_ports

    return loopback_ports(options or UpOptions())


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVMs bind
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def check_ports() -> Check:
    enables = "the loopback lab (no root: 127.0.0.1 ports)"
    ports = lab_ports()
    taken = [port for port in ports if not _port_free(port)]
    span = f"127.0.0.1:{ports[0]}-{ports[-1]}"
    if not taken:
        return Check(PORTS, Status.OK, f"{span} free", enables=enables)
    free_base = next((base for base in range(ports[0] + 1000, 65000, 1000)
                      if all(_port_free(base + p - ports[0]) for p in ports)), None)
    listening = f"ss -ltnp 'sport = :{taken[0]}'"
    fix = f"stop what listens: {listening}"
    if free_base:
        fix = f"kinspect lab up --base-port {free_base}  (or {fix})"
    return Check(PORTS, Status.MISSING, f"in use on 127.0.0.1: {', '.join(map(str, taken))}",
                 fix, enables)


def lab_memory_mib(options: UpOptions | None = None) -> int:
    """What a lab of these options needs: each JVM's heap (nodes.py) plus its overhead."""
    options = options or UpOptions()
    names = topology.node_names(options.brokers, options.dedicated_controllers)
    heaps = [jvm_size_mib(_heap(name, options.broker_heap)) for name in names]
    return sum(heaps) + JVM_OVERHEAD_MIB * len(names) + KINSPECT_MIB


def _heap(name: str, broker_heap: str | None) -> str:
    """A node's heap, by its role, as the lab gives it (nodes.heap_for)."""
    role = "controller"
    if name == topology.ZOOKEEPER_NODE:
        role = "zookeeper"
    elif topology.broker_id_of(name) is not None:
        role = "broker"
    return heap_for(role, broker_heap)


def memory_check(name: str, need: int, who: str, fix: str, enables: str) -> Check:
    """MemAvailable against what `who` needs; the fix starts with how much to free."""
    available = mem_available_mib()
    if available is None:
        return Check(name, Status.UNKNOWN, "no /proc/meminfo to read MemAvailable from",
                     enables=enables)
    found = f"{available:,} MiB available; {who} needs about {need:,} MiB"
    if available >= need:
        return Check(name, Status.OK, found, enables=enables)
    return Check(name, Status.MISSING, found, f"free {need - available:,} MiB {fix}", enables)


def check_memory() -> Check:
    options = UpOptions()
    small = lab_memory_mib(UpOptions(brokers=1))
    return memory_check(MEMORY, lab_memory_mib(options), "a lab",
                        "(close programs), or a smaller lab: kinspect lab up --brokers 1 "
                        f"(about {small:,} MiB)", f"a lab of {options.brokers} brokers + ZooKeeper")


def check_cpus() -> Check:
    usable = _usable_cpus()
    enables = "a lab whose brokers keep up (ZooKeeper, 3 brokers and the load)"
    if usable >= CPUS_WANTED:
        return Check(CPUS, Status.OK, f"{usable} usable", enables=enables)
    return Check(CPUS, Status.WARN, f"{usable} usable; the lab is sized for {CPUS_WANTED}",
                 "give this machine (or VM) 2 or more CPUs", enables)


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 0


def check_extras() -> Check:
    """kinspect's optional parts installed here: a light install lacks them (kinspect.extras)."""
    enables = ("kinspect load, consume, verify and scenarios (load), the docker and TLS labs "
               "(lab), the post-mortem (postmortem)")
    absent = {name: sorted(m for m in modules if importlib.util.find_spec(m) is None)
              for name, modules in extras.EXTRAS.items()}
    missing = {name: modules for name, modules in absent.items() if modules}
    if not missing:
        return Check(EXTRAS, Status.OK, ", ".join(extras.EXTRAS) + " installed", enables=enables)
    which = extras.ALL
    if len(missing) == 1:
        which = next(iter(missing))
    return Check(EXTRAS, Status.WARN, "not installed: " + ", ".join(
        f"{name} (no {', '.join(modules)})" for name, modules in missing.items()),
        f"pip install 'kinspect[{which}]'", enables)


# ----- docker --------------------------------------------------------------------------------

DOCKER_ENABLES = "the docker lab (kinspect lab up --backend docker)"


def docker_sdk_present() -> bool:
    return importlib.util.find_spec("docker") is not None


def check_docker_sdk() -> Check:
    if docker_sdk_present():
        return Check(DOCKER_SDK, Status.OK, f"docker {importlib.metadata.version('docker')}",
                     enables=DOCKER_ENABLES)
    return Check(DOCKER_SDK, Status.MISSING, "the docker Python package is not installed",
                 pip_fix("docker"), DOCKER_ENABLES)


def _engine_fix(reason: str) -> str:
    if "permission denied" in reason.lower():
        return "sudo usermod -aG docker $USER, then log in again"
    if sys.platform == "darwin":
        return "start Docker Desktop (or colima start)"
    if os.environ.get("DOCKER_HOST"):
        return (f"start the Docker engine at {os.environ['DOCKER_HOST']} (DOCKER_HOST), or unset "
                "DOCKER_HOST for the default socket")
    if shutil.which("dockerd") or shutil.which("systemctl"):
        return f"{_sudo()}systemctl start docker  (no systemd: {_sudo()}dockerd &)"
    return install_hint("docker.io", "moby-engine") + f" && {_sudo()}systemctl start docker"


def check_docker_engine() -> Check:
    if docker_sdk_present():
        from kinspect.lab import docker_engine

        reason = docker_engine.engine_problem()
    elif shutil.which("docker"):  # no SDK: the CLI can still say whether an engine answers
        proc = _run(["docker", "info", "--format", "{{.ServerVersion}}"])
        reason = None if proc.returncode == 0 else f"docker info: {_last_line(proc)[:160]}"
    else:
        reason = "no docker SDK and no docker command to ask an engine"
    if reason is None:
        return Check(DOCKER_ENGINE, Status.OK, _engine_words(), enables=DOCKER_ENABLES)
    return Check(DOCKER_ENGINE, Status.MISSING, reason, _engine_fix(reason), DOCKER_ENABLES)


def _engine_words() -> str:
    if not docker_sdk_present():
        return "an engine answers docker info"
    from kinspect.lab import docker_engine

    client = docker_engine.connect(timeout=5)
    try:
        info = client.version()
        return f"Docker {info.get('Version', '?')} answers at {docker_engine.engine_address()}"
    finally:
        client.close()


def _lab_broker(client: Any) -> tuple[str, str, str] | None:
    """(node, address, its network's gateway) of a broker of a kinspect docker lab running on
    this engine, if any."""
    from kinspect.lab.containers import LABEL, NODE_LABEL, PART_LABEL

    containers = client.containers.list(filters={"label": [LABEL, f"{PART_LABEL}=net"]})
    for container in containers:
        node = container.labels.get(NODE_LABEL, "")
        networks = container.attrs.get("NetworkSettings", {}).get("Networks") or {}
        found = next(((n["IPAddress"], n.get("Gateway", "")) for n in networks.values()
                      if n.get("IPAddress")), None)
        if topology.broker_id_of(node) is not None and found:
            return node, *found
    return None


def _no_sdk_or_engine(name: str, engine: Check, enables: str) -> Check | None:
    """UNKNOWN, and why, when there is no SDK or no engine to ask; None when there are."""
    if not docker_sdk_present():
        return Check(name, Status.UNKNOWN, f"not checked: no docker SDK (see {DOCKER_SDK})",
                     enables=enables)
    if engine.status is not Status.OK:
        return Check(name, Status.UNKNOWN, f"not checked: no engine to ask (see {engine.name})",
                     enables=enables)
    return None


def check_docker_routing(engine: Check) -> Check:
    """Whether this host reaches containers' addresses: a running docker lab's broker is asked;
    else the route to the engine's bridge is looked up, as the relay decides (reach.py). Where
    it does not (Docker Desktop), kinspect relays its commands through a container of its own."""
    enables = "kinspect on this host talking to a docker lab's brokers directly (no relay)"
    if (unasked := _no_sdk_or_engine(DOCKER_ROUTE, engine, enables)) is not None:
        return unasked
    from kinspect.lab import docker_engine, reach
    from kinspect.lab.readiness import port_open

    client = docker_engine.connect(timeout=5)
    try:
        broker = _lab_broker(client)
        if broker is None:
            verdict = reach.host_reaches_engine(client)
        else:
            verdict = reach.reaches(broker[2], broker[1],
                                    f"the docker lab's network (its {broker[0]})")
    finally:
        client.close()
    if verdict.reachable is None:
        return Check(DOCKER_ROUTE, Status.UNKNOWN, verdict.why, enables=enables)
    if verdict.reachable and broker is not None:
        # The route leads to the lab's own bridge: asking the broker sends nothing elsewhere.
        node, address, _ = broker
        if port_open(address, 9092, timeout=2):
            return Check(DOCKER_ROUTE, Status.OK, f"reached the docker lab's {node} at "
                         f"{address}:9092", enables=enables)
        why = f"the docker lab's {node} at {address}:9092 does not answer from this host"
    elif verdict.reachable:
        return Check(DOCKER_ROUTE, Status.OK, verdict.why, enables=enables)
    else:
        why = verdict.why
    if not shutil.which("docker"):
        return Check(DOCKER_ROUTE, Status.MISSING, f"{why}; the relay through kinspect's container "
                     "needs the docker command", install_hint("docker.io", "docker-cli", "docker"),
                     enables)
    return Check(DOCKER_ROUTE, Status.WARN, f"{why}; kinspect relays its commands through its own "
                 "container on the lab's network", "none needed (kinspect lab images makes the "
                 "relay's image ahead of time)", enables)


def check_docker_images(engine: Check, routing: Check) -> Check:
    """The Kafka image, and where the host does not reach the containers, the relay's."""
    enables = "a docker lab starting without a build (minutes, once)"
    if (unasked := _no_sdk_or_engine(DOCKER_IMAGES, engine, enables)) is not None:
        return unasked
    from kinspect.lab import docker_engine, images

    try:
        kafka = dist.installed()
    except KinspectError:
        kafka = None
    if kafka is None:
        return Check(DOCKER_IMAGES, Status.WARN, "not built: Kafka's jars are not fetched yet "
                     f"(see {JARS})", "kinspect lab images", enables)
    tags = [images.kafka_tag(kafka)]
    if routing.status is Status.WARN:  # relayed: kinspect's own image too
        tags.append(images.kinspect_tag(tags[0]))
    client = docker_engine.connect(timeout=5)
    try:
        absent = [tag for tag in tags if not images.have(client, tag)]
    finally:
        client.close()
    if not absent:
        return Check(DOCKER_IMAGES, Status.OK, " and ".join(tags) + " built", enables=enables)
    return Check(DOCKER_IMAGES, Status.WARN, f"{', '.join(absent)} not built (lab up builds it)",
                 "kinspect lab images", enables)


# ----- all of it -------------------------------------------------------------------------------


def guarded(name: str, probe: Callable[[], Check]) -> Check:
    """A probe's Check, or UNKNOWN with the reason it failed: one broken probe is one line."""
    try:
        return probe()
    except Exception as exc:
        return Check(name, Status.UNKNOWN, f"could not check: {error_line(exc)[:200]}")


def lab_checks() -> list[Check]:
    """Every lab-side check, in the order a reader fixes things."""
    probe_box: list[NetworkProbe] = []

    def probe() -> NetworkProbe:
        if not probe_box:
            try:
                probe_box.append(probe_network())
            except (OSError, subprocess.SubprocessError) as exc:
                probe_box.append(NetworkProbe(frozenset(), error_line(exc)))
        return probe_box[0]

    checks = [guarded(name, fn) for name, fn in (
        (ROOT, check_root), (USERNS, check_userns), (TOOLS, check_network_tools),
        (PARTITIONS, lambda: check_partitions(probe())), (SLOW, lambda: check_slow_links(probe())),
        (JAVA, check_java), (JARS, check_kafka_jars), (PORTS, check_ports),
        (MEMORY, check_memory), (CPUS, check_cpus), (EXTRAS, check_extras),
        (POWER, check_power),
        (DOCKER_SDK, check_docker_sdk), (DOCKER_ENGINE, check_docker_engine))]
    engine = checks[-1]
    routing = guarded(DOCKER_ROUTE, lambda: check_docker_routing(engine))
    return [*checks, routing, guarded(DOCKER_IMAGES, lambda: check_docker_images(engine, routing))]


# What each path needs; a tuple inside is alternatives (any one OK will do).
Need = str | tuple[str, ...]
PATHS: tuple[tuple[str, bool, tuple[Need, ...]], ...] = (
    ("process lab with network faults", True,
     ((ROOT, USERNS), TOOLS, PARTITIONS, SLOW, JAVA, JARS, MEMORY)),
    ("docker lab", True, (DOCKER_SDK, DOCKER_ENGINE, DOCKER_ROUTE, JAVA, JARS, MEMORY)),
    ("loopback lab (no network faults)", False, (JAVA, JARS, PORTS, MEMORY)),
    ("post-mortem", False, (PYSPARK, JAVA, SPARK_MEMORY)),
    ("power loss (lab up --power)", False, (ROOT, POWER, JAVA, JARS)),
)


def _blocked(need: Need, status: dict[str, Status]) -> str | None:
    """None when the need holds: a check OK or WARN, or of alternatives one OK (root's WARN is
    "not root", which must not count)."""
    if isinstance(need, str):
        if need in status and not status[need].blocks:
            return None
        return need
    if any(status.get(name) is Status.OK for name in need):
        return None
    return " or ".join(need)


def _via(needs: Sequence[Need], status: dict[str, Status]) -> tuple[str, ...]:
    """Of each set of alternatives, the first that holds (root, or user namespaces)."""
    return tuple(next(n for n in need if status.get(n) is Status.OK) for need in needs
                 if not isinstance(need, str) and any(status.get(n) is Status.OK for n in need))


def diagnose(extra: Sequence[Check] = ()) -> Diagnosis:
    """Every check (the lab's, then `extra` from the layers above) and the paths they open."""
    checks = (*lab_checks(), *extra)
    return summarise(checks)


def _names(needs: Sequence[Need]) -> list[str]:
    """Every check a path's needs name, alternatives and all."""
    names: list[str] = []
    for need in needs:
        if isinstance(need, str):
            names.append(need)
        else:
            names.extend(need)
    return names


def summarise(checks: Sequence[Check]) -> Diagnosis:
    """The paths whose checks were all made, each working or blocked by what."""
    status = {check.name: check.status for check in checks}
    paths = []
    for name, faults, needs in PATHS:
        if all(n in status for n in _names(needs)):
            blocked = tuple(b for need in needs if (b := _blocked(need, status)))
            paths.append(UsePath(name, not blocked, blocked, faults, _via(needs, status)))
    return Diagnosis(tuple(checks), tuple(paths))
