"""What each broker believes, asked of it directly: its own metadata (who it thinks leads
what: how a zombie leader shows), how far its log of each partition it hosts reaches, and,
where a replica is at an older epoch than the leader, where that epoch ends in the leader's
log (what lies past it is doomed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kinspect.clients.wire import BrokerClaim, ask_claims, ask_epoch_ends, ask_log_ends
from kinspect.model import EpochEnd, ReplicaEnd
from kinspect.sources.probes.base import BROKER_ERRORS, Asking, Claims, Key, Links, Poll, why

Decided = Callable[[], Mapping[Key, tuple[int | None, int]] | None]  # leader, epoch (ZooKeeper)
_NO_ENDS: Mapping[int, ReplicaEnd] = {}


@dataclass(frozen=True)
class BrokerAnswers:
    """Each broker's own word: its claims (of the brokers that answered), the log ends it
    holds, and why each other one did not answer."""

    claims: Claims
    ends: dict[Key, dict[int, ReplicaEnd]]
    errors: dict[int, str]


_Told = tuple[int, dict[Key, BrokerClaim] | None, dict[Key, ReplicaEnd], str | None]


class BrokerAnswersProbe:
    """Every broker (the listed and the known) asked in parallel for its metadata and its own
    log ends; a frozen or cut-off one just does not answer in time."""

    def __init__(self, asking: Asking, links: Links) -> None:
        self._asking = asking
        self._links = links
        self.errors: dict[int, str] = {}  # broker -> why it did not answer, of the last poll

    def asks(self, poll: Poll) -> bool:
        return poll.probing

    def unasked(self, poll: Poll) -> BrokerAnswers:
        return BrokerAnswers({}, {}, {})  # its own dicts: the view and the fast polls keep them

    def ask(self, poll: Poll) -> BrokerAnswers:
        targets = poll.targets()
        timeout = self._asking.budget(1.0)
        with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
            answers = list(pool.map(lambda item: self._ask_one(item[0], item[1], timeout),
                                    sorted(targets.items())))
        ends: dict[Key, dict[int, ReplicaEnd]] = {}
        for broker, _claims, logs, _error in answers:
            for key, end in logs.items():
                ends.setdefault(key, {})[broker] = end
        self.errors = {b: error for b, _c, _l, error in answers if error is not None}
        claims = {b: c for b, c, _, _e in answers if c is not None}
        return BrokerAnswers(claims, ends, self.errors)

    def _ask_one(self, broker: int, address: str, timeout: float) -> _Told:
        link = self._links.to(broker, address)
        try:
            claims = ask_claims(link, timeout).partitions
        except BROKER_ERRORS as exc:
            return broker, None, {}, why(link, exc)
        hosted = [key for key, claim in claims.items() if broker in claim.replicas]
        try:
            return broker, claims, ask_log_ends(link, hosted, timeout), None
        except BROKER_ERRORS as exc:
            return broker, claims, {}, why(link, exc)


def older_epochs(ends: Mapping[int, ReplicaEnd], leader: int, epoch: int, watched: bool
                 ) -> set[int] | None:
    """The epochs older than the leader's current one that a replica's log ends in (and, when
    watched, the one before it: its end is where the current epoch starts); None for a
    partition whose replicas are all at the current epoch, as nearly all are."""
    lead = ends.get(leader)
    current = epoch
    if lead is not None and lead.epoch is not None:
        current = max(epoch, lead.epoch)
    older = None
    for end in ends.values():
        if end.epoch is not None and end.epoch < current:
            if older is None:
                older = {end.epoch}
            else:
                older.add(end.epoch)
    if watched and current > 0:
        if older is None:
            older = set()
        older.add(current - 1)
    return older


class EpochEndsProbe:
    """Each current leader asked where the older epochs that matter end in its log: those of
    replicas behind its epoch (a cut-off leader's log), and, for watched partitions, the epoch
    before its own (where its epoch starts). The leaders are ZooKeeper's (`decided`), in KRaft
    this poll's decisions, else the AdminClient's. Asked on the brokers' probe's links, once
    their log ends are in."""

    def __init__(self, asking: Asking, links: Links, decided: Decided,
                 watched: Callable[[], frozenset[Key]]) -> None:
        self._asking = asking
        self._links = links
        self._decided = decided
        self._watched = watched

    def asks(self, poll: Poll) -> bool:
        return poll.probing

    def unasked(self, poll: Poll) -> dict[Key, dict[int, EpochEnd]]:
        return {}

    def ask(self, poll: Poll) -> dict[Key, dict[int, EpochEnd]]:
        out: dict[Key, dict[int, EpochEnd]] = {}
        for leader, wanted in self._wanted(poll).items():
            link = self._links.made(leader)
            if link is None:
                continue
            try:
                out.update(ask_epoch_ends(link, wanted, self._asking.budget(1.0)))
            except BROKER_ERRORS:
                continue
        return out

    def _leaders(self, poll: Poll) -> Mapping[Key, tuple[int | None, int]]:
        """Who leads each partition at which epoch (-1: the AdminClient does not say)."""
        decided = self._decided()
        if decided:
            return decided
        if poll.decisions:
            return {k: (d.leader, d.leader_epoch) for k, d in poll.decisions.items()}
        return {k: (m.leader, -1) for k, m in poll.partitions.items()}

    def _wanted(self, poll: Poll) -> dict[int, dict[Key, set[int]]]:
        """leader -> partition -> the older epochs to ask it about."""
        watched = self._watched()
        asks: dict[int, dict[Key, set[int]]] = {}
        for key, (leader, epoch) in self._leaders(poll).items():
            if leader is None:
                continue
            older = older_epochs(poll.ends.get(key, _NO_ENDS), leader, epoch, key in watched)
            if older:
                asks.setdefault(leader, {})[key] = older
        return asks
