"""The lab's fault rules as command lines, the same for a process lab's namespace and a container.

A node drops everything to and from the addresses it must not reach (blockade's semantics:
silent drops, so peers see timeouts rather than refusals). The rules live in two chains of the
node's own network namespace, hooked into INPUT and OUTPUT once, and are replaced as a whole on
every partition or heal. Slow links are netem on the node's interface.
"""

from __future__ import annotations

from collections.abc import Iterable

CHAIN_IN = "KINSPECT-IN"
CHAIN_OUT = "KINSPECT-OUT"
Command = list[str]


def setup_commands() -> list[Command]:
    """Empty fault chains, hooked in once when the node's namespace is made."""
    commands: list[Command] = []
    for chain, hook in ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT")):
        commands += [["iptables", "-N", chain], ["iptables", "-A", hook, "-j", chain]]
    return commands


def block_commands(unreachable: Iterable[str]) -> list[Command]:
    """Replace a node's rules: drop everything to and from these addresses (none: healed)."""
    commands: list[Command] = [["iptables", "-F", CHAIN_IN], ["iptables", "-F", CHAIN_OUT]]
    for address in sorted(set(unreachable)):
        commands += [["iptables", "-A", CHAIN_IN, "-s", address, "-j", "DROP"],
                     ["iptables", "-A", CHAIN_OUT, "-d", address, "-j", "DROP"]]
    return commands


def slow_command(delay_ms: int, jitter_ms: int, device: str = "eth0") -> Command:
    """netem delay (and jitter) on everything the node sends."""
    return ["tc", "qdisc", "replace", "dev", device, "root", "netem", "delay", f"{delay_ms}ms",
            f"{jitter_ms}ms"]


def unslow_command(device: str = "eth0") -> Command:
    return ["tc", "qdisc", "del", "dev", device, "root"]


NETEM_PROBE: Command = ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]


def netem_missing(stderr: str) -> str:
    """The one-line reason links cannot be slowed, from the probe's complaint."""
    return ("this kernel has no netem (sch_netem), so links cannot be slowed: "
            + (stderr.strip().splitlines() or ["tc failed"])[-1])
