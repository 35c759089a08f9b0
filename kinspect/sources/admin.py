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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import _AdminClientImpl

from kinspect.clients.groups_watch import GroupsWatch
from kinspect.clients.kafka import (
    AUTH_FAILED,
    TLS_STATE,
    WatchedAdmin,
    admin_client,
    is_tls_message,
)
from kinspect.clients.log_dirs import ask_log_dirs
from kinspect.clients.quorum import QuorumPoll, QuorumProbe
from kinspect.clients.reassignments import ask_controller_reassignments
from kinspect.clients.topic_partitions import ask_eligible_leaders
from kinspect.clients.wire import (
    BrokerClaim,
    BrokerLink,
    MetadataAnswer,
    ask_claims,
    ask_epoch_ends,
    ask_leader_offsets,
    ask_log_ends,
    connection_settings,
)
from kinspect.errors import KinspectError
from kinspect.model import (
    BrokerView,
    ConfigValue,
    EligibleLeaders,
    EpochEnd,
    Fact,
    Offsets,
    PartitionDecision,
    PartitionMeta,
    Reassignment,
    ReplicaEnd,
    Unknown,
)
from kinspect.model.views import AdminState, BrokerLogDirs, Mode
from kinspect.sources.claims import newest_claims
from kinspect.sources.configs import describe_brokers, describe_topics
from kinspect.sources.hidden import confirm_hidden

CONFIG_EVERY_N_POLLS = 10
SPECS = (-1, -2)  # ListOffsets' special timestamps: latest (the high watermark), earliest
# librdkafka's admin ListOffsets grows faster than the partitions it is given (1,000: 27 ms,
# 3,000: 136 ms, 10,000: 618 ms here): it is asked in chunks, all at once.
OFFSETS_CHUNK = 1_000
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

Key = tuple[str, int]
Claims = dict[int, dict[Key, BrokerClaim]]
# Who leads each partition at which epoch, as decided (ZooKeeper); None: take the brokers' word.
Decided = Callable[[], Mapping[Key, tuple[int | None, int]] | None]  # leader (None: none), epoch


def _result(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


def _list_offsets(admin: AdminClient, keys: list[Key], spec: int, timeout: float
                  ) -> Future[dict[TopicPartition, Any]]:
    """One ListOffsets per leader for all `keys`, answered as one dict in one future.

    The public AdminClient.list_offsets wraps that same call in a future per partition, each
    made and then set from Python: about 0.2 s at 10,000 partitions on a busy machine, per
    spec. The call underneath takes the same list and one future.
    """
    future: Future[dict[TopicPartition, Any]] = Future()
    request = [TopicPartition(topic, partition, spec) for topic, partition in keys]
    _AdminClientImpl.list_offsets(admin, request, future, request_timeout=timeout)
    return future


def _answers(futures: Iterable[Future[dict[TopicPartition, Any]]], deadline: float
             ) -> dict[Key, Any]:
    """The ListOffsets results by partition, of every chunk; a failed partition, a failed
    request or no answer by `deadline` is left out: its offsets are unknown, not zero, and the
    rest of the poll (who leads, the ISR) still counts, as when ZooKeeper is down and a broker
    is slow to answer."""
    out = {}
    for future in futures:
        try:
            answers = _result(future, max(0.01, deadline - time.monotonic()))
        except (KafkaException, TimeoutError):
            continue
        out.update({(tp.topic, tp.partition): info for tp, info in answers.items()
                    if not isinstance(info, KafkaError)})
    return out


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
    return next((b for b in ids if last is None or b > last), ids[0])


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
        votes = sum(broker in listed for listed in lists.values())
        if 2 * votes > len(lists) or (2 * votes == len(lists) and broker in current):
            out[broker] = current.get(broker) or next(
                listed[broker] for listed in lists.values() if broker in listed)
    return out


def _why(link: BrokerLink, exc: BaseException) -> str:
    """Why a broker did not answer: the connection's own reason (a TLS handshake, a refused
    login) where it kept one, else the exception's."""
    return getattr(link, "last_error", None) or str(exc) or type(exc).__name__


def _quorum_refused(asked: QuorumPoll | None) -> Unknown | None:
    """DescribeQuorum refused (Describe on the cluster): who leads is unknown, not absent."""
    if asked is None or asked.answer is not None or not asked.error:
        return None
    if "ClusterAuthorizationFailed" in asked.error:
        return Unknown("no Describe permission on the cluster: DescribeQuorum refused")
    return None


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
        self._links: dict[int, BrokerLink] = {}
        self._fast_links: dict[int, BrokerLink] = {}  # the fast polls' own: they run beside
        self._offset_links: dict[int, BrokerLink] = {}  # the offsets' own, beside the probe's
        self._dir_links: dict[int, BrokerLink] = {}  # the log dirs' own, beside the probe's too
        self._fast_lists: dict[int, dict[int, str]] = {}  # each broker's last broker list
        self._fast_last: int | None = None  # the broker the last fast poll asked
        self._asked_at = 0.0  # when the brokers' claims behind the view's decisions were asked
        self._partitions = 0  # how many the last metadata listed (budget())
        self._seen_lock = threading.Lock()
        try:
            self._link_settings: dict[str, Any] | None = connection_settings(config)
            self.probe_problem: str | None = None
        except KinspectError as exc:  # e.g. GSSAPI: the rest of kinspect still works
            self._link_settings, self.probe_problem = None, str(exc)
        self.decided: Decided = lambda: None
        self._watched: frozenset[Key] = frozenset()
        self._configs: dict[str, dict[str, ConfigValue]] = {}
        self._config_unknown: dict[str, Unknown] = {}
        self._broker_configs: dict[int, Fact[dict[str, ConfigValue]]] = {}
        self._disks: dict[int, Fact[BrokerLogDirs]] = {}
        self._disks_at: int | None = None
        # the last confirmation of hidden topics: (disks asked at, candidates) -> the answer
        self._hidden_for: tuple[tuple[int | None, frozenset[str]], frozenset[str]] | None = None
        self._progress: dict[tuple[Key, int], tuple[int, int]] = {}  # adding replica: end, since
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
        self.probe_errors: dict[int, str] = {}  # broker -> why it did not answer directly
        self.controllers: dict[int, str] = {}  # KRaft node id -> controller listener, if known
        self._quorum = QuorumProbe(self._link_settings)
        self._seen: dict[Key, tuple[int, int]] = {}  # KRaft decision: (epoch, first seen ms)
        # Consumer groups come from a process of their own (see clients/groups.py: a librdkafka
        # assertion there must not take the observer down); `groups`: one already started.
        self.groups = groups or (GroupsWatch(bootstrap, dict(config or {}), interval_s,
                                             timeout_s) if watch_groups else None)
        if self.groups is not None:
            self.groups.listen(on_change)

    def start(self, once: bool = False) -> None:
        """Poll on a thread of its own; `once`: a single poll (one-shot commands: a second
        poll, due at once when the first took longer than interval_s, would only delay stop)."""
        if self.groups:
            self.groups.start()
        target = self.poll_once if once else self._loop
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
            links = [*self._links.values(), *self._fast_links.values(),
                     *self._offset_links.values(), *self._dir_links.values()]
            self._links, self._fast_links, self._offset_links = {}, {}, {}
            self._dir_links = {}
            for link in links:
                link.close()
            self._quorum.close()
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
            reason = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
            refused = self._auth.failure(self._admin)  # a refused login, said as such
            with self._lock:
                old = self._view
                state: AdminState = (TLS_STATE if is_tls_message(refused) else AUTH_FAILED) \
                    if refused else "error"
                view = BrokerView(state=state,
                                  error=refused or reason or type(exc).__name__,
                                  brokers=old.brokers, controller_id=old.controller_id,
                                  partitions=old.partitions, configs=old.configs,
                                  offsets=old.offsets, mode=old.mode, quorum=old.quorum,
                                  quorum_error=old.quorum_error, controllers=old.controllers,
                                  decided=old.decided)
                claims = {}
        self._auth.clear(self._admin)  # answered or not: a refusal is told once, then anew
        with self._lock:
            current = self._view
            if asked < self._asked_at and view.state == "ok":  # a fast poll asked later landed
                view = replace(view, decided=keep_newer_epochs(current.decided, view.decided),
                               brokers=current.brokers)
                claims = self._claims
            elif view.state == "ok":
                self._asked_at = asked
            self._view, self._claims = view, claims
        self._on_change()
        return view

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
        if self.mode != "kraft" or view.state != "ok" or not self.probe_brokers \
                or self._link_settings is None:
            return None
        asked = max(1, len(fast_targets({**self.known_brokers, **view.brokers},
                                        self.probe_errors)))
        return FAST_S * max(1.0, len(view.partitions) / FAST_PARTITIONS) / asked

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
                link = self._link(broker, address, self._fast_links)
                return broker, ask_claims(link, self.budget(0.5))
            except (OSError, ConnectionError, ValueError, EOFError):
                return broker, None

        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kinspect-fast")
        return {b: a for b, a in self._pool.map(ask, sorted(targets.items())) if a is not None}

    def _poll(self) -> tuple[BrokerView, Claims]:
        """One metadata request (it names the controller too), then configs, offsets and the
        brokers' own answers at once: they do not depend on each other."""
        polled_at = time.time_ns() // 1_000_000
        metadata = self._admin.list_topics(timeout=self.budget(self.timeout_s))
        brokers = {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}
        controller = metadata.controller_id if metadata.controller_id >= 0 else None
        partitions: dict[tuple[str, int], PartitionMeta] = {}
        for name, topic in metadata.topics.items():
            for pid, part in topic.partitions.items():
                partitions[(name, pid)] = PartitionMeta(
                    leader=part.leader if part.leader >= 0 else None,  # librdkafka's -1: none
                    replicas=tuple(part.replicas), isr=tuple(part.isrs))
        self._partitions = len(partitions)
        refresh = self._polls % CONFIG_EVERY_N_POLLS == 0 or set(self._configs) != set(metadata.topics)
        self._polls += 1
        probing = self.probe_brokers and self._link_settings is not None
        asking = self._link_settings is not None and self.mode != "zookeeper"
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="kinspect-poll") as pool:
            configs = (pool.submit(describe_topics, self._admin, list(metadata.topics),
                                   self.timeout_s, self._configs, brokers, controller)
                       if refresh else None)
            broker_configs = (pool.submit(describe_brokers, self._admin, brokers, self.timeout_s)
                              if refresh else None)
            offsets = pool.submit(self._offsets, partitions, brokers)
            probe = pool.submit(self._probe, brokers) if probing else None
            quorum = pool.submit(self._ask_quorum, brokers) if asking else None
            moving = pool.submit(self._reassignments, brokers, controller)
            dirs = (pool.submit(self._log_dirs, brokers)
                    if refresh and self._link_settings is not None else None)
            if configs is not None:
                self._configs, self._config_unknown = configs.result()
            if broker_configs is not None:
                self._broker_configs = broker_configs.result()
            claims, ends = probe.result() if probe is not None else ({}, {})
            asked = quorum.result() if quorum is not None else None
            if asked is not None and asked.mode is not None:
                self.mode = asked.mode  # a cluster does not change its mode under us
            decided = self._decisions(claims, polled_at) if self.mode == "kraft" else {}
            epoch_ends = self._epoch_ends(partitions, ends, decided) if probing else {}
            elr = pool.submit(self._eligible, brokers) if self.mode == "kraft" else None
            if dirs is not None:
                self._disks, self._disks_at = dirs.result(), polled_at
            found = offsets.result()
            reassignments = moving.result()
            eligible = elr.result() if elr is not None else Unknown("not a KRaft cluster")
        view = BrokerView(state="ok", error=None, brokers=brokers, controller_id=controller,
                          partitions=partitions, configs=dict(self._configs), offsets=found,
                          polled_at_ms=polled_at, replica_ends=ends, epoch_ends=epoch_ends,
                          mode=self.mode, quorum=asked.answer if asked else None,
                          quorum_error=asked.error if asked else None,
                          quorum_unknown=_quorum_refused(asked),
                          controllers=asked.controllers if asked else (), decided=decided,
                          config_unknown=dict(self._config_unknown),
                          reassignments=reassignments, elr=eligible,
                          hidden_topics=self._hidden(set(metadata.topics)), log_dirs=dict(self._disks),
                          log_dirs_at_ms=self._disks_at, offline_replicas=_offline(claims),
                          broker_configs=dict(self._broker_configs),
                          probe_errors=dict(self.probe_errors) if probing else {},
                          probes_off=self.probe_problem,
                          stalled_since=self._stalls(reassignments, ends, polled_at))
        return view, claims

    def _links_to(self, brokers: Mapping[int, str]) -> list[BrokerLink]:
        return [self._link(b, address) for b, address in sorted(brokers.items())]

    def _reassignments(self, brokers: Mapping[int, str], controller: int | None
                       ) -> Fact[dict[Key, Reassignment]]:
        """ZooKeeper's topic znodes say it when watched; else ListPartitionReassignments, of the
        controller in ZooKeeper mode (any broker forwards it in KRaft)."""
        if self.zookeeper_watched:
            return {}  # the observer reads them from ZooKeeper (model/build.py prefers it)
        if self._link_settings is None:
            return Unknown(f"brokers not asked directly ({self.probe_problem})")
        return ask_controller_reassignments(self._links_to(brokers), controller,
                                            min(2.0, self.timeout_s))

    def _eligible(self, brokers: Mapping[int, str]
                  ) -> Fact[dict[Key, Fact[EligibleLeaders]]]:
        """KRaft's eligible leader replicas (Kafka 4.x), from the first broker that answers."""
        if self._link_settings is None:
            return Unknown(f"brokers not asked directly ({self.probe_problem})")
        answer: Fact[dict[Key, Fact[EligibleLeaders]]] = Unknown("no broker answered")
        for link in self._links_to(brokers):
            answer = ask_eligible_leaders(link, None, self.budget(2.0))
            if not isinstance(answer, Unknown) or "did not answer" not in answer.reason:
                return answer
        return answer

    def _hidden(self, listed: set[str]) -> Fact[frozenset[str]]:
        """Topics on the brokers' disks the metadata did not list and refuses to describe."""
        hosted = hosted_topics(self._disks)
        if isinstance(hosted, Unknown):
            return hosted
        key = (self._disks_at, frozenset(hosted - listed))
        if self._hidden_for is not None and self._hidden_for[0] == key:
            return self._hidden_for[1]  # asked once per change, not every poll
        answer = confirm_hidden(self._admin, key[1], self.timeout_s)
        self._hidden_for = None if isinstance(answer, Unknown) else (key, answer)
        return answer

    def _log_dirs(self, brokers: Mapping[int, str]) -> dict[int, Fact[BrokerLogDirs]]:
        """Each broker's log dirs: sizes, offline dirs, replicas moving between dirs. Only a
        broker answers for its own disks, so each is asked, in parallel, on connections of
        their own (a connection asks one question at a time: the probe's would wait)."""
        links = [self._link(b, address, self._dir_links) for b, address in sorted(brokers.items())]
        with ThreadPoolExecutor(max_workers=max(1, len(links))) as pool:
            answers = list(pool.map(lambda link: ask_log_dirs(link, self.budget(2.0)),
                                    links))
        return {link.broker_id: answer for link, answer in zip(links, answers, strict=True)
                if link.broker_id is not None}

    def _stalls(self, moving: Fact[dict[Key, Reassignment]],
                ends: Mapping[Key, Mapping[int, ReplicaEnd]], now_ms: int
                ) -> dict[tuple[Key, int], int]:
        """Since when each replica being added, still behind, has not grown its log."""
        progress: dict[tuple[Key, int], tuple[int, int]] = {}
        if isinstance(moving, Unknown):
            moving = {}
        for key, reassignment in moving.items():
            for broker in reassignment.adding:
                end = ends.get(key, {}).get(broker)
                if end is None:
                    continue
                last = self._progress.get((key, broker))
                since = last[1] if last is not None and last[0] == end.log_end else now_ms
                progress[(key, broker)] = (end.log_end, since)
        self._progress = progress
        return {k: since for k, (_end, since) in progress.items() if since < now_ms}

    def _ask_quorum(self, brokers: dict[int, str]) -> QuorumPoll:
        """The KRaft quorum: via the brokers, and each known controller directly. Until a first
        answer, the poll's whole timeout: a one-shot `health` has no earlier answer to fall
        back on, and a fresh connection to a loaded broker can take more than a second."""
        budget = min(1.0, self.timeout_s) if self._quorum.answered else self.timeout_s
        return self._quorum.poll({**self.known_brokers, **brokers}, self.controllers, budget)

    def _decisions(self, claims: Claims, polled_at: int) -> dict[Key, PartitionDecision]:
        """KRaft: each partition's newest claim, with the poll that first saw its epoch (the
        other brokers get a grace period to hear of it before they count as disagreeing)."""
        seen: dict[Key, tuple[int, int]] = {}
        out = {}
        with self._seen_lock:  # the full and the fast polls both decide
            for key, claim in newest_claims(claims).items():
                epoch, first = self._seen.get(key, (None, polled_at))
                seen[key] = (claim.leader_epoch,
                             first if epoch == claim.leader_epoch else polled_at)
                out[key] = PartitionDecision(claim.leader, claim.leader_epoch, claim.isr,
                                             claim.replicas, seen[key][1])
            self._seen = seen
        return out

    def _offsets(self, partitions: Mapping[Key, PartitionMeta], brokers: Mapping[int, str]
                 ) -> dict[Key, Offsets]:
        """Latest and earliest offsets of every partition: asked of each leader directly
        (one ListOffsets per leader and spec, as librdkafka sends them) when brokers may be
        asked, else through the AdminClient."""
        if self._link_settings is None:
            return self._admin_offsets(list(partitions))
        led: dict[int, list[Key]] = {}
        for key, meta in partitions.items():
            if meta.leader is not None and meta.leader in brokers:
                led.setdefault(meta.leader, []).append(key)
        timeout = self.budget(self.timeout_s)

        def ask(item: tuple[int, list[Key]]) -> dict[int, dict[Key, ReplicaEnd]]:
            leader, keys = item
            link = self._link(leader, brokers[leader], self._offset_links)
            try:
                return {spec: ask_leader_offsets(link, keys, spec, timeout) for spec in SPECS}
            except (OSError, ConnectionError, ValueError, EOFError):
                return {}  # this leader's partitions: offsets unknown, not zero
        with ThreadPoolExecutor(max_workers=max(1, len(led)),
                                thread_name_prefix="kinspect-offsets") as pool:
            answers = list(pool.map(ask, sorted(led.items())))
        high = {k: v for a in answers for k, v in a.get(-1, {}).items()}
        low = {k: v for a in answers for k, v in a.get(-2, {}).items()}
        out = {}
        for key in partitions:
            top, bottom = high.get(key), low.get(key)
            out[key] = Offsets(high_watermark=top.log_end if top else None,
                               log_start=bottom.log_end if bottom else None,
                               leader_epoch=top.epoch if top else None)
        return out

    def _admin_offsets(self, keys: list[Key]) -> dict[Key, Offsets]:
        """The AdminClient's way (no per-broker connections, e.g. GSSAPI): both specs asked at
        once, in chunks (librdkafka sends one ListOffsets per leader for each), collected."""
        if not keys:
            return {}
        timeout = self.budget(self.timeout_s)  # every chunk is in flight at once
        asked = [[_list_offsets(self._admin, keys[i:i + OFFSETS_CHUNK], spec, timeout)
                  for i in range(0, len(keys), OFFSETS_CHUNK)] for spec in SPECS]
        deadline = time.monotonic() + timeout + 1.0  # librdkafka's own timeout first
        high, low = (_answers(futures, deadline) for futures in asked)
        out = {}
        for key in keys:
            top, bottom = high.get(key), low.get(key)
            epoch = top.leader_epoch if top is not None else None
            out[key] = Offsets(high_watermark=_offset(top), log_start=_offset(bottom),
                               leader_epoch=epoch if epoch is None or epoch >= 0 else None)
        return out

    def _link(self, broker: int, address: str,
              links: dict[int, BrokerLink] | None = None) -> BrokerLink:
        """The connection to this broker kept in `links` (the full polls' by default): a
        connection is used by one thread at a time."""
        links = self._links if links is None else links
        link = links.get(broker)
        if link is None or link.address != address:
            if link is not None:
                link.close()
            link = links[broker] = BrokerLink(address, self._link_settings, broker)
        return link

    def budget(self, base_s: float) -> float:
        """A per-broker question's time limit: `base_s` (or the poll's timeout if shorter) up
        to BUDGET_PARTITIONS partitions, in proportion beyond (a broker with 100,000 partitions
        takes longer to write its answer than a second), never below `base_s`."""
        scale = max(1.0, self._partitions / BUDGET_PARTITIONS)
        return min(base_s, self.timeout_s) * scale

    def _probe(self, brokers: dict[int, str]) -> tuple[Claims, dict[Key, dict[int, ReplicaEnd]]]:
        """Ask every broker in parallel for its metadata and its own log ends; a frozen or
        cut-off one just does not answer in time (why is kept in `probe_errors`)."""
        targets = {**self.known_brokers, **brokers}
        timeout = self.budget(1.0)

        def ask(item: tuple[int, str]) -> tuple[int, dict[Key, BrokerClaim] | None,
                                                dict[Key, ReplicaEnd], str | None]:
            broker, address = item
            link = self._link(broker, address)
            try:
                claims = ask_claims(link, timeout).partitions
            except (OSError, ConnectionError, ValueError, EOFError) as exc:
                return broker, None, {}, _why(link, exc)
            hosted = [key for key, claim in claims.items() if broker in claim.replicas]
            try:
                return broker, claims, ask_log_ends(link, hosted, timeout), None
            except (OSError, ConnectionError, ValueError, EOFError) as exc:
                return broker, claims, {}, _why(link, exc)

        with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
            answers = list(pool.map(ask, sorted(targets.items())))
        ends: dict[Key, dict[int, ReplicaEnd]] = {}
        for broker, _claims, logs, _error in answers:
            for key, end in logs.items():
                ends.setdefault(key, {})[broker] = end
        self.probe_errors = {b: error for b, _c, _l, error in answers if error is not None}
        return {b: c for b, c, _, _e in answers if c is not None}, ends

    def _epoch_ends(self, partitions: Mapping[Key, PartitionMeta],
                    ends: Mapping[Key, Mapping[int, ReplicaEnd]],
                    decisions: Mapping[Key, PartitionDecision] | None = None
                    ) -> dict[Key, dict[int, EpochEnd]]:
        """Ask each current leader where the older epochs that matter end in its log: those of
        replicas behind its epoch (a cut-off leader's log), and, for watched partitions, the
        epoch before its own (where its epoch starts). The leaders are ZooKeeper's, in KRaft
        this poll's decisions, else the AdminClient's."""
        decided = self.decided() or {k: (d.leader, d.leader_epoch)
                                     for k, d in (decisions or {}).items()} \
            or {k: (m.leader, -1) for k, m in partitions.items()}
        with self._lock:
            watched = self._watched
        asks: dict[int, dict[Key, set[int]]] = {}
        for key, (leader, epoch) in decided.items():
            if leader is None:
                continue
            older = _older_epochs(ends.get(key, _NO_ENDS), leader, epoch, key in watched)
            if older:
                asks.setdefault(leader, {})[key] = older
        out: dict[Key, dict[int, EpochEnd]] = {}
        for leader, wanted in asks.items():
            link = self._links.get(leader)
            if link is None:
                continue
            try:
                out.update(ask_epoch_ends(link, wanted, self.budget(1.0)))
            except (OSError, ConnectionError, ValueError, EOFError):
                continue
        return out


_NO_ENDS: Mapping[int, ReplicaEnd] = {}


def _older_epochs(ends: Mapping[int, ReplicaEnd], leader: int, epoch: int, watched: bool
                  ) -> set[int] | None:
    """The epochs older than the leader's current one that a replica's log ends in (and, when
    watched, the one before it: its end is where the current epoch starts); None for a
    partition whose replicas are all at the current epoch, as nearly all are."""
    lead = ends.get(leader)
    current = epoch if lead is None or lead.epoch is None else max(epoch, lead.epoch)
    older = None
    for end in ends.values():
        if end.epoch is not None and end.epoch < current:
            older = {end.epoch} if older is None else older | {end.epoch}
    if watched and current > 0:
        older = {current - 1} if older is None else older | {current - 1}
    return older


def hosted_topics(disks: Mapping[int, Fact[BrokerLogDirs]]) -> Fact[frozenset[str]]:
    """The topics the brokers hold on disk (DescribeLogDirs answers for every topic, which
    the metadata does not: a topic this user may not describe is missing only there). Some
    brokers not answering is no reason to doubt the rest: a dead broker's topics are offline."""
    known = [d for d in disks.values() if not isinstance(d, Unknown)]
    if not known:
        first = next(iter(disks.values()), None)
        return first if isinstance(first, Unknown) else Unknown("not asked yet")
    return frozenset(topic for d in known for topic, _partition in (*d.replicas, *d.future))


def _offline(claims: Claims) -> dict[Key, tuple[int, ...]]:
    """Replicas on a failed log dir, as the broker with the newest word on each partition
    says (Metadata's offline_replicas: what `kafka-topics --describe` prints as "Offline:")."""
    return {key: claim.offline for key, claim in newest_claims(claims).items() if claim.offline}


def _offset(answer: Any) -> int | None:
    """An answer's offset; None when it has none, or gives librdkafka's OFFSET_INVALID (-1001)
    or another negative sentinel (a leader that could not answer: unknown, not a number)."""
    offset = getattr(answer, "offset", None)
    return offset if isinstance(offset, int) and offset >= 0 else None
