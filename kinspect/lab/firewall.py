"""The lab's fault rules as command lines, the same for a process lab's namespace and a container.

A node drops everything to and from the addresses it must not reach (blockade's semantics:
silent drops, so peers see timeouts rather than refusals). The rules live in two chains of the
node's own network namespace, hooked into INPUT and OUTPUT once, and are replaced as a whole on
every partition or heal. Slow links are lab/shaping.py's.
"""

from __future__ import annotations

from collections.abc import Iterable

from kinspect.lab import shaping

CHAIN_IN = "KINSPECT-IN"
CHAIN_OUT = "KINSPECT-OUT"
Command = list[str]


def setup_commands() -> list[Command]:
    """Empty fault chains (and the slow links' loss chains), hooked in once when the node's
    namespace is made."""
    commands: list[Command] = []
    for chain, hook in ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT")):
        commands += [["iptables", "-N", chain], ["iptables", "-A", hook, "-j", chain]]
    return commands + shaping.setup_commands()


def block_commands(unreachable: Iterable[str]) -> list[Command]:
    """Replace a node's rules: drop everything to and from these addresses (none: healed)."""
    commands: list[Command] = [["iptables", "-F", CHAIN_IN], ["iptables", "-F", CHAIN_OUT]]
    for address in sorted(set(unreachable)):
        commands += [["iptables", "-A", CHAIN_IN, "-s", address, "-j", "DROP"],
                     ["iptables", "-A", CHAIN_OUT, "-d", address, "-j", "DROP"]]
    return commands
