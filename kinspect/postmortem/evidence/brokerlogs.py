"""Kafka broker (and ZooKeeper) log lines that explain loss, parsed into timeline events (pure Python).

The formats are Kafka's own (3.x, with the 2.x variants still seen in the wild):
  [Partition test1-0 broker=2] Shrinking ISR from 1,2,3 to 2. Leader: (...)     kafka.cluster.Partition
  [Broker id=3] Leader test1-0 with topic id Some(x) starts at leader epoch 5 from offset 34669 ...
  [Broker id=2] Follower test1-0 starts at leader epoch 5 from offset ... Current leader is 3. ...
  [ReplicaFetcher ...] Truncating partition test1-0 with TruncationState(offset=34669, ...) due to ...
  [UnifiedLog partition=test1-0, dir=...] Truncating to offset 34669
  [Controller id=3] 3 successfully elected as the controller. Epoch incremented to 2 and ...
  [Controller id=3 epoch=2] Changed partition test1-0 from OnlinePartition to OnlinePartition with
      state LeaderAndIsr(leader=3, leaderEpoch=5, ...)
  [Controller id=2] Newly added brokers: , deleted brokers: 3, bounced brokers: , all live brokers: 1,2
  Unable to reconnect to ZooKeeper service, session 0x1000 has expired    org.apache.zookeeper.ClientCnxn
  [ZooKeeperClient Kafka server] Session expired.                          kafka.zookeeper.ZooKeeperClient
KRaft (3.9, 4.x) says the same facts in other words, on the controller nodes and the brokers:
  [QuorumController id=101] Becoming the active controller at epoch 3, next write offset 1.
  [QuorumController id=101] Fencing broker 2 because its session has timed out.  (4.x: "at
      epoch 11 because")
  [QuorumController id=101] The request from broker 2 to unfence has been granted because ...
  [BrokerLifecycleManager id=2] Unable to send a heartbeat because the RPC got timed out ...
  [QuorumController id=101] partition change for test1-0 with topic ID x: leader: 2 -> 3,
      leaderEpoch: 0 -> 1, partitionEpoch: 0 -> 1       (DEBUG: the lab logs it to controller.log)
  ... partition change for test1-0 with topic ID x: isr: [2, 1] -> [2], elr: [] -> [1], ...
  ... partition change for test1-0 with topic ID x: isr: [] -> [1], leader: -1 -> 1, leaderEpoch:
      1 -> 2, elr: [1, 2] -> [2], ...       (4.x: eligible leader replicas; 1 was elected from them)
  [QuorumController id=101] UNCLEAN partition change for test1-0 ...   (INFO: an unclean election)
(a leader's and a follower's "starts at leader epoch" and the truncations are as above).
A broker's session expiry is only those ZooKeeper lines, and they say when the broker *learned*
it: both are logged once it reaches ZooKeeper again, long after ZooKeeper expired the session.
When ZooKeeper did is ZooKeeper's own line (the lab's zookeeper.log; the session is the broker's
when one of its lines names it),
  Expiring session 0x1000, timeout of 6000ms exceeded       org.apache.zookeeper.server.ZooKeeperServer
else the controller's "deleted brokers" line (the registration went with the session; the
controller's clock) or the observer's broker_gone.
'Client session timed out' and '... Attempting reconnect except it is a SessionExpiredException'
are every lost connection, expired or not, so they do not count.

Timestamps: every lab JVM runs with -Duser.timezone=UTC (kinspect.lab.nodes.JVM_FLAGS) and docker
containers are UTC anyway, so stamps are read as UTC, never in this machine's zone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from kinspect.lab.topology import broker_id_of
from kinspect.model.events import Election, LogKind, Severity, Source, TimelineEvent

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] (\w+) (.*)$")
_PARTITION_PREFIX = re.compile(r"\[Partition (\S+) broker=(\d+)\]")
_BROKER_PREFIX = re.compile(r"\[(?:Broker id|Partition \S+ broker|KafkaServer id)=(\d+)")
_ISR = re.compile(r"(Shrinking|Expanding) ISR from ([\d,]*) to ([\d,]*)")
_STARTS = re.compile(r"(?:(Leader|Follower) )?(\S+-\d+)(?: with topic id \S+)? starts at [Ll]eader "
                     r"[Ee]poch (\d+) from offset (\d+)")
_CURRENT_LEADER = re.compile(r"Current leader is (\d+)")
_TRUNC_FETCHER = re.compile(r"Truncating partition (\S+) with TruncationState\(offset=(\d+)")
_TRUNC_LOG = re.compile(r"(?:\[(?:UnifiedLog|Log) partition=([^,\]]+)[^\]]*\] )?Truncating to offset (\d+)")
_ELECTED = re.compile(r"(\d+) successfully elected as the controller\. Epoch incremented to (\d+)")
_CHANGED = re.compile(r"Changed partition (\S+) from (\w+) to (\w+) with state "
                      r"LeaderAndIsr\(leader=(-?\d+), leaderEpoch=(\d+)")
_ZK_EXPIRED = re.compile(r"Unable to reconnect to ZooKeeper service, session 0x[0-9a-f]+ has expired"
                         r"|\[ZooKeeperClient [^\]]*\] Session expired\.")
_ZK_NEW = re.compile(r"Initializing a new session to|Session establishment complete")
_SESSION_ID = re.compile(r"session id = (0x[0-9a-f]+)|session (0x[0-9a-f]+) has expired")
_EXPIRING = re.compile(r"Expiring session (0x[0-9a-f]+), timeout of (\d+)ms exceeded")
_REGISTERED = re.compile(r"Registered broker (\d+) at path")
_DELETED = re.compile(r"deleted brokers: ([\d,]*)")
_KRAFT_CHANGE = re.compile(r"partition change for (\S+) with topic ID \S+: .*?leader: (-?\d+) -> "
                           r"(-?\d+), (?:leaderRecoveryState: \w+ -> \w+, )?leaderEpoch: (\d+) -> "
                           r"(\d+)")
_KRAFT_ANY_CHANGE = re.compile(r"partition change for (\S+) with topic ID \S+: ")
_LIST_CHANGE = re.compile(r"\b(isr|elr|lastKnownElr): \[([\d, ]*)\] -> \[([\d, ]*)\]")
_ACTIVE = re.compile(r"\[QuorumController id=(\d+)\] Becoming the active controller at epoch (\d+)")
_FENCED = re.compile(r"Fencing broker (\d+)(?: at epoch \d+)? because (.+?)\.? \(")
_UNFENCED = re.compile(r"The request from broker (\d+) to unfence has been granted")
_HEARTBEAT = re.compile(r"\[BrokerLifecycleManager id=(\d+)\] Unable to send a heartbeat")
# Every line that can matter says one of these. Plain substring tests are fast; the patterns
# above are not (`\S+-\d+` tried at each position of a long line): they run only on a line
# that says what they look for, and the date is parsed only for those.
_WORTH_A_LOOK = ("ISR from", "starts at", "Truncating", "successfully elected",
                 "Changed partition", "Registered broker", "ZooKeeper", "Session e", "new session",
                 "active controller", "Fencing broker", "to unfence", "send a heartbeat",
                 "partition change for", "deleted brokers", "Expiring session")
REPEATING = {LogKind.ZK_EXPIRED, LogKind.ZK_SESSION, LogKind.HEARTBEAT_FAILED}  # one per 5 s


def parse_ts(stamp: str, millis: str) -> int:
    """UTC 'YYYY-mm-dd HH:MM:SS' + millis -> epoch ms (the lab's JVMs log in UTC)."""
    return _seconds(stamp) * 1000 + int(millis)


@functools.lru_cache(maxsize=4096)
def _seconds(stamp: str) -> int:
    """Lines come many to a second: strptime once per second seen."""
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp())



def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip().isdigit())


def _found(match: re.Match[str] | None) -> str | None:
    """A search's first group, None when it found nothing."""
    if match is None:
        return None
    return match[1]


def _found_int(match: re.Match[str] | None) -> int | None:
    if match is None:
        return None
    return int(match[1])


def _known_broker(broker: int) -> int | None:
    """A leader as a broker id: None for -1 (no leader)."""
    if broker < 0:
        return None
    return broker


@dataclass(frozen=True)
class _Line:
    """A line worth a look: its time, node, text and the broker it is about (its prefix's,
    else the node's)."""

    ts: int
    node: str
    text: str
    broker: int | None

    def event(self, kind: LogKind, severity: Severity, detail: str, *, broker: int | None,
              partition: str | None = None, epoch: int | None = None, offset: int | None = None,
              leader: int | None = None, old_isr: tuple[int, ...] | None = None,
              new_isr: tuple[int, ...] | None = None, note: str | None = None,
              elr: tuple[int, ...] | None = None) -> TimelineEvent:
        return TimelineEvent(self.ts, kind, detail, partition, broker, severity,
                             Source.BROKER_LOG, self.node or None, epoch, offset, leader=leader,
                             old_isr=old_isr, new_isr=new_isr, note=note, elr=elr)


def _isr(found: re.Match[str], line: _Line) -> TimelineEvent:
    kind, severity = _ISR_CHANGES[found[1]]
    return line.event(kind, severity,
                      f"broker {line.broker}: {found[1].lower()} ISR {found[2]} → "
                      f"{found[3] or '(empty)'}", broker=line.broker,
                      partition=_found(_PARTITION_PREFIX.search(line.text)),
                      old_isr=_ids(found[2]), new_isr=_ids(found[3]))


_ISR_CHANGES = {"Shrinking": (LogKind.ISR_SHRINK, Severity.WARN),
                "Expanding": (LogKind.ISR_EXPAND, Severity.INFO)}


def _starts(found: re.Match[str], line: _Line) -> TimelineEvent:
    epoch, offset, broker = int(found[3]), int(found[4]), line.broker
    if found[1] == "Follower":
        current = _found_int(_CURRENT_LEADER.search(line.text))
        return line.event(LogKind.FOLLOWER_START, Severity.INFO, f"broker {broker} follows at "
                          f"leader epoch {epoch} from offset {offset:,}", broker=broker,
                          partition=found[2], epoch=epoch, offset=offset, leader=current)
    return line.event(LogKind.LEADER_START, Severity.WARN, f"broker {broker} leads from epoch "
                      f"{epoch} at offset {offset:,}", broker=broker, partition=found[2], epoch=epoch,
                      offset=offset)


def _truncate(found: re.Match[str], line: _Line) -> TimelineEvent:
    partition, offset = found[1], int(found[2])
    return line.event(LogKind.TRUNCATE, Severity.ERROR, f"broker {line.broker} truncated "
                      f"{partition or 'its log'} to offset {offset:,}", broker=line.broker,
                      partition=partition,
                      offset=offset)


def _elected(found: re.Match[str], line: _Line) -> TimelineEvent:
    return line.event(LogKind.CONTROLLER_ELECTED, Severity.WARN, f"broker {found[1]} elected "
                      f"controller (epoch {found[2]})", broker=int(found[1]), epoch=int(found[2]))


def _active(found: re.Match[str], line: _Line) -> TimelineEvent:
    return line.event(LogKind.CONTROLLER_ELECTED, Severity.WARN, f"node {found[1]} became the "
                      f"active controller (quorum epoch {found[2]})", broker=int(found[1]),
                      epoch=int(found[2]))


def _leader_set(partition: str, leader: int, epoch: int, why: str, line: _Line) -> TimelineEvent:
    return line.event(LogKind.LEADER_AND_ISR, Severity.INFO, f"controller set leader {leader} at "
                      f"epoch {epoch} ({why})", partition=partition,
                      broker=_known_broker(leader), epoch=epoch, leader=leader)


def _changed(found: re.Match[str], line: _Line) -> TimelineEvent:
    return _leader_set(found[1], int(found[4]), int(found[5]), f"{found[2]} → {found[3]}", line)


def _kraft_change(found: re.Match[str], line: _Line) -> list[TimelineEvent]:
    """A KRaft controller's decision: a leader, and how it was chosen (4.x: from the eligible
    leader replicas, its `elr` before naming it; any release: UNCLEAN, the line's own word),
    plus the ELR change the same record made."""
    leader, lists = int(found[3]), _lists(line.text)
    how = _election(leader, lists, "UNCLEAN partition change" in line.text)
    why = f"was {int(found[2])}"
    if how is not None:
        why += f"; {how.words}"
    event = replace(_leader_set(found[1], leader, int(found[5]), why, line), election=how)
    return [event, *_elr_change(found[1], lists, line)]


def _election(leader: int, lists: _Lists, unclean: bool) -> Election | None:
    """How the leader was chosen: from the eligible leader replicas (before the change), as
    the last known one of them in an unclean election, unclean otherwise, or cleanly (None)."""
    if leader in lists.get("elr", _NO_CHANGE)[0]:
        return Election.ELR
    if not unclean:
        return None
    if leader in lists.get("lastKnownElr", _NO_CHANGE)[0]:
        return Election.LAST_LEADER
    return Election.UNCLEAN


def _kraft_other_change(found: re.Match[str], line: _Line) -> list[TimelineEvent]:
    """A decision that named no leader: only its ELR change is a fact of the timeline (the ISR
    change is the leader's own line, "Shrinking ISR")."""
    return _elr_change(found[1], _lists(line.text), line)


_Ids = tuple[int, ...]
_Lists = dict[str, tuple[_Ids, _Ids]]  # a list's name -> its ids before and after
_NO_CHANGE: tuple[_Ids, _Ids] = ((), ())


def _lists(text: str) -> _Lists:
    """isr: [2, 1] -> [2], elr: [] -> [1] → {"isr": ((2, 1), (2,)), "elr": ((), (1,))}."""
    return {m[1]: (_ids(m[2]), _ids(m[3])) for m in _LIST_CHANGE.finditer(text)}


def _elr_change(partition: str, lists: _Lists, line: _Line) -> list[TimelineEvent]:
    if "elr" not in lists:
        return []
    before, after = lists["elr"]
    said = f"controller: eligible leader replicas {_listed(before)} → {_listed(after)}"
    old_isr = new_isr = None
    if "isr" in lists:
        old_isr, new_isr = lists["isr"]
        said += f" (ISR {_listed(old_isr)} → {_listed(new_isr)})"
    severity = Severity.INFO
    if after:
        severity = Severity.WARN
    return [line.event(LogKind.ELR_CHANGED, severity, said, broker=None, partition=partition,
                       old_isr=old_isr, new_isr=new_isr, elr=after)]


def _listed(ids: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


def _broker_said(kind: LogKind, severity: Severity, words: str
                 ) -> Callable[[re.Match[str], _Line], TimelineEvent]:
    """A builder for a line about one broker: `words` with {broker} (the line's group 1, else
    the broker the line is about) and {why} (group 2)."""
    def build(found: re.Match[str], line: _Line) -> TimelineEvent:
        broker, why = line.broker, ""
        if found.re.groups:
            broker = int(found[1])
        if found.re.groups > 1:
            why = found[2].removeprefix("its ")
        return line.event(kind, severity, words.format(broker=broker, why=why), broker=broker)
    return build


def _deleted(found: re.Match[str], line: _Line) -> list[TimelineEvent]:
    """The controller saw brokers' registrations go: ZooKeeper ended their sessions (expired,
    or closed by a clean shutdown), by the controller's clock. One event per broker."""
    return [line.event(LogKind.BROKER_GONE, Severity.ERROR, f"broker {broker} is gone from "
                       "ZooKeeper", broker=broker) for broker in _ids(found[1])]


def _session_said(kind: LogKind, severity: Severity, words: str
                  ) -> Callable[[re.Match[str], _Line], TimelineEvent]:
    """A builder for a broker's own ZooKeeper client line; `note` is the session it names."""
    def build(_found: re.Match[str], line: _Line) -> TimelineEvent:
        return line.event(kind, severity, words.format(broker=line.broker), broker=line.broker,
                          note=_session(line.text))
    return build


def _session(text: str) -> str | None:
    """The ZooKeeper session a broker's line names (`session id = 0x1000`), if any."""
    found = _SESSION_ID.search(text)
    if found is None:
        return None
    return found[1] or found[2]


def _expiring(found: re.Match[str], line: _Line) -> TimelineEvent:
    """ZooKeeper's own word, by its clock; whose session it was is found later (read_broker_logs)."""
    return line.event(LogKind.SESSION_EXPIRED, Severity.ERROR, f"ZooKeeper expired session "
                      f"{found[1]} (timeout {int(found[2]):,} ms)", broker=None, note=found[1])


Builder = Callable[[re.Match[str], _Line], TimelineEvent | list[TimelineEvent]]
# (a word the line must say, its pattern, what it becomes), tried in order: the first whose
# word and pattern are both found builds the events. The words are cheap substring tests; a
# pattern runs only on a line that says its word ("": any line worth a look).
_RULES: tuple[tuple[str, re.Pattern[str], Builder], ...] = (
    ("ISR from", _ISR, _isr),
    ("starts at", _STARTS, _starts),
    ("Truncating", _TRUNC_FETCHER, _truncate),
    ("Truncating", _TRUNC_LOG, _truncate),
    ("successfully elected", _ELECTED, _elected),
    ("Changed partition", _CHANGED, _changed),
    ("Registered broker", _REGISTERED, _broker_said(
        LogKind.BROKER_REGISTERED, Severity.INFO, "broker {broker} registered in ZooKeeper")),
    ("deleted brokers", _DELETED, _deleted),
    ("partition change for", _KRAFT_CHANGE, _kraft_change),
    ("partition change for", _KRAFT_ANY_CHANGE, _kraft_other_change),
    ("active controller", _ACTIVE, _active),
    ("Fencing broker", _FENCED, _broker_said(
        LogKind.BROKER_FENCED, Severity.ERROR, "controller fenced broker {broker} ({why})")),
    ("to unfence", _UNFENCED, _broker_said(
        LogKind.BROKER_UNFENCED, Severity.INFO, "controller unfenced broker {broker}")),
    ("send a heartbeat", _HEARTBEAT, _broker_said(
        LogKind.HEARTBEAT_FAILED, Severity.WARN,
        "broker {broker}: cannot reach the controller quorum (heartbeat)")),
    ("Expiring session", _EXPIRING, _expiring),
    ("", _ZK_EXPIRED, _session_said(
        LogKind.ZK_EXPIRED, Severity.ERROR,
        "broker {broker} learned its ZooKeeper session had expired (on reaching ZooKeeper again)")),
    ("", _ZK_NEW, _session_said(
        LogKind.ZK_SESSION, Severity.INFO, "broker {broker}: new ZooKeeper session")),
)


def parse_line(line: str, node: str = "") -> TimelineEvent | None:
    """The (first) event of a line that matters, else None."""
    events = parse_events(line, node)
    if not events:
        return None
    return events[0]


def parse_events(line: str, node: str = "") -> list[TimelineEvent]:
    """The events of a line that matters (one, or one per broker a controller line names)."""
    if not any(word in line for word in _WORTH_A_LOOK):
        return []
    match = _LINE.match(line.rstrip("\n"))
    if match is None:
        return []
    text = match[4]
    said = _Line(parse_ts(match[1], match[2]), node, text, _about(text, node))
    for word, pattern, build in _RULES:
        if word in text and (found := pattern.search(text)):
            built = build(found, said)
            if isinstance(built, list):
                return built
            return [built]
    return []


def _about(text: str, node: str) -> int | None:
    """The broker a line is about: its prefix's (`[Broker id=3]`), else the node's."""
    prefix = _BROKER_PREFIX.search(text)
    if prefix is None:
        return broker_id_of(node)
    return int(prefix[1])


def parse_lines(lines: Iterable[str], node: str, topic: str | None = None,
                sessions: dict[str, int] | None = None) -> list[TimelineEvent]:
    """Events from one node's lines, only those of `topic` (plus cluster-wide ones).

    Repeated ZooKeeper or heartbeat lines (a reconnect loop logs one a second or two) collapse
    to one per 5 s. `sessions` (session id -> broker) gets every ZooKeeper session a broker's
    line names, collapsed or not.
    """
    out: list[TimelineEvent] = []
    last_zk: dict[str, int] = {}
    ours = _of_topic(topic)
    for event in (e for line in lines for e in parse_events(line, node)):
        if not ours(event.partition):
            continue
        if sessions is not None:
            _note_session(event, sessions)
        if event.kind in REPEATING:
            if event.ts - last_zk.get(event.kind, -10**15) < 5000:
                continue
            last_zk[event.kind] = event.ts
        out.append(event)
    return out


def _of_topic(topic: str | None) -> Callable[[str | None], bool]:
    """Is an event's partition (None: cluster-wide) one of `topic`'s (None: any topic's)?"""
    if not topic:
        return _any_partition
    pattern = re.compile(rf"^{re.escape(topic)}-\d+$")

    def ours(partition: str | None) -> bool:
        return partition is None or pattern.match(partition) is not None
    return ours


def _any_partition(_partition: str | None) -> bool:
    return True


def _note_session(event: TimelineEvent, sessions: dict[str, int]) -> None:
    """The ZooKeeper session a broker's own line names, as the broker's."""
    if event.kind not in (LogKind.ZK_SESSION, LogKind.ZK_EXPIRED):
        return
    if event.note and event.broker is not None:
        sessions[event.note] = event.broker


def read_broker_logs(logs: dict[str, list[Path]], topic: str | None) -> list[TimelineEvent]:
    """All nodes' events in time order; unreadable bytes are replaced, never fatal."""
    events: list[TimelineEvent] = []
    sessions: dict[str, int] = {}
    for node, files in logs.items():
        for path in files:
            with open(path, errors="replace") as handle:
                events.extend(parse_lines(handle, node, topic, sessions))
    events = whose_sessions(events, sessions)
    events.sort(key=lambda e: (e.ts, e.kind))
    return events


def whose_sessions(events: Iterable[TimelineEvent], sessions: dict[str, int]
                   ) -> list[TimelineEvent]:
    """ZooKeeper's expiries named by broker; those of sessions no broker's line names (the
    observer's, a client's) are left out."""
    out = []
    for e in events:
        if e.kind is not LogKind.SESSION_EXPIRED:
            out.append(e)
            continue
        broker = sessions.get(e.note or "")
        if broker is not None:
            out.append(replace(e, broker=broker, detail=e.detail.replace(
                "session ", f"broker {broker}'s session ", 1)))
    return out
