"""Linux network plumbing for the process lab: one namespace per node, veths, a bridge, iptables.

Everything made here is named after the lab's slot (`ks<slot>...`) and recorded in the lab
state before it is made, so `lab down` can remove it even after a SIGKILL. Addresses come from
198.18.0.0/15 (RFC 2544 benchmarking), a block this machine does not route anywhere.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab import firewall, shaping

BENCH_BLOCK = ipaddress.ip_network("198.18.0.0/15")


def can_use_netns() -> str | None:
    """None when namespaces can be used here, else the one-line reason why not."""
    if os.geteuid() != 0:
        return "network faults need root, user namespaces (see kinspect doctor) or docker"
    for tool in ("ip", "iptables"):
        if not shutil.which(tool):
            return f"network faults need '{tool}' (apt install iproute2 iptables)"
    return None


def run(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise KinspectError(f"{' '.join(cmd)}: {detail[-1] if detail else proc.returncode}")
    return proc


def in_ns(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


@dataclass(frozen=True)
class Slot:
    """A lab's share of the address block and name space: 198.18.<n>.0/24, names ks<n>-*."""

    number: int

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"198.18.{self.number}.0/24")

    @property
    def bridge(self) -> str:
        return f"ks{self.number}-br"

    @property
    def host_address(self) -> str:
        return f"198.18.{self.number}.1"

    def netns(self, node: str) -> str:
        return f"ks{self.number}-{node}"

    def veth(self, node: str) -> str:
        return f"ks{self.number}-{node}"[:15]

    def address(self, index: int) -> str:
        return f"198.18.{self.number}.{10 + index}"


def routed_networks() -> list[ipaddress.IPv4Network]:
    """Specific routes and addresses on this machine (the default route does not count)."""
    nets: list[ipaddress.IPv4Network] = []
    skip_type = {"broadcast", "local", "unreachable", "blackhole", "prohibit", "multicast"}
    for line in run(["ip", "-4", "route", "show", "table", "all"], check=False).stdout.splitlines():
        tokens = line.split()
        if len(tokens) < 2:
            continue
        dest = tokens[1] if tokens[0] in skip_type else tokens[0]
        if dest == "default":
            continue
        try:
            nets.append(ipaddress.IPv4Network(dest, strict=False))
        except ValueError:
            continue
    return nets


def _links() -> set[str]:
    out = run(["ip", "-o", "link", "show"], check=False).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def namespaces() -> set[str]:
    out = run(["ip", "netns", "list"], check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def choose_slot() -> Slot:
    """The first slot whose subnet nothing here routes and whose names are free."""
    routed = [n for n in routed_networks() if n.overlaps(BENCH_BLOCK)]
    links, spaces = _links(), namespaces()
    for number in range(1, 255):
        slot = Slot(number)
        if any(net.overlaps(slot.subnet) for net in routed):
            continue
        if slot.bridge in links or any(ns.startswith(f"ks{number}-") for ns in spaces):
            continue
        return slot
    raise KinspectError("no free address block in 198.18.0.0/15 for a lab")


def bridge_netfilter_on() -> bool:
    """Docker loads br_netfilter, which sends bridged packets through the root FORWARD chain."""
    path = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
    return path.exists() and path.read_text().strip() == "1"


def create_bridge(slot: Slot) -> None:
    run(["ip", "link", "add", slot.bridge, "type", "bridge"])
    run(["ip", "addr", "add", f"{slot.host_address}/24", "dev", slot.bridge])
    run(["ip", "link", "set", slot.bridge, "up"])


def forward_rule(slot: Slot) -> list[str]:
    """The root-namespace rule letting bridged lab traffic pass a FORWARD policy of DROP."""
    return ["FORWARD", "-i", slot.bridge, "-o", slot.bridge, "-j", "ACCEPT"]


def add_forward_rule(slot: Slot) -> None:
    run(["iptables", "-I", *forward_rule(slot)])


def remove_forward_rule(slot: Slot) -> None:
    while run(["iptables", "-D", *forward_rule(slot)], check=False).returncode == 0:
        pass


def create_node(slot: Slot, node: str, address: str) -> None:
    """A namespace with loopback and one veth into the bridge, plus empty fault chains."""
    ns, veth, peer = slot.netns(node), slot.veth(node), slot.veth(node)[:13] + "-p"
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", veth, "type", "veth", "peer", "name", peer])
    run(["ip", "link", "set", peer, "netns", ns])
    run(["ip", "link", "set", veth, "master", slot.bridge, "up"])
    run(["ip", "-n", ns, "link", "set", peer, "name", "eth0"])
    run(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0"])
    run(["ip", "-n", ns, "link", "set", "eth0", "up"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    for command in firewall.setup_commands():
        run(in_ns(ns, *command))


def apply_blocks(slot: Slot, node: str, unreachable: Iterable[str]) -> None:
    """Replace a node's fault rules: silently drop everything to and from these addresses."""
    for command in firewall.block_commands(unreachable):
        run(in_ns(slot.netns(node), *command))


def delete_node(slot: Slot, node: str) -> None:
    """Remove a node's namespace (its rules and veth end go with it) and the host veth."""
    if slot.netns(node) in namespaces():
        run(["ip", "netns", "delete", slot.netns(node)], check=False)
    if slot.veth(node) in _links():
        run(["ip", "link", "delete", slot.veth(node)], check=False)


def delete_bridge(slot: Slot) -> None:
    if slot.bridge in _links():
        run(["ip", "link", "delete", slot.bridge], check=False)


def leftovers(slot: Slot) -> list[str]:
    """Anything of this slot still on the machine (used by tests and `lab down`)."""
    found = [ns for ns in namespaces() if ns.startswith(f"ks{slot.number}-")]
    found += [ln for ln in _links() if ln.startswith(f"ks{slot.number}-")]
    rules = run(["iptables", "-S"], check=False).stdout if shutil.which("iptables") else ""
    found += [r for r in rules.splitlines() if slot.bridge in r]
    return found


_KIT: list[shaping.Kit] = []


def shaping_kit() -> shaping.Kit:
    """What this kernel can shape links with, probed once in a throwaway namespace."""
    if _KIT:
        return _KIT[0]
    reason = can_use_netns() or (None if shutil.which("tc") else "slow links need 'tc' (iproute2)")
    if reason is not None:
        kit = shaping.Kit.broken(reason)
    else:
        probe = f"ks-probe-{os.getpid()}"
        run(["ip", "netns", "add", probe], check=False)
        try:
            kit = shaping.kit_from_probe(run(in_ns(probe, "sh", "-c", shaping.PROBE_SCRIPT),
                                             check=False).stdout)
        finally:
            run(["ip", "netns", "delete", probe], check=False)
    _KIT.append(kit)
    return kit


def run_in_node(slot: Slot, node: str, commands: list[list[str]], check: bool = True) -> None:
    """Commands in the node's namespace, in order (check: the first failure is raised)."""
    for command in commands:
        run(in_ns(slot.netns(node), *command), check=check)
