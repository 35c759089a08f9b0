"""One controller move is one event, however many snapshots it took to be seen (pure).

A ZooKeeper-mode move reaches the observer in steps: the old controller's /controller znode is
deleted, the new controller creates it, and /controller_epoch is bumped (Kafka writes the last
two in one transaction, but their watches fire one by one). Diffed snapshot by snapshot that is
three lines ("3 → none", "none → 1", "1 → 1 (epoch 2)") for one fact. A KRaft quorum election
can likewise show a leaderless epoch or two before its leader.

So a change is held as pending until the move is complete, and then told once: "controller 3 →
1 (epoch 2)". Complete is, in ZooKeeper mode, a controller known at an epoch other than the
last one told (the two znodes arrive apart); in KRaft, a leader known at all (DescribeQuorum
answers a leader with its epoch, which a leaderless answer before it may already carry).
A vacancy (no controller) still pending VACANCY_GRACE_MS after it began is told on its own
("controller 3 → none", at the moment it began): a ZooKeeper re-election takes milliseconds and
a KRaft one a few seconds, so a cluster without a controller for longer is news to whoever
watches. A controller known whose epoch has not moved after the grace is told as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

VACANCY_GRACE_MS = 5_000


@dataclass(frozen=True)
class ControllerState:
    """Who a snapshot says is controller (None: none, or nobody said), at which epoch."""

    id: int | None
    epoch: int | None


@dataclass(frozen=True)
class ControllerMove:
    """One move told: from `old` to `new` (None: no controller) at `epoch`, at `ts`."""

    ts: int
    old: int | None
    new: int | None
    epoch: int | None

    def detail(self, kraft: bool) -> str:
        """The event's words: 'controller 3 → 1 (epoch 2)', KRaft's 'quorum leader …'."""
        who = "quorum leader" if kraft else "controller"
        epoch = "" if self.epoch is None else f" (epoch {self.epoch})"
        if self.old == self.new and self.new is not None:
            return f"{who} {self.new} re-elected{epoch}"
        return f"{who} {_id(self.old)} → {_id(self.new)}{epoch}"


def _id(node: int | None) -> str:
    return "none" if node is None else str(node)


@dataclass(frozen=True)
class _Pending:
    """A change under way since `since`; `latest` is the newest state seen."""

    since: int
    latest: ControllerState


class ControllerMoves:
    """Follows the controller through successive observations and tells each move once.

    Time comes from the observations (snapshots' or recorded events' ts), never a clock, so a
    recorded timeline replayed through it merges the same way as it did live.
    """

    def __init__(self, grace_ms: int = VACANCY_GRACE_MS) -> None:
        self.grace_ms = grace_ms
        self._told: ControllerState | None = None
        self._pending: _Pending | None = None

    @property
    def seeded(self) -> bool:
        return self._told is not None

    def see(self, ts: int, state: ControllerState, kraft: bool = False) -> list[ControllerMove]:
        """The moves this observation completes (the first observation only sets the start)."""
        if self._told is None:
            self._told = state
            return []
        out = self._overdue(ts)
        if state == self._told:
            self._pending = None
        elif self._complete(state, kraft):
            out.append(self._tell(ts, state))
        else:
            since = self._pending.since if self._pending else ts
            self._pending = _Pending(since, state)
        return out

    def flush(self) -> list[ControllerMove]:
        """At the end of the observations: a change still pending is told as it stands."""
        pending = self._pending
        if pending is None:
            return []
        return self._settle(pending)

    def _complete(self, state: ControllerState, kraft: bool) -> bool:
        """A controller is known; in ZooKeeper mode at an epoch other than the last told (or at
        no known one)."""
        told = self._told
        assert told is not None
        return state.id is not None and (kraft or state.epoch is None or state.epoch != told.epoch)

    def _overdue(self, ts: int) -> list[ControllerMove]:
        """A change pending for the grace or longer by `ts` is told as it stood."""
        pending = self._pending
        if pending is None or ts - pending.since < self.grace_ms:
            return []
        return self._settle(pending)

    def _settle(self, pending: _Pending) -> list[ControllerMove]:
        """Tell a pending change as it stands: a vacancy at the moment it began (unless none
        was told already), a controller whose epoch never moved as it is."""
        told = self._told
        assert told is not None
        state = pending.latest
        if state.id is None:
            self._pending, self._told = None, state
            return [] if told.id is None else [ControllerMove(pending.since, told.id, None,
                                                              state.epoch)]
        return [self._tell(pending.since, state)]

    def _tell(self, ts: int, state: ControllerState) -> ControllerMove:
        told = self._told
        assert told is not None
        self._told, self._pending = state, None
        return ControllerMove(ts, told.id, state.id, state.epoch)
