"""What the brokers hold on their disks (DescribeLogDirs: sizes, offline dirs, replicas moving
between dirs), and the topics there this user may not see (sources/hidden.py confirms them)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kinspect.clients.log_dirs import ask_log_dirs
from kinspect.model import Fact, Unknown
from kinspect.model.views import BrokerLogDirs
from kinspect.sources.hidden import confirm_hidden
from kinspect.sources.probes.base import Asking, EveryPoll, Links, Poll


@dataclass(frozen=True)
class Disks:
    """Each broker's log dirs, as last asked (the slow polls), and when (None: not yet)."""

    log_dirs: dict[int, Fact[BrokerLogDirs]]
    at_ms: int | None


class LogDirsProbe:
    """Each broker's log dirs. Only a broker answers for its own disks, so each is asked, in
    parallel, on connections of their own (a connection asks one question at a time: the
    brokers' probe's would wait). Asked with the slow questions; the last answer stands."""

    def __init__(self, asking: Asking) -> None:
        self._asking = asking
        self._links = Links(asking.settings)
        self.last = Disks({}, None)

    def asks(self, poll: Poll) -> bool:
        return poll.refresh and self._asking.settings is not None

    def unasked(self, poll: Poll) -> Disks:
        return self.last

    def ask(self, poll: Poll) -> Disks:
        links = self._links.all_of(poll.brokers)
        with ThreadPoolExecutor(max_workers=max(1, len(links))) as pool:
            answers = list(pool.map(lambda link: ask_log_dirs(link, self._asking.budget(2.0)),
                                    links))
        dirs = {link.broker_id: answer for link, answer in zip(links, answers, strict=True)
                if link.broker_id is not None}
        self.last = Disks(dirs, poll.polled_at_ms)
        return self.last

    def close(self) -> None:
        self._links.close()


def hosted_topics(disks: Mapping[int, Fact[BrokerLogDirs]]) -> Fact[frozenset[str]]:
    """The topics the brokers hold on disk (DescribeLogDirs answers for every topic, which
    the metadata does not: a topic this user may not describe is missing only there). Some
    brokers not answering is no reason to doubt the rest: a dead broker's topics are offline."""
    known = [d for d in disks.values() if not isinstance(d, Unknown)]
    if known:
        return frozenset(topic for d in known for topic, _partition in (*d.replicas, *d.future))
    first = next(iter(disks.values()), None)
    if isinstance(first, Unknown):
        return first
    return Unknown("not asked yet")


class HiddenTopicsProbe(EveryPoll):
    """Topics on the brokers' disks (as `disks` last answered) the metadata did not list and
    refuses to describe; asked once per change of either, not every poll."""

    def __init__(self, asking: Asking, disks: LogDirsProbe) -> None:
        self._asking = asking
        self._disks = disks
        # the last confirmation: (disks asked at, candidates) -> the answer
        self._confirmed: tuple[tuple[int | None, frozenset[str]], frozenset[str]] | None = None

    def ask(self, poll: Poll) -> Fact[frozenset[str]]:
        disks = self._disks.last
        hosted = hosted_topics(disks.log_dirs)
        if isinstance(hosted, Unknown):
            return hosted
        key = (disks.at_ms, frozenset(hosted - set(poll.topics)))
        if self._confirmed is not None and self._confirmed[0] == key:
            return self._confirmed[1]
        answer = confirm_hidden(self._asking.admin, key[1], self._asking.timeout_s)
        self._confirmed = None
        if not isinstance(answer, Unknown):
            self._confirmed = (key, answer)
        return answer
