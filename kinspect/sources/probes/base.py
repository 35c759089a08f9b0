"""The probes' interface, the poll they are given, and the connections they ask on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import NoReturn, Protocol, TypeVar

from confluent_kafka.admin import AdminClient

from kinspect.clients.wire import BrokerClaim, BrokerLink
from kinspect.model import PartitionDecision, PartitionMeta, ReplicaEnd, Unknown
from kinspect.model.views import Mode

Key = tuple[str, int]
Claims = dict[int, dict[Key, BrokerClaim]]
Ends = Mapping[Key, Mapping[int, ReplicaEnd]]
LinkSettings = Mapping[str, object]  # kafka-python's settings (clients/wire.connection_settings)
Answer_co = TypeVar("Answer_co", covariant=True)
Found = TypeVar("Found")


@dataclass(frozen=True)
class Poll:
    """What one full poll's metadata said, as every probe is given it; the probes asked once
    the first answers are in also get what those found (`ends`, `decisions`, this poll's
    `mode`)."""

    polled_at_ms: int
    brokers: dict[int, str]
    controller: int | None
    partitions: dict[Key, PartitionMeta]
    topics: tuple[str, ...]
    refresh: bool  # the slow questions (configs, log dirs) are asked this poll
    probing: bool  # each broker is asked directly what it believes
    mode: Mode
    zookeeper_watched: bool  # the observer reads ZooKeeper (the reassignments are there)
    known_brokers: Mapping[int, str] = field(default_factory=dict)  # asked even if unlisted
    controllers: Mapping[int, str] = field(default_factory=dict)  # KRaft controller listeners
    ends: Ends = field(default_factory=dict)  # each broker's own log end of each partition
    decisions: Mapping[Key, PartitionDecision] = field(default_factory=dict)  # KRaft's

    def targets(self) -> dict[int, str]:
        """The brokers asked directly: those listed and those known to exist."""
        return {**self.known_brokers, **self.brokers}


class Probe(Protocol[Answer_co]):
    """One question of the full poll, and the answer it adds to the view."""

    def asks(self, poll: Poll) -> bool:
        """Whether this poll asks it (e.g. the slow ones every tenth poll, KRaft's in KRaft)."""
        ...

    def ask(self, poll: Poll) -> Answer_co:
        """The answer; a broker that does not answer is in it (Unknown, left out), never raised."""
        ...

    def unasked(self, poll: Poll) -> Answer_co:
        """What the view holds when this poll does not ask: the last answer, or Unknown."""
        ...


class EveryPoll:
    """A probe every poll asks: it has no answer for a poll that does not."""

    def asks(self, poll: Poll) -> bool:
        return True

    def unasked(self, poll: Poll) -> NoReturn:
        raise AssertionError(f"{type(self).__name__} is asked every poll")


def start(pool: ThreadPoolExecutor, probe: Probe[Found], poll: Poll) -> Callable[[], Found]:
    """The probe asked on the poll's pool when this poll asks it; called, its answer (waited
    for)."""
    if not probe.asks(poll):
        return partial(probe.unasked, poll)
    return pool.submit(probe.ask, poll).result


def ask_now(probe: Probe[Found], poll: Poll) -> Found:
    """The probe asked on this thread when this poll asks it, else what it holds unasked."""
    if not probe.asks(poll):
        return probe.unasked(poll)
    return probe.ask(poll)


@dataclass(frozen=True)
class Asking:
    """What the probes ask with: the AdminClient, the settings of the connections to each
    broker (None: brokers are not asked directly, `problem` says why, e.g. GSSAPI), the poll's
    timeout, and a per-broker question's time limit (it grows with the cluster)."""

    admin: AdminClient
    settings: LinkSettings | None
    problem: str | None
    timeout_s: float
    budget: Callable[[float], float]

    def not_asked(self) -> Unknown:
        return Unknown(f"brokers not asked directly ({self.problem})")


class Links:
    """One connection to each broker, kept between polls and made anew when its address
    changes. A connection is used by one thread at a time: a probe asking beside others keeps
    links of its own. The full polls' are shared by probes on several threads: one made at
    once by two would leave one never closed, hence the lock."""

    def __init__(self, settings: LinkSettings | None) -> None:
        self.settings = settings
        self._links: dict[int, BrokerLink] = {}
        self._lock = threading.Lock()

    def to(self, broker: int, address: str) -> BrokerLink:
        with self._lock:
            link = self._links.get(broker)
            if link is not None and link.address == address:
                return link
            if link is not None:
                link.close()
            link = self._links[broker] = BrokerLink(address, self.settings, broker)
            return link

    def all_of(self, brokers: Mapping[int, str]) -> list[BrokerLink]:
        """A link to each of these brokers, in the order of their ids."""
        return [self.to(b, address) for b, address in sorted(brokers.items())]

    def made(self, broker: int) -> BrokerLink | None:
        """The link to this broker if one was made (no new connection)."""
        return self._links.get(broker)

    def close(self) -> None:
        with self._lock:
            links, self._links = list(self._links.values()), {}
        for link in links:
            link.close()


def why(link: BrokerLink, exc: BaseException) -> str:
    """Why a broker did not answer: the connection's own reason (a TLS handshake, a refused
    login) where it kept one, else the exception's."""
    reason = getattr(link, "last_error", None)
    if reason:
        return str(reason)
    return str(exc) or type(exc).__name__


BROKER_ERRORS = (OSError, ConnectionError, ValueError, EOFError)  # a broker that did not answer
