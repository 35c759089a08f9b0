"""The brokers' side of the story: AdminClient metadata, configs and offsets, polled.

One poll at a time on a thread of its own (the next poll starts when the last one finished, so
a slow cluster never stacks requests), every call bounded by a timeout. A failed poll is a state
("error: ..."), never an exception that escapes. Each broker is also asked directly (see
clients/wire.py) what it believes, which is how a zombie leader shows, and how far its own log
of each partition reaches, which is how a follower falling behind and a cut-off leader running
ahead of the new one show. Where a replica is at an older epoch than the leader, the leader is
asked where that epoch ends in its log: what lies past it is doomed.

Unless the observer watches ZooKeeper, each poll also asks the KRaft quorum who leads it
(clients/quorum.py): the brokers' ApiVersions tell the mode, and in KRaft each partition's
decision is the newest claim any broker holds (sources/claims.py).

The AdminSource keeps the threads (the full polls, KRaft's fast polls), the scheduling and the
view; each question of a full poll is a probe of its own (sources/probes/: configs, offsets,
the brokers' own answers, epoch ends, the quorum, reassignments, eligible leaders, log dirs,
hidden topics), given the poll's metadata and answering a typed value that `_view_of` puts into
the BrokerView. Adding a probe: the recipe is in sources/probes/__init__.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from confluent_kafka import KafkaException
from confluent_kafka.admin._metadata import ClusterMetadata

from kinspect.clients.groups_watch import GroupsWatch
from kinspect.clients.kafka import (
    AUTH_FAILED,
    TLS_STATE,
    WatchedAdmin,
    admin_client,
    is_tls_message,
)
from kinspect.clients.quorum import QuorumPoll
from kinspect.clients.wire import MetadataAnswer, ask_claims, connection_settings
from kinspect.errors import KinspectError
from kinspect.model import BrokerView, EpochEnd, Fact, Offsets, PartitionDecision, PartitionMeta
from kinspect.model.views import AdminState, Mode
from kinspect.sources.claims import newest_claims
from kinspect.sources.probes.base import (
    Asking,
    Claims,
    Key,
    Links,
    LinkSettings,
    Poll,
    ask_now,
    start,
)
from kinspect.sources.probes.brokers_probe import BrokerAnswers, BrokerAnswersProbe, Decided, EpochEndsProbe
from kinspect.sources.probes.cluster_probe import (
    Eligible,
    EligibleLeadersProbe,
    KraftQuorumProbe,
    Reassignments,
    ReassignmentsProbe,
    quorum_refused,
)
from kinspect.sources.probes.configs_probe import (
    BrokerConfigs,
    BrokerConfigsProbe,
    TopicConfigs,
    TopicConfigsProbe,
)
from kinspect.sources.probes.disks_probe import Disks, HiddenTopicsProbe, LogDirsProbe
from kinspect.sources.probes.offsets_probe import OffsetsProbe
from kinspect.sources.probes.stalls_probe import Stalls

__all__ = ["AdminSource", "Claims", "Decided", "Key", "fast_targets", "keep_newer_epochs",
           "listed_by_most", "next_in_turn", "next_poll_in"]

CONFIG_EVERY_N_POLLS = 10
# KRaft has no watches: beside the full polls each broker's own metadata is asked this often,
# and less often in proportion beyond FAST_PARTITIONS partitions (an answer grows with them).
# The brokers are asked in turn, one every FAST_S / brokers: every broker hears of a change
# from the controller within milliseconds, so a change is seen three times sooner on three
# brokers than by asking all of them together every FAST_S, at the same cost to each.
FAST_S = 0.15
FAST_PARTITIONS = 2_000
FAST_IDLE_S = 0.5  # not KRaft (yet), or the brokers not answering: look again this often
# A broker's answer about every partition grows with the cluster: the per-broker questions'
# time limits hold up to this many partitions, and grow in proportion beyond.
BUDGET_PARTITIONS = 10_000
POLL_REST = 1.0  # after a full poll, rest at least this many times as long as it took


def fast_targets(brokers: Mapping[int, str], unreachable: Mapping[int, str]) -> dict[int, str]:
    """The brokers a fast poll asks: not those the last full poll could not reach. A frozen
    or cut-off broker would hold every fast poll for its timeout and have its connection made
    again each time; the full poll keeps asking it."""
    return {b: address for b, address in brokers.items() if b not in unreachable}


def next_poll_in(interval_s: float, took_s: float) -> float:
    """Seconds from the end of a full poll to the next: the interval less what the poll took,
    but at least as long as it took (on a big cluster, whose poll takes longer than the
    interval, the polls then use half of one core at most instead of all of it)."""
    return max(0.05, interval_s - took_s, took_s * POLL_REST)


def next_in_turn(brokers: Iterable[int], last: int | None) -> int:
    """The broker a fast poll asks after `last`: the next id up, round to the smallest (a
    broker joining or leaving the list does not upset the turn)."""
    ids = sorted(brokers)
    if last is None:
        return ids[0]
    return next((b for b in ids if b > last), ids[0])


def keep_newer_epochs(current: Mapping[Key, PartitionDecision],
                      landing: Mapping[Key, PartitionDecision]) -> dict[Key, PartitionDecision]:
    """`landing` was asked before `current` was (a full poll that started before a fast poll
    landed): the current decisions stand, except a partition whose landing epoch is higher
    (a leader epoch only grows). A poll landing late never takes the screen back in time."""
    out = dict(current)
    for key, decision in current.items():
        older = landing.get(key)
        if older is not None and older.leader_epoch > decision.leader_epoch:
            out[key] = older
    return out


def listed_by_most(lists: Mapping[int, Mapping[int, str]], current: Mapping[int, str]
                   ) -> dict[int, str]:
    """The brokers most answering brokers list (in KRaft: the unfenced ones). A zombie's stale
    image is outvoted; on a tie the current view stands."""
    out = {}
    for broker in {b for listed in lists.values() for b in listed} | set(current):
        votes = 2 * sum(broker in listed for listed in lists.values())
        if votes < len(lists):
            continue
        if votes == len(lists) and broker not in current:
            continue  # a tie: the current view stands
        address = current.get(broker)
        if address is None:
            address = next(listed[broker] for listed in lists.values() if broker in listed)
        out[broker] = address
    return out


def _refused_state(refused: str | None) -> AdminState:
    """A failed poll's state: a refused login or TLS handshake said as such, else an error."""
    if not refused:
        return "error"
    if is_tls_message(refused):
        return TLS_STATE
    return AUTH_FAILED


def _reason(exc: BaseException) -> str:
    """A failed poll's reason: librdkafka's own words (KafkaError.str()) where it gave some."""
    reason = str(exc)
    if exc.args and hasattr(exc.args[0], "str"):
        reason = exc.args[0].str()
    return reason or type(exc).__name__


def _partitions_of(metadata: ClusterMetadata) -> dict[Key, PartitionMeta]:
    """Who leads each partition (librdkafka's -1: none), its replicas and ISR."""
    partitions: dict[Key, PartitionMeta] = {}
    for name, topic in metadata.topics.items():
        for pid, part in topic.partitions.items():
            leader: int | None = part.leader
            if part.leader < 0:
                leader = None
            partitions[(name, pid)] = PartitionMeta(leader=leader, replicas=tuple(part.replicas),
                                                    isr=tuple(part.isrs))
    return partitions


def _offline(claims: Claims) -> dict[Key, tuple[int, ...]]:
    """Replicas on a failed log dir, as the broker with the newest word on each partition
    says (Metadata's offline_replicas: what `kafka-topics --describe` prints as "Offline:")."""
    return {key: claim.offline for key, claim in newest_claims(claims).items() if claim.offline}


@dataclass(frozen=True)
class PollAnswers:
    """Every probe's answer of one full poll (or what it holds when not asked this poll)."""

    configs: TopicConfigs
    broker_configs: BrokerConfigs
    brokers: BrokerAnswers
    quorum: QuorumPoll
    decided: dict[Key, PartitionDecision]
    epoch_ends: dict[Key, dict[int, EpochEnd]]
    disks: Disks
    offsets: dict[Key, Offsets]
    reassignments: Reassignments
    eligible: Eligible
    hidden: Fact[frozenset[str]]


@dataclass(frozen=True)
class Probes:
    """The full poll's probes (sources/probes/), made once per source."""

    topic_configs: TopicConfigsProbe
    broker_configs: BrokerConfigsProbe
    offsets: OffsetsProbe
    brokers: BrokerAnswersProbe
    quorum: KraftQuorumProbe
    reassignments: ReassignmentsProbe
    log_dirs: LogDirsProbe
    epoch_ends: EpochEndsProbe
    eligible: EligibleLeadersProbe
    hidden: HiddenTopicsProbe

    @classmethod
    def made(cls, asking: Asking, links: Links, decided: Decided,
             watched: Callable[[], frozenset[Key]]) -> Probes:
        """`links`: the full polls' connections, shared by the brokers' own answers, the epoch
        ends (asked once those are in), the reassignments and the eligible leaders."""
        log_dirs = LogDirsProbe(asking)
        return cls(TopicConfigsProbe(asking), BrokerConfigsProbe(asking), OffsetsProbe(asking),
                   BrokerAnswersProbe(asking, links), KraftQuorumProbe(asking),
                   ReassignmentsProbe(asking, links), log_dirs,
                   EpochEndsProbe(asking, links, decided, watched),
                   EligibleLeadersProbe(asking, links), HiddenTopicsProbe(asking, log_dirs))

    def close(self) -> None:
        self.offsets.close()
        self.log_dirs.close()
        self.quorum.close()


class AdminSource:
    """Polls the cluster every `interval_s` on its own thread and keeps the last BrokerView."""

    def __init__(self, bootstrap: str, on_change: Callable[[], None], interval_s: float = 1.0,
                 timeout_s: float = 3.0, config: Mapping[str, str] | None = None,
                 probe_brokers: bool = True, watch_groups: bool = True,
                 groups: GroupsWatch | None = None,
                 client: WatchedAdmin | None = None) -> None:
        """`client`: the AdminClient made ahead for this source (clients/kafka.admin_client),
        with the same bootstrap, timeout and config; else one is made here."""
        self.bootstrap = bootstrap
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.probe_brokers = probe_brokers
        self._on_change = on_change
        made = client or admin_client(bootstrap, timeout_s, config)
        self._admin, self._auth = made.client, made.auth
        self._lock = threading.Lock()
        self._view = BrokerView(state="unknown", error=None, brokers={}, controller_id=None,
                                partitions={}, configs={}, offsets={})
        self._claims: Claims = {}
        self._fast_lists: dict[int, dict[int, str]] = {}  # each broker's last broker list
        self._fast_last: int | None = None  # the broker the last fast poll asked
        self._asked_at = 0.0  # when the brokers' claims behind the view's decisions were asked
        self._partitions = 0  # how many the last metadata listed (budget())
        self._seen_lock = threading.Lock()
        self._link_settings: LinkSettings | None = None
        self.probe_problem: str | None = None
        try:
            self._link_settings = connection_settings(config)
        except KinspectError as exc:  # e.g. GSSAPI: the rest of kinspect still works
            self.probe_problem = str(exc)
        self.decided: Decided = lambda: None
        self._watched: frozenset[Key] = frozenset()
        self._links = Links(self._link_settings)  # the full polls'
        self._fast_links = Links(self._link_settings)  # the fast polls' own: they run beside
        asking = Asking(self._admin, self._link_settings, self.probe_problem, timeout_s,
                        self.budget)
        self._probes = Probes.made(asking, self._links, self._decided_now, self._watched_now)
        self._stalls = Stalls()
        self._polls = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fast_thread: threading.Thread | None = None
        self._close_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None  # the fast polls' (KRaft)
        self.known_brokers: dict[int, str] = {}  # e.g. the lab's brokers, probed even if unlisted
        # zookeeper | kraft | unknown: "zookeeper" when the observer watches ZooKeeper (the
        # quorum is then never asked), else what the brokers' ApiVersions say, once known.
        self.mode: Mode = "unknown"
        self.zookeeper_watched = False
        self.controllers: dict[int, str] = {}  # KRaft node id -> controller listener, if known
        self._seen: dict[Key, tuple[int, int]] = {}  # KRaft decision: (epoch, first seen ms)
        # Consumer groups come from a process of their own (see clients/groups.py: a librdkafka
        # assertion there must not take the observer down); `groups`: one already started.
        self.groups = groups
        if self.groups is None and watch_groups:
            self.groups = GroupsWatch(bootstrap, dict(config or {}), interval_s, timeout_s)
        if self.groups is not None:
            self.groups.listen(on_change)

    @property
    def probe_errors(self) -> dict[int, str]:
        """Broker -> why it did not answer directly, of the last full poll that asked."""
        return self._probes.brokers.errors

    def start(self, once: bool = False) -> None:
        """Poll on a thread of its own; `once`: a single poll (one-shot commands: a second
        poll, due at once when the first took longer than interval_s, would only delay stop)."""
        if self.groups:
            self.groups.start()
        target: Callable[[], object] = self._loop
        if once:
            target = self.poll_once
        self._thread = threading.Thread(target=self._run, args=(target,), name="kinspect-admin",
                                        daemon=True)
        self._thread.start()
        if not once:  # it never closes connections itself: a daemon thread closing TLS
            # sockets while the interpreter exits crashed `watch` (SIGSEGV after its error line)
            self._fast_thread = threading.Thread(target=self._fast_loop, name="kinspect-fast",
                                                 daemon=True)
            self._fast_thread.start()

    def _run(self, target: Callable[[], object]) -> None:
        target()
        if self._stop.is_set():  # stopped while a poll was under way: the poll closes up
            self._close()

    def stop(self) -> None:
        """The caller has its answer: a poll still waiting on a silent broker closes its own
        connections when it ends, instead of holding the exit (2 s of `health --timeout 1`
        against a dead address were this wait)."""
        self._stop.set()
        if self.groups:
            self.groups.stop()
        if self._fast_thread:
            self._fast_thread.join(timeout=0.2)  # it only waits between polls: it ends at once
        if self._thread:
            self._thread.join(timeout=0.05)
            if self._thread.is_alive():
                return
        self._close()

    def _close(self) -> None:
        """Called by stop(), or by the full poll's thread when stop() could not wait for it."""
        with self._close_lock:
            self._links.close()
            self._fast_links.close()
            self._probes.close()
            if self._pool is not None:
                self._pool.shutdown(wait=False)

    def view(self) -> BrokerView:
        with self._lock:
            return self._view

    def watch_partitions(self, keys: Iterable[Key]) -> None:
        """Partitions whose current epoch's start in the leader's log matters (a running load's:
        its acknowledgements past that start at an older epoch are doomed); asked every poll."""
        with self._lock:
            self._watched = frozenset(keys)

    def _decided_now(self) -> Mapping[Key, tuple[int | None, int]] | None:
        """ZooKeeper's decisions (the observer sets `decided` once it watches ZooKeeper)."""
        return self.decided()

    def _watched_now(self) -> frozenset[Key]:
        with self._lock:
            return self._watched

    def claims(self) -> Claims:
        """Each reachable broker's own metadata: who it thinks leads what."""
        with self._lock:
            return dict(self._claims)

    def poll_once(self) -> BrokerView:
        """One full poll (also used by `kinspect snapshot`); never raises."""
        asked = time.monotonic()
        try:
            view, claims = self._poll()
        except (KafkaException, TimeoutError, OSError, RuntimeError) as exc:
            view, claims = self._failed(exc), {}
        self._auth.clear(self._admin)  # answered or not: a refusal is told once, then anew
        with self._lock:
            current = self._view
            if view.state == "ok" and asked < self._asked_at:  # a fast poll asked later landed
                view = replace(view, decided=keep_newer_epochs(current.decided, view.decided),
                               brokers=current.brokers)
                claims = self._claims
            elif view.state == "ok":
                self._asked_at = asked
            self._view, self._claims = view, claims
        self._on_change()
        return view

    def _failed(self, exc: BaseException) -> BrokerView:
        """The last view, its state and error saying why this poll failed (a refused login
        said as such)."""
        refused = self._auth.failure(self._admin)
        error = refused or _reason(exc)
        with self._lock:
            old = self._view
            return BrokerView(state=_refused_state(refused), error=error,
                              brokers=old.brokers, controller_id=old.controller_id,
                              partitions=old.partitions, configs=old.configs,
                              offsets=old.offsets, mode=old.mode, quorum=old.quorum,
                              quorum_error=old.quorum_error, controllers=old.controllers,
                              decided=old.decided)

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.poll_once()
            self._stop.wait(next_poll_in(self.interval_s, time.monotonic() - started))

    def _fast_loop(self) -> None:
        """Fast polls on a thread of their own, beside the full polls: a change that happens
        while a full poll is under way (a few hundred ms at 1,000 partitions) is not held
        until it ends."""
        while not self._stop.wait(self._fast_step() or FAST_IDLE_S):
            if self._fast_step() is not None:
                self._fast_poll()

    def _fast_step(self) -> float | None:
        """Seconds to the next fast poll: KRaft only (ZooKeeper's watches are faster still),
        with the brokers answering and per-broker links allowed."""
        view = self._view
        if not self._fast_polls_help(view):
            return None
        asked = max(1, len(fast_targets({**self.known_brokers, **view.brokers},
                                        self.probe_errors)))
        return FAST_S * max(1.0, len(view.partitions) / FAST_PARTITIONS) / asked

    def _fast_polls_help(self, view: BrokerView) -> bool:
        if self.mode != "kraft":
            return False
        if view.state != "ok":
            return False
        return self.probe_brokers and self._link_settings is not None

    def _fast_poll(self) -> None:
        """The next broker's own metadata, in turn: a leader, ISR or broker list newer than
        the view's is applied at once (the newest epoch of each partition among every broker's
        last answer wins, as in a full poll); offsets, configs and the rest wait for the full
        poll."""
        with self._lock:
            view = self._view
        targets = fast_targets({**self.known_brokers, **view.brokers}, self.probe_errors)
        if not targets:
            return
        broker = self._fast_last = next_in_turn(targets, self._fast_last)
        asked = time.monotonic()
        answer = self._ask_brokers({broker: targets[broker]}).get(broker)
        if answer is None:
            return
        with self._lock:
            if answer.partitions is self._claims.get(broker) \
                    and answer.brokers == self._fast_lists.get(broker):
                return  # the very bytes it answered last time (claims_of_bytes keeps them)
            claims = {**self._claims, broker: answer.partitions}  # the others' last answers
            self._fast_lists[broker] = answer.brokers
            lists = {b: listed for b, listed in self._fast_lists.items() if b in targets}
        decided = self._decisions(claims, time.time_ns() // 1_000_000)
        with self._lock:
            view = self._view
            if asked < self._asked_at:  # a full poll asked later landed meanwhile
                decided, brokers = keep_newer_epochs(view.decided, decided), view.brokers
            else:
                brokers = listed_by_most(lists, view.brokers)
                self._asked_at, self._claims = asked, claims
            if decided == view.decided and brokers == view.brokers:
                return
            self._view = replace(view, decided=decided, brokers=brokers)
        self._on_change()

    def _ask_brokers(self, targets: Mapping[int, str]) -> dict[int, MetadataAnswer]:
        def ask(item: tuple[int, str]) -> tuple[int, MetadataAnswer | None]:
            broker, address = item
            try:
                link = self._fast_links.to(broker, address)
                return broker, ask_claims(link, self.budget(0.5))
            except (OSError, ConnectionError, ValueError, EOFError):
                return broker, None

        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kinspect-fast")
        return {b: a for b, a in self._pool.map(ask, sorted(targets.items())) if a is not None}

    def _poll(self) -> tuple[BrokerView, Claims]:
        """One metadata request (it names the controller too), then the probes, asked at once
        where they do not depend on each other (sources/probes/)."""
        polled_at = time.time_ns() // 1_000_000
        poll = self._poll_of(self._admin.list_topics(timeout=self.budget(self.timeout_s)),
                             polled_at)
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="kinspect-poll") as pool:
            answers = self._ask_all(pool, poll)
        return self._view_of(poll, answers), answers.brokers.claims

    def _poll_of(self, metadata: ClusterMetadata, polled_at: int) -> Poll:
        """What the metadata says, as the probes are given it."""
        brokers = {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}
        controller: int | None = metadata.controller_id
        if controller is not None and controller < 0:
            controller = None
        partitions = _partitions_of(metadata)
        self._partitions = len(partitions)
        refresh = self._refresh(metadata.topics)
        self._polls += 1
        probing = self.probe_brokers and self._link_settings is not None
        return Poll(polled_at, brokers, controller, partitions, tuple(metadata.topics), refresh,
                    probing, self.mode, self.zookeeper_watched, dict(self.known_brokers),
                    dict(self.controllers))

    def _refresh(self, topics: Iterable[str]) -> bool:
        """Whether this poll asks the slow questions: every CONFIG_EVERY_N_POLLS polls, and at
        once when the topics changed."""
        if self._polls % CONFIG_EVERY_N_POLLS == 0:
            return True
        return self._probes.topic_configs.topics() != set(topics)

    def _ask_all(self, pool: ThreadPoolExecutor, poll: Poll) -> PollAnswers:
        """Every probe, in order: the first all at once; the quorum's answer tells the mode,
        the brokers' own answers the KRaft decisions, and the probes that need those follow."""
        probes = self._probes
        configs = start(pool, probes.topic_configs, poll)
        broker_configs = start(pool, probes.broker_configs, poll)
        offsets = start(pool, probes.offsets, poll)
        told = start(pool, probes.brokers, poll)
        quorum = start(pool, probes.quorum, poll)
        moving = start(pool, probes.reassignments, poll)
        disks = start(pool, probes.log_dirs, poll)
        configs_found, broker_configs_found = configs(), broker_configs()
        brokers, asked = told(), quorum()
        if asked.mode is not None:
            self.mode = asked.mode  # a cluster does not change its mode under us
        decided: dict[Key, PartitionDecision] = {}
        if self.mode == "kraft":
            decided = self._decisions(brokers.claims, poll.polled_at_ms)
        later = replace(poll, mode=self.mode, ends=brokers.ends, decisions=decided)
        epoch_ends = ask_now(probes.epoch_ends, later)
        eligible = start(pool, probes.eligible, later)
        disks_found = disks()
        offsets_found = offsets()
        reassignments, eligible_found = moving(), eligible()
        hidden = ask_now(probes.hidden, poll)  # on the disks just answered
        return PollAnswers(configs_found, broker_configs_found, brokers, asked, decided,
                           epoch_ends, disks_found, offsets_found, reassignments, eligible_found,
                           hidden)

    def _view_of(self, poll: Poll, answers: PollAnswers) -> BrokerView:
        asked = answers.quorum
        return BrokerView(
            state="ok", error=None, brokers=poll.brokers, controller_id=poll.controller,
            partitions=poll.partitions, configs=dict(answers.configs.configs),
            offsets=answers.offsets, polled_at_ms=poll.polled_at_ms,
            replica_ends=answers.brokers.ends, epoch_ends=answers.epoch_ends, mode=self.mode,
            quorum=asked.answer, quorum_error=asked.error, quorum_unknown=quorum_refused(asked),
            controllers=asked.controllers, decided=answers.decided,
            config_unknown=dict(answers.configs.unknown), reassignments=answers.reassignments,
            elr=answers.eligible, hidden_topics=answers.hidden,
            log_dirs=dict(answers.disks.log_dirs), log_dirs_at_ms=answers.disks.at_ms,
            offline_replicas=_offline(answers.brokers.claims),
            broker_configs=dict(answers.broker_configs),
            probe_errors=dict(answers.brokers.errors), probes_off=self.probe_problem,
            stalled_since=self._stalls.since(answers.reassignments, answers.brokers.ends,
                                             poll.polled_at_ms))

    def _decisions(self, claims: Claims, polled_at: int) -> dict[Key, PartitionDecision]:
        """KRaft: each partition's newest claim, with the poll that first saw its epoch (the
        other brokers get a grace period to hear of it before they count as disagreeing)."""
        seen: dict[Key, tuple[int, int]] = {}
        out = {}
        with self._seen_lock:  # the full and the fast polls both decide
            for key, claim in newest_claims(claims).items():
                epoch, first = self._seen.get(key, (None, polled_at))
                if epoch != claim.leader_epoch:
                    first = polled_at
                seen[key] = (claim.leader_epoch, first)
                out[key] = PartitionDecision(claim.leader, claim.leader_epoch, claim.isr,
                                             claim.replicas, first)
            self._seen = seen
        return out

    def budget(self, base_s: float) -> float:
        """A per-broker question's time limit: `base_s` (or the poll's timeout if shorter) up
        to BUDGET_PARTITIONS partitions, in proportion beyond (a broker with 100,000 partitions
        takes longer to write its answer than a second), never below `base_s`."""
        scale = max(1.0, self._partitions / BUDGET_PARTITIONS)
        return min(base_s, self.timeout_s) * scale
