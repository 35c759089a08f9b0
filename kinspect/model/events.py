"""Successive snapshots diffed into typed events (pure; timestamps come from the snapshots)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kinspect.model.controller_moves import ControllerMove, ControllerMoves, ControllerState
from kinspect.model.facts import Unknown
from kinspect.model.severity import Severity as Severity  # noqa: PLC0414 (re-exported)
from kinspect.model.snapshot import ClusterSnapshot, PartitionInfo

JsonObject = dict[str, object]  # a JSON document's object, as json.loads gives it


class EventKind(StrEnum):
    """What changed between two snapshots; the values are what timelines and --jsonl carry."""

    PARTITION_OFFLINE = "partition_offline"
    PARTITION_ONLINE = "partition_online"
    LEADER_CHANGED = "leader_changed"
    ISR_SHRANK = "isr_shrank"
    ISR_EXPANDED = "isr_expanded"
    VIEWS_DISAGREE_STARTED = "views_disagree_started"
    VIEWS_DISAGREE_STOPPED = "views_disagree_stopped"
    ZK_SESSION = "zk_session"
    CONTROLLER_CHANGED = "controller_changed"
    BROKER_REGISTERED = "broker_registered"
    BROKER_GONE = "broker_gone"
    BROKER_FENCED = "broker_fenced"  # KRaft: gone from the cluster metadata
    BROKER_UNFENCED = "broker_unfenced"
    HW_STALLED = "hw_stalled"
    REASSIGNMENT_STARTED = "reassignment_started"
    REASSIGNMENT_DONE = "reassignment_done"


@dataclass(frozen=True)
class Event:
    ts: int
    kind: EventKind
    detail: str
    partition: str | None = None
    broker: int | None = None
    severity: Severity = Severity.INFO
    fields: JsonObject = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {"ts": self.ts, "kind": self.kind, "partition": self.partition,
                "broker": self.broker, "severity": self.severity, "detail": self.detail,
                **self.fields}


def _partition_events(ts: int, old: PartitionInfo, new: PartitionInfo, kraft: bool = False
                      ) -> list[Event]:
    """What changed in one partition: its leader, its ISR, a move, the views' agreement."""
    out: list[Event] = []
    if old.leader != new.leader or old.leader_epoch != new.leader_epoch:
        out += _leader_events(ts, old, new)
    out += _isr_events(ts, old, new)
    out += _moves(ts, old, new)
    if new.views_disagree != old.views_disagree:
        out.append(_views_event(ts, new, kraft))
    return out


def _leader_events(ts: int, old: PartitionInfo, new: PartitionInfo) -> list[Event]:
    """Offline (no leader now), online (a leader after none), and a change of leader."""
    out: list[Event] = []
    name = new.name
    if new.leader is None:
        out.append(Event(ts, EventKind.PARTITION_OFFLINE, f"{name} has no leader (was {old.leader})",
                         name, old.leader, Severity.ERROR, {"old": old.leader}))
        return out
    if old.leader is None:
        out.append(Event(ts, EventKind.PARTITION_ONLINE, f"{name} online: leader {new.leader} "
                         f"(epoch {new.leader_epoch})", name, new.leader, Severity.INFO,
                         {"new": new.leader, "epoch": new.leader_epoch}))
    if old.leader != new.leader:
        was = "none" if old.leader is None else old.leader
        out.append(Event(ts, EventKind.LEADER_CHANGED,
                         f"leader {was} → {new.leader} (epoch {new.leader_epoch})", name,
                         new.leader, Severity.WARN,
                         {"old": old.leader, "new": new.leader, "epoch": new.leader_epoch}))
    return out


def _isr_events(ts: int, old: PartitionInfo, new: PartitionInfo) -> list[Event]:
    """A replica that left the ISR, then one that rejoined it, each in id order."""
    name, isr = new.name, list(new.isr)
    out = [Event(ts, EventKind.ISR_SHRANK, f"{replica} left the ISR → {isr}", name, replica,
                 Severity.WARN, {"replica": replica, "isr": list(new.isr)})
           for replica in sorted(set(old.isr) - set(new.isr))]
    out += [Event(ts, EventKind.ISR_EXPANDED, f"{replica} rejoined the ISR → {isr}", name,
                  replica, Severity.INFO, {"replica": replica, "isr": list(new.isr)})
            for replica in sorted(set(new.isr) - set(old.isr))]
    return out


def _views_event(ts: int, new: PartitionInfo, kraft: bool) -> Event:
    """The brokers' and the controller's views of the leader came apart, or back together."""
    name = new.name
    if new.views_disagree:
        if kraft:
            detail = (f"broker {new.broker_leader} still claims to lead; the newest decision is "
                      f"leader {new.leader} (epoch {new.leader_epoch})")
        else:
            detail = f"brokers say leader {new.broker_leader}, ZooKeeper says {new.leader}"
        return Event(ts, EventKind.VIEWS_DISAGREE_STARTED, detail, name, new.broker_leader,
                     Severity.ERROR, {"zk_leader": new.leader, "broker_leader": new.broker_leader})
    if kraft:
        detail = "no broker claims to lead against the newest decision any more"
    else:
        detail = "brokers agree with ZooKeeper again"
    return Event(ts, EventKind.VIEWS_DISAGREE_STOPPED, detail, name, new.leader, Severity.INFO, {})


def _moves(ts: int, old: PartitionInfo, new: PartitionInfo) -> list[Event]:
    """A reassignment seen starting and ending (an unknown one is neither)."""
    name = new.name
    if new.moving and not old.moving and not isinstance(old.reassignment, Unknown):
        return [Event(ts, EventKind.REASSIGNMENT_STARTED, f"being moved: adding "
                      f"{list(new.adding)}, removing {list(new.removing)}", name, new.leader,
                      Severity.INFO, {"adding": list(new.adding), "removing": list(new.removing)})]
    if old.moving and new.reassignment is None:
        return [Event(ts, EventKind.REASSIGNMENT_DONE, f"moved: replicas {list(new.replicas)}",
                      name, new.leader, Severity.INFO, {"replicas": list(new.replicas)})]
    return []


def diff(old: ClusterSnapshot | None, new: ClusterSnapshot,
         controller: ControllerMoves | None = None) -> list[Event]:
    """What changed from `old` to `new`. `controller` follows the controller across calls (the
    observer keeps one): a move seen in steps is then one event once complete. Without it the
    two snapshots alone are compared, and any change of controller is told."""
    if old is None:
        if controller is not None:
            controller.see(new.taken_at, _controller_state(new))
        return []
    out = _session_events(old, new)
    out += _controller_events(old, new, controller)
    out += _registration_events(old, new)
    if new.kraft and old.kraft:  # a mode just learnt changes nothing in the cluster
        out += _fencing_events(new.taken_at, old, new)
    out += _changed_partitions(old, new)
    return out


def _session_events(old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """kinspect's own ZooKeeper session changed state (told only when it is known)."""
    state = new.zookeeper_state
    if state is None or state == old.zookeeper_state:
        return []
    severity = Severity.INFO if state == "connected" else Severity.ERROR
    return [Event(new.taken_at, EventKind.ZK_SESSION, f"ZooKeeper session {state}",
                  severity=severity, fields={"state": state})]


def _registration_events(old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """Brokers that registered, then brokers gone from ZooKeeper, each in id order."""
    ts = new.taken_at
    was = {b.id for b in old.brokers if b.registered}
    now = {b.id for b in new.brokers if b.registered}
    out = [Event(ts, EventKind.BROKER_REGISTERED, f"broker {broker} registered", broker=broker)
           for broker in sorted(now - was)]
    out += [Event(ts, EventKind.BROKER_GONE, f"broker {broker} is gone from ZooKeeper",
                  broker=broker, severity=Severity.ERROR) for broker in sorted(was - now)]
    return out


def _changed_partitions(old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """Each partition of both snapshots that changed; one kept as it was is skipped by identity
    first (the build reuses an unchanged PartitionInfo), so this stays cheap at 100,000."""
    out: list[Event] = []
    before = {(p.topic, p.partition): p for p in old.partitions()}
    for p in new.partitions():
        previous = before.get((p.topic, p.partition))
        if previous is not None and previous is not p and previous != p:
            out.extend(_partition_events(new.taken_at, previous, p, new.kraft))
    return out


def _controller_state(snapshot: ClusterSnapshot) -> ControllerState:
    return ControllerState(snapshot.controller.id, snapshot.controller.epoch)


def _controller_events(old: ClusterSnapshot, new: ClusterSnapshot,
                       moves: ControllerMoves | None) -> list[Event]:
    """CONTROLLER_CHANGED, once per move; its fields `old`, `new`, `epoch` are what
    `watch --jsonl` consumers read."""
    if moves is None:  # the pair alone: whatever changed between them is told
        moves = ControllerMoves()
        moves.see(old.taken_at, _controller_state(old))
        found = moves.see(new.taken_at, _controller_state(new), new.kraft) + moves.flush()
    else:
        if not moves.seeded:
            moves.see(old.taken_at, _controller_state(old))
        found = moves.see(new.taken_at, _controller_state(new), new.kraft)
    return [controller_event(m, new.kraft) for m in found]


def controller_event(move: ControllerMove, kraft: bool) -> Event:
    """A vacancy told is an error (no controller for a while); a move a warning."""
    return Event(move.ts, EventKind.CONTROLLER_CHANGED, move.detail(kraft), broker=move.new,
                 severity=Severity.ERROR if move.new is None else Severity.WARN,
                 fields={"old": move.old, "new": move.new, "epoch": move.epoch})


def _fencing_events(ts: int, old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """KRaft lists unfenced brokers only: one leaving the list was fenced (its heartbeats
    stopped reaching the controller, or it shut down), one coming back was unfenced. Only while
    the AdminClient answers: a failed poll keeps the last list."""
    if new.admin_state != "ok":
        return []
    was = {b.id for b in old.brokers if b.fenced is False}
    now = {b.id for b in new.brokers if b.fenced is False}
    out = [Event(ts, EventKind.BROKER_FENCED, f"broker {broker} fenced: gone from the cluster "
                 "metadata", broker=broker, severity=Severity.ERROR) for broker in sorted(was - now)]
    out += [Event(ts, EventKind.BROKER_UNFENCED, f"broker {broker} unfenced: back in the cluster "
                  "metadata", broker=broker) for broker in sorted(now - was)]
    return out


class HwStallTracker:
    """Notices a partition with a leader whose high watermark stopped advancing.

    It fires once per stall: when the watermark advanced before, and has not moved for
    `stall_ms` while the partition had a leader. Time comes from the snapshots, never a clock.
    """

    def __init__(self, stall_ms: int = 5000) -> None:
        self.stall_ms = stall_ms
        self._last: dict[str, tuple[int, int, bool]] = {}  # hw, since, advanced-before
        self._reported: set[str] = set()

    def observe(self, snapshot: ClusterSnapshot) -> list[Event]:
        out = []
        ts = snapshot.taken_at
        for p in snapshot.partitions():
            if p.high_watermark is None:
                continue
            name = p.name
            hw, since, moved = self._last.get(name, (p.high_watermark, ts, False))
            if p.high_watermark != hw:
                self._last[name] = (p.high_watermark, ts, True)
                self._reported.discard(name)
                continue
            self._last[name] = (hw, since, moved)
            if moved and p.leader is not None and ts - since >= self.stall_ms \
                    and name not in self._reported:
                self._reported.add(name)
                out.append(Event(ts, EventKind.HW_STALLED, f"high watermark stuck at {hw} for "
                                 f"{(ts - since) / 1000:.1f} s", name, p.leader, Severity.WARN,
                                 {"high_watermark": hw, "since": since}))
        return out


class LogKind(StrEnum):
    """What a Kafka log line says (kinspect/postmortem/evidence/brokerlogs.py): the broker's own
    word, its controller's (`by_controller`), or ZooKeeper's (SESSION_EXPIRED)."""

    ISR_SHRINK = "log_isr_shrink"
    ISR_EXPAND = "log_isr_expand"
    FOLLOWER_START = "log_follower_start"
    LEADER_START = "log_leader_start"
    TRUNCATE = "log_truncate"
    CONTROLLER_ELECTED = "log_controller_elected"
    LEADER_AND_ISR = "log_leader_and_isr"
    BROKER_REGISTERED = "log_broker_registered"
    BROKER_GONE = "log_broker_gone"  # the controller saw its registration deleted
    BROKER_FENCED = "log_broker_fenced"
    BROKER_UNFENCED = "log_broker_unfenced"
    HEARTBEAT_FAILED = "log_heartbeat_failed"
    ZK_EXPIRED = "log_zk_expired"  # the broker learned its session had expired
    ZK_SESSION = "log_zk_session"
    SESSION_EXPIRED = "log_session_expired"  # ZooKeeper's own log: it expired the session
    ELR_CHANGED = "log_elr_changed"  # KRaft 4.x: the eligible leader replicas changed

    @property
    def by_controller(self) -> bool:
        return self in {LogKind.LEADER_AND_ISR, LogKind.CONTROLLER_ELECTED, LogKind.BROKER_FENCED,
                        LogKind.BROKER_GONE, LogKind.ELR_CHANGED}


class Election(StrEnum):
    """How the KRaft controller chose a leader its log calls out (a clean election from the
    ISR is the rule and is not marked)."""

    ELR = "elr"  # from the eligible leader replicas: out of the ISR, yet holding every commit
    UNCLEAN = "unclean"  # from outside the ISR and the ELR: commits may be lost
    # 4.x: the last leader itself, back after an unclean shutdown (a kill) took it out of the
    # ELR; Kafka logs it UNCLEAN too, as what it had not flushed may be gone
    LAST_LEADER = "last-leader"

    @property
    def words(self) -> str:
        return {Election.ELR: "from the eligible leader replicas (ELR)",
                Election.UNCLEAN: "an unclean election",
                Election.LAST_LEADER: "the last leader, back after an unclean shutdown "
                                      "(Kafka logs it UNCLEAN)"}[self]

    @property
    def unclean(self) -> bool:
        """What Kafka's controller itself calls unclean."""
        return self is not Election.ELR


class JournalKind(StrEnum):
    """A fault from the lab's journal (its action says which)."""

    FAULT = "fault"


# A timeline's kinds: the observer's (the snapshots' diffs), a log line's, a fault.
TimelineKind = EventKind | LogKind | JournalKind


def timeline_kind(text: str) -> TimelineKind | None:
    """A kind as JSON carries it; None for one this version does not know."""
    for kinds in (EventKind, LogKind, JournalKind):
        try:
            return kinds(text)
        except ValueError:
            continue
    return None


class Source(StrEnum):
    """Who saw an event: the observer (timeline.jsonl), the lab's journal, a broker's log."""

    OBSERVER = "observer"
    FAULTS = "faults"
    BROKER_LOG = "broker-log"


# The optional fields each kind always writes to JSON, None or not (the observer's Event
# fields, a fault's action and node, a log line's node); any other is written when known.
_ALWAYS: dict[str, tuple[str, ...]] = {
    EventKind.LEADER_CHANGED: ("epoch", "old", "new"),
    EventKind.CONTROLLER_CHANGED: ("epoch", "old", "new"),
    EventKind.PARTITION_ONLINE: ("epoch", "new"),
    EventKind.PARTITION_OFFLINE: ("old",),
}


@dataclass(frozen=True)
class TimelineEvent:
    """One fact of a run's timeline: an observer event, a fault of the lab's journal or a Kafka
    log line; after `fold`, every sighting of one fact (`sources`, `seen`: who saw it first
    when). The optional fields are those its kind carries."""

    ts: int
    kind: TimelineKind
    detail: str
    partition: str | None = None
    broker: int | None = None
    severity: Severity = Severity.INFO
    source: Source = Source.OBSERVER
    node: str | None = None  # the node whose log said it, or that the fault hit
    epoch: int | None = None  # a leader epoch (or the controller's)
    offset: int | None = None  # where a leader starts, or a log was truncated to
    old: int | None = None  # the leader (or controller) before ...
    new: int | None = None  # ... and after
    leader: int | None = None  # the leader a follower follows
    replica: int | None = None  # the replica that left or joined the ISR (the observer's)
    old_isr: tuple[int, ...] | None = None
    new_isr: tuple[int, ...] | None = None
    action: str | None = None  # a fault's, as journaled (a FaultKind or an older word)
    note: str | None = None  # a fault's own words in the journal
    groups: tuple[tuple[str, ...], ...] | None = None  # a partition fault's groups
    lab_id: str | None = None
    sources: tuple[str, ...] = ()
    seen: tuple[tuple[str, int], ...] = ()  # source -> first ts, in time order
    slowed: tuple[int, ...] = ()  # the slowed links' brokers an ISR shrink dropped
    election: Election | None = None  # how the controller chose this leader (KRaft's log)
    elr: tuple[int, ...] | None = None  # the eligible leader replicas after an ELR change

    def to_json(self) -> JsonObject:
        """The report's timeline entry (report.json `timeline`), in its key order."""
        out: JsonObject = {"ts": self.ts, "kind": self.kind.value, "partition": self.partition,
                           "broker": self.broker, "severity": self.severity.value,
                           "detail": self.detail, "source": self.source.value}
        if self.sources:
            out["sources"], out["seen"] = list(self.sources), dict(self.seen)
        always = _ALWAYS.get(self.kind, ())
        for name in ("epoch", "offset", "old", "new"):
            if getattr(self, name) is not None or name in always:
                out[name] = getattr(self, name)
        if self.kind is JournalKind.FAULT:
            out["action"] = self.action
        if self.election is not None:
            out["election"] = self.election.value
        if self.elr is not None:
            out["elr"] = list(self.elr)
        if self.source is not Source.OBSERVER:
            out["node"] = self.node
        return out

    def journal_json(self) -> JsonObject:
        """A fault as the lab's journal wrote it (report.json's `fault`)."""
        return {"ts": self.ts, "action": self.action, "node": self.node,
                "groups": None if self.groups is None else [list(g) for g in self.groups],
                "detail": self.note, "lab_id": self.lab_id}

    @classmethod
    def from_json(cls, entry: Mapping[str, object],
                  source: Source = Source.OBSERVER) -> TimelineEvent | None:
        """An event as JSON carries it (timeline.jsonl, a report's timeline entry); None when
        its ts or kind is not one."""
        kind, ts = timeline_kind(str(entry.get("kind"))), entry.get("ts")
        if kind is None or not isinstance(ts, int | float):
            return None
        isr = entry.get("new_isr", entry.get("isr"))
        seen = entry.get("seen")
        return cls(
            int(ts), kind, str(entry.get("detail") or ""), _text(entry.get("partition")),
            _int(entry.get("broker")), Severity(str(entry.get("severity") or "info")),
            Source(str(entry.get("source") or source)), _text(entry.get("node")),
            _int(entry.get("epoch")), _int(entry.get("offset")), _int(entry.get("old")),
            _int(entry.get("new")), _int(entry.get("leader")), _int(entry.get("replica")),
            _ints(entry.get("old_isr")), _ints(isr), _text(entry.get("action")),
            _text(entry.get("note")), _groups(entry.get("groups")), _text(entry.get("lab_id")),
            sources=tuple(map(str, _list(entry.get("sources")))),
            seen=tuple((str(k), int(str(v))) for k, v in seen.items())
            if isinstance(seen, dict) else (),
            election=_election(entry.get("election")), elr=_ints(entry.get("elr")))


def _election(value: object) -> Election | None:
    try:
        return None if value is None else Election(str(value))
    except ValueError:  # a word of a later version
        return None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


def _ints(value: object) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(str(x)) for x in _list(value))


def _groups(value: object) -> tuple[tuple[str, ...], ...] | None:
    return None if value is None else tuple(tuple(map(str, _list(g))) for g in _list(value))
