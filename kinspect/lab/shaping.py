"""Slow and lossy links as command lines, the same for a process lab's namespace and a container.

A link is shaped with netem where the kernel has it (delay, jitter, loss and rate in one
qdisc) and with what every Linux kernel has otherwise: tbf for a rate limit (its queue adds
the queueing delay a slow link has) and iptables' `statistic` match for random loss (TCP then
retransmits: real delay and jitter). Delay itself needs netem; asked for without it, the
shape is refused in one line rather than silently dropped.

"out" shapes what the node sends (a qdisc on its eth0); "in" shapes what it receives (its
eth0's ingress redirected through an ifb device, whose own qdisc then applies). The loss
rules live in two chains of their own, so a partition or heal (which replaces the fault
chains) never touches a slowed link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from kinspect.errors import KinspectError

Command = list[str]
DEVICE = "eth0"
IFB = "kin-ifb"
CHAIN_IN = "KINSPECT-LOSS-IN"
CHAIN_OUT = "KINSPECT-LOSS-OUT"
TBF_LATENCY_MS = 1000  # how long a packet may queue behind the rate limit before it is dropped


class Direction(StrEnum):
    """Which way of the node's link is shaped."""

    BOTH = "both"
    IN = "in"    # what the node receives
    OUT = "out"  # what the node sends

    @property
    def words(self) -> str:
        return {Direction.BOTH: "both ways", Direction.IN: "inbound",
                Direction.OUT: "outbound"}[self]


@dataclass(frozen=True)
class LinkShape:
    """How bad a link is: delay (± jitter) in ms, a rate limit in kbit/s (0: none) and the
    share of packets lost in percent, on one or both directions."""

    delay_ms: int = 0
    jitter_ms: int = 0
    rate_kbit: int = 0
    loss_pct: float = 0.0
    direction: Direction = Direction.BOTH

    def check(self) -> None:
        """Raise the one-line reason a shape is not one (the CLI and the scenario parser)."""
        if not (self.delay_ms or self.rate_kbit or self.loss_pct):
            raise KinspectError("a slow link needs --delay, --rate or --loss")
        if self.jitter_ms and not self.delay_ms:
            raise KinspectError("--jitter varies a delay: give --delay too")
        if self.jitter_ms > self.delay_ms:
            raise KinspectError("--jitter must not be more than --delay")
        if not 0 <= self.loss_pct <= 100:
            raise KinspectError("--loss is a percentage, 0 to 100")

    @property
    def words(self) -> str:
        """`rate 200 kbit + 5 % loss, both ways`: the screen's, journal's and report's words."""
        parts = []
        if self.delay_ms:
            parts.append(f"delay {self.delay_ms} ms" + (f" ± {self.jitter_ms} ms"
                                                       if self.jitter_ms else ""))
        if self.rate_kbit:
            parts.append(f"rate {self.rate_kbit:,} kbit")
        if self.loss_pct:
            parts.append(f"{self.loss_pct:g} % loss")
        return " + ".join(parts) + f", {self.direction.words}"

    def as_dict(self) -> dict[str, object]:
        return {"delay_ms": self.delay_ms, "jitter_ms": self.jitter_ms,
                "rate_kbit": self.rate_kbit, "loss_pct": self.loss_pct,
                "direction": str(self.direction)}


_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(kbit|mbit|gbit|k|m|g)?\s*$", re.IGNORECASE)
_UNIT_KBIT = {"": 1, "k": 1, "kbit": 1, "m": 1000, "mbit": 1000, "g": 1_000_000,
              "gbit": 1_000_000}


def parse_rate(text: str) -> int:
    """`200kbit`, `1mbit`, `1.5m` or a plain number of kbit/s, as whole kbit/s."""
    match = _RATE.match(text)
    if not match:
        raise KinspectError(f"--rate wants e.g. 200kbit or 1mbit, not {text!r}")
    kbit = float(match.group(1)) * _UNIT_KBIT[(match.group(2) or "").lower()]
    if not 8 <= kbit <= 10_000_000:
        raise KinspectError(f"--rate must be between 8kbit and 10gbit, not {text!r}")
    return int(kbit)


def parse_loss(text: str) -> float:
    """`5`, `5%` or `0.5 %`: a share of packets in percent."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise KinspectError(f"--loss wants a percentage like 5 or 0.5%, not {text!r}") from None
    if not 0 < value <= 100:
        raise KinspectError(f"--loss must be above 0 and at most 100 (%), not {text!r}")
    return value


@dataclass(frozen=True)
class Kit:
    """What this kernel can shape with, as probed in a throwaway namespace or container."""

    netem: bool
    tbf: bool
    ifb: bool
    statistic: bool
    problem: str | None = None  # the probe itself could not run

    @classmethod
    def broken(cls, problem: str) -> Kit:
        """No kit at all, and why (no probe could run, or this lab cannot shape links)."""
        return cls(netem=False, tbf=False, ifb=False, statistic=False, problem=problem)

    @property
    def unavailable(self) -> str | None:
        """None when rate and loss can be shaped here, else the one-line reason."""
        if self.problem:
            return self.problem
        if self.netem:
            return None
        missing = [name for name, ok in (("tbf", self.tbf), ("iptables statistic",
                                                            self.statistic)) if not ok]
        if missing:
            return (f"this kernel has neither netem nor {' and '.join(missing)}: "
                    "links cannot be slowed")
        return None

    @property
    def words(self) -> str:
        """`netem`, or `tbf + iptables (netem not in this kernel)`."""
        if self.unavailable:
            return f"none ({self.unavailable})"
        return "netem" if self.netem else "tbf + iptables (netem not in this kernel)"

    def mechanism(self, shape: LinkShape) -> str:
        """The words for what shapes this link: `netem` or `tbf + iptables`."""
        if self.netem:
            return "netem"
        used = (["tbf"] if shape.rate_kbit else []) + (["iptables"] if shape.loss_pct else [])
        return " + ".join(used) + ", netem not in this kernel"

    def refuse(self, shape: LinkShape) -> str | None:
        """Why this kit cannot make this shape (None: it can)."""
        if self.unavailable:
            return self.unavailable
        if shape.delay_ms and not self.netem:
            return ("--delay needs netem, which this kernel lacks; --rate and --loss work "
                    "here (tbf + iptables)")
        if shape.direction is not Direction.OUT and not self.ifb:
            return "shaping what a node receives needs an ifb device; use --direction out"
        return None


# One shell line per check; each prints its name when the kernel took it.
PROBE_SCRIPT = "; ".join((
    "ip link set lo up",
    "tc qdisc add dev lo root netem delay 1ms 2>/dev/null && echo netem"
    " && tc qdisc del dev lo root",
    "tc qdisc add dev lo root tbf rate 1mbit burst 16kb latency 100ms 2>/dev/null && echo tbf"
    " && tc qdisc del dev lo root",
    f"ip link add {IFB} type ifb 2>/dev/null && echo ifb && ip link del {IFB}",
    "iptables -A INPUT -i lo -m statistic --mode random --probability 0.5 -j ACCEPT"
    " 2>/dev/null && echo statistic",
    "true",
))


def kit_from_probe(output: str) -> Kit:
    found = set(output.split())
    return Kit(netem="netem" in found, tbf="tbf" in found, ifb="ifb" in found,
               statistic="statistic" in found)


def setup_commands() -> list[Command]:
    """The loss chains, hooked in once when the node's namespace is made."""
    commands: list[Command] = []
    for chain, hook in ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT")):
        commands += [["iptables", "-N", chain], ["iptables", "-A", hook, "-j", chain]]
    return commands


def _qdisc(shape: LinkShape, netem: bool) -> list[str]:
    """The qdisc (after `root`) that makes this shape on one device."""
    if netem:
        spec = ["netem"]
        if shape.delay_ms:
            spec += ["delay", f"{shape.delay_ms}ms"] + ([f"{shape.jitter_ms}ms"]
                                                       if shape.jitter_ms else [])
        if shape.loss_pct:
            spec += ["loss", f"{shape.loss_pct:g}%"]
        if shape.rate_kbit:
            spec += ["rate", f"{shape.rate_kbit}kbit"]
        return spec
    # At least one full-size packet per burst, and about 20 ms of the rate.
    burst = max(3_000, shape.rate_kbit * 1000 // 8 // 50)
    return ["tbf", "rate", f"{shape.rate_kbit}kbit", "burst", str(burst),
            "latency", f"{TBF_LATENCY_MS}ms"]


def shape_commands(shape: LinkShape, kit: Kit) -> list[Command]:
    """Shape the node's link (run `unshape_commands` first: these add, they do not replace)."""
    reason = kit.refuse(shape)
    if reason:
        raise KinspectError(reason)
    qdisc_needed = kit.netem or bool(shape.rate_kbit)
    commands: list[Command] = []
    if shape.direction is not Direction.IN and qdisc_needed:
        commands.append(["tc", "qdisc", "replace", "dev", DEVICE, "root", *_qdisc(shape, kit.netem)])
    if shape.direction is not Direction.OUT and qdisc_needed:
        commands += [
            ["ip", "link", "add", IFB, "type", "ifb"],
            ["ip", "link", "set", IFB, "up"],
            ["tc", "qdisc", "add", "dev", DEVICE, "handle", "ffff:", "ingress"],
            ["tc", "filter", "add", "dev", DEVICE, "parent", "ffff:", "protocol", "all", "u32",
             "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", IFB],
            ["tc", "qdisc", "replace", "dev", IFB, "root", *_qdisc(shape, kit.netem)],
        ]
    if shape.loss_pct and not kit.netem:
        probability = f"{shape.loss_pct / 100:.4f}"
        for chain, flag, way in ((CHAIN_OUT, "-o", Direction.IN), (CHAIN_IN, "-i", Direction.OUT)):
            if shape.direction is not way:
                commands.append(["iptables", "-A", chain, flag, DEVICE, "-m", "statistic",
                                 "--mode", "random", "--probability", probability, "-j", "DROP"])
    return commands


def unshape_commands() -> list[Command]:
    """Everything `shape_commands` may have made, removed; each may fail (nothing to remove)."""
    return [["tc", "qdisc", "del", "dev", DEVICE, "root"],
            ["tc", "qdisc", "del", "dev", DEVICE, "ingress"],
            ["ip", "link", "del", IFB],
            ["iptables", "-F", CHAIN_IN],
            ["iptables", "-F", CHAIN_OUT]]


def left_behind(qdiscs: str, links: str, rules: str) -> list[str]:
    """What shaping left in a node (`tc qdisc show`, `ip -o link`, `iptables -S` output)."""
    found = [line for line in qdiscs.splitlines()
             if any(kind in line for kind in (" netem ", " tbf ", " ingress "))]
    found += [line for line in links.splitlines() if IFB in line]
    found += [line for line in rules.splitlines()
              if line.startswith(("-A " + CHAIN_IN, "-A " + CHAIN_OUT))]
    return found
