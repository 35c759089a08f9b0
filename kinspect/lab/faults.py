"""The fault vocabulary: one `Fault` value that every front end builds and the lab carries out.

The CLI (`kinspect lab kill kafka2`), the TUI's keys and a scenario's fault plan all describe
what they want as a Fault and hand it to `LabBackend.apply`; none of them knows how a fault is
done, and none has a vocabulary of its own. `Fault.undo()` is the fault that repairs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kinspect.lab.shaping import LinkShape


class FaultKind(StrEnum):
    """What a fault does; the values are the verbs of the CLI, the journal and the reports."""

    KILL = "kill"
    STOP = "stop"
    START = "start"
    RESTART = "restart"  # stop (resuming a paused node first), then start; a down node: start
    PAUSE = "pause"
    RESUME = "resume"
    PARTITION = "partition"
    ISOLATE = "isolate"
    HEAL = "heal"
    SLOW = "slow"
    UNSLOW = "unslow"
    FILL_DISK = "fill-disk"  # a broker's small log dir filled: Kafka takes it offline
    FREE_DISK = "free-disk"
    POWER_OFF = "power-off"  # every unsynced write dropped and the broker killed (power.py)
    POWER_ON = "power-on"

    @property
    def needs_node(self) -> bool:
        return self not in {FaultKind.PARTITION, FaultKind.HEAL, FaultKind.UNSLOW}

    @property
    def disruptive(self) -> bool:
        """It breaks something (the rest repair): exactly the kinds that have an undo."""
        return self in UNDO

    @property
    def hurts(self) -> bool:
        """The cluster feels it: a disruptive fault, or a restart (down, then up by itself)."""
        return self.disruptive or self is FaultKind.RESTART

    @property
    def lane(self) -> Lane:
        """The chart's lane of its band: a disruptive fault opens a band there, a repair (and a
        restart) ends the open bands of its lane."""
        return LANES[self]

    @property
    def in_steps(self) -> bool:
        """A scenario's (and a lesson's) step may name it: the restart and the disk faults
        are the CLI's and the keys' only (a step's partition cuts its target's nodes, as one
        group, from the rest)."""
        return self not in NOT_IN_STEPS


class Lane(StrEnum):
    """What a fault took away, and so which repair gives it back."""

    DOWN = "down"
    PAUSED = "paused"
    NET = "net"
    SLOW = "slow"
    DISK = "disk"
    POWER = "power"

    @property
    def colour(self) -> str:
        """Its bands' colour, the same in the TUI's text chart and in timeline.png."""
        return LANE_COLOURS[self]


LANES = {FaultKind.KILL: Lane.DOWN, FaultKind.STOP: Lane.DOWN, FaultKind.START: Lane.DOWN,
         FaultKind.RESTART: Lane.DOWN, FaultKind.PAUSE: Lane.PAUSED,
         FaultKind.RESUME: Lane.PAUSED, FaultKind.PARTITION: Lane.NET,
         FaultKind.ISOLATE: Lane.NET, FaultKind.HEAL: Lane.NET, FaultKind.SLOW: Lane.SLOW,
         FaultKind.UNSLOW: Lane.SLOW, FaultKind.FILL_DISK: Lane.DISK,
         FaultKind.FREE_DISK: Lane.DISK, FaultKind.POWER_OFF: Lane.POWER,
         FaultKind.POWER_ON: Lane.POWER}
NOT_IN_STEPS = frozenset({FaultKind.RESTART, FaultKind.FILL_DISK, FaultKind.FREE_DISK})
# Dark enough to be a background under the TUI's words; the PNG draws them translucent.
LANE_COLOURS = {Lane.DOWN: "#4e4e4e", Lane.PAUSED: "#7a3b69", Lane.NET: "#5f4b8b",
                Lane.SLOW: "#6b4f3a", Lane.DISK: "#4e4e4e", Lane.POWER: "#2f4f6f"}
OTHER_COLOUR = "#4e4e4e"  # an older kinspect's fault (no FaultKind, so no lane)
# Journal actions that are no FaultKind, and whether each hurt the cluster: the lab's own
# steps (not faults at all) and the faults of older kinspect versions (no undo known).
LEGACY_ACTIONS = {"up": False, "down": False, "reset": False, "fetch": False, "images": False,
                  "delay": True, "loss": True}


def fault_kind(action: str) -> FaultKind | None:
    """A journal entry's action as a FaultKind (None: a legacy or unknown action)."""
    try:
        return FaultKind(action)
    except ValueError:
        return None


def hurts(action: str) -> bool:
    """Did a journal entry's action hurt the cluster (a fault, not a repair or the lab's own)?"""
    kind = fault_kind(action)
    if kind is None:
        return LEGACY_ACTIONS.get(action, False)
    return kind.hurts


def is_fault(action: str) -> bool:
    """Is a journal entry a fault or a repair (not one of the lab's own steps)?"""
    if fault_kind(action) is not None:
        return True
    return LEGACY_ACTIONS.get(action, True)


def colour(action: str) -> str:
    """A journaled fault's band colour: its lane's (an older kinspect's fault has none)."""
    kind = fault_kind(action)
    if kind is None:
        return OTHER_COLOUR
    return kind.lane.colour


UNDO = {FaultKind.KILL: FaultKind.START, FaultKind.STOP: FaultKind.START,
        FaultKind.PAUSE: FaultKind.RESUME, FaultKind.PARTITION: FaultKind.HEAL,
        FaultKind.ISOLATE: FaultKind.HEAL, FaultKind.SLOW: FaultKind.UNSLOW,
        FaultKind.FILL_DISK: FaultKind.FREE_DISK, FaultKind.POWER_OFF: FaultKind.POWER_ON}


class Scope(StrEnum):
    """What an isolated node is cut off from."""

    ALL = "all"
    ZK = "zk"
    BROKERS = "brokers"

    @property
    def words(self) -> str:
        return self.words_in(kraft=False)

    def words_in(self, kraft: bool) -> str:
        """What it cuts, in a ZooKeeper lab or a KRaft one (where the quorum stands for zk)."""
        if self is Scope.ZK and kraft:
            return "from the controller quorum"
        return {Scope.ALL: "from everything", Scope.ZK: "from ZooKeeper",
                Scope.BROKERS: "from the other brokers"}[self]

    @classmethod
    def parse(cls, text: str) -> Scope:
        """`zk` and `controllers` are one scope: what decides leaders (ZooKeeper or the
        KRaft quorum)."""
        return cls.ZK if text == "controllers" else cls(text)


@dataclass(frozen=True)
class Fault:
    """One fault to carry out on the lab.

    `node` is the node it hits (every kind but partition, heal and unslow; `all` for a power
    cut of every broker at once); `scope` says what
    an isolated node loses; `groups` are a partition's groups as given (node names, a group
    per entry, blockade's semantics); `clients_with` puts this host's clients in a node's
    groups; `shape` is how bad a slowed link is. An unslow with a node repairs that node's
    link only; without one, every slowed link.
    """

    kind: FaultKind
    node: str | None = None
    scope: Scope = Scope.ALL
    groups: tuple[tuple[str, ...], ...] = ()
    clients_with: str | None = None
    shape: LinkShape | None = None

    def __post_init__(self) -> None:
        if self.kind.needs_node and not self.node:
            raise ValueError(f"a {self.kind} fault needs a node")
        if self.kind is FaultKind.PARTITION and not self.groups:
            raise ValueError("a partition needs its groups")
        if self.kind is FaultKind.SLOW and self.shape is None:
            raise ValueError("a slow fault needs its shape")

    def undo(self) -> Fault | None:
        """The fault that repairs this one; None for a repair."""
        kind = UNDO.get(self.kind)
        if kind is None:
            return None
        keeps_node = kind.needs_node or kind is FaultKind.UNSLOW
        return Fault(kind, self.node if keeps_node else None)

    def __str__(self) -> str:
        """As a user would type it: `kill kafka2`, `isolate kafka1 from zk`, `heal`."""
        if self.kind is FaultKind.PARTITION:
            return "partition " + " ".join(",".join(g) for g in self.groups)
        text = f"{self.kind} {self.node or ''}".rstrip()
        if self.kind is FaultKind.ISOLATE:
            text += f" from {self.scope}"
        if self.kind is FaultKind.SLOW and self.shape is not None:
            text += f": {self.shape.words}"
        return text
