"""Snapshots to JSON and back: the `snapshot --json` contract, and recorded snapshots for tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kinspect.model.assessment import Unchecked, unchecked
from kinspect.model.facts import Fact, Unknown
from kinspect.model.severity import Severity
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterSnapshot,
    ClusterWarning,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    LogDirInfo,
    PartitionInfo,
    QuorumInfo,
    QuorumMember,
    ReplicaDisk,
    ReplicaLog,
    Throttle,
    TopicInfo,
)
from kinspect.model.views import ConfigValue, ControllerAnswer, EligibleLeaders, Reassignment

T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


def fact_to_json(value: Fact[T], encode: Callable[[T], Any] = _same) -> Any:
    """A known fact as its value; an unknown one as {"unknown": reason} in its place (truthy:
    a script that tests a flag for truth errs on the safe side, and the reason is right there)."""
    return {"unknown": value.reason} if isinstance(value, Unknown) else encode(value)


def fact_from_json(raw: Any, decode: Callable[[Any], T] = _same) -> Fact[T]:
    if isinstance(raw, dict) and set(raw) == {"unknown"}:
        return Unknown(str(raw["unknown"]))
    return decode(raw)


def reassignment_to_json(r: Reassignment | None) -> dict[str, Any] | None:
    return None if r is None else {"replicas": list(r.replicas), "adding": list(r.adding),
                                   "removing": list(r.removing)}


def reassignment_from_json(d: dict[str, Any] | None) -> Reassignment | None:
    return None if d is None else Reassignment(tuple(d["replicas"]), tuple(d["adding"]),
                                               tuple(d["removing"]))


def elr_to_json(e: EligibleLeaders) -> dict[str, Any]:
    return {"eligible": list(e.eligible), "last_known": list(e.last_known)}


def elr_from_json(d: dict[str, Any]) -> EligibleLeaders:
    return EligibleLeaders(tuple(d["eligible"]), tuple(d["last_known"]))


def throttle_to_json(t: Throttle) -> dict[str, Any]:
    return {"leader_rate": t.leader_rate, "follower_rate": t.follower_rate}


def throttle_from_json(d: dict[str, Any]) -> Throttle:
    return Throttle(d["leader_rate"], d["follower_rate"])


def _config_from_json(values: dict[str, str], sources: dict[str, str]
                      ) -> tuple[tuple[str, ConfigValue], ...]:
    return tuple(sorted((k, ConfigValue(v, sources.get(k, "unknown"))) for k, v in values.items()))


def _partition(p: PartitionInfo) -> dict[str, Any]:
    """One partition (the facts' `fact_to_json` written out inline: six calls a partition were
    a fifth of a 100,000-partition snapshot's JSON)."""
    under_replicated, under_min_isr = p.under_replicated, p.under_min_isr
    at_min_isr, min_isr, moving, elr = p.at_min_isr, p.min_isr, p.reassignment, p.elr
    return {
        "partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas), "isr": list(p.isr),
        "high_watermark": p.high_watermark, "log_start": p.log_start,
        "offline": p.offline, "unavailable": p.unavailable,
        "under_replicated": {"unknown": under_replicated.reason}
        if isinstance(under_replicated, Unknown) else under_replicated,
        "under_min_isr": {"unknown": under_min_isr.reason}
        if isinstance(under_min_isr, Unknown) else under_min_isr,
        "at_min_isr": {"unknown": at_min_isr.reason}
        if isinstance(at_min_isr, Unknown) else at_min_isr,
        "preferred_leader": p.preferred_leader, "views_disagree": p.views_disagree,
        "min_isr": {"unknown": min_isr.reason} if isinstance(min_isr, Unknown) else min_isr,
        "replication_factor": p.replication_factor,
        "leader_live": p.leader_live,
        "reassignment": None if moving is None else fact_to_json(moving, reassignment_to_json),
        "stalled_ms": p.stalled_ms,
        "elr": None if elr is None else fact_to_json(elr, elr_to_json),
        "broker_view": {"leader": p.broker_leader,
                        "isr": list(p.broker_isr) if p.broker_isr is not None else None},
        "replica_logs": [{"broker": r.broker, "log_end": r.log_end, "epoch": r.epoch,
                          "lag": r.lag, "diverged": r.diverged} for r in p.replica_logs],
        "epoch_ends": [{"epoch": asked, "found": found, "end_offset": end}
                       for asked, found, end in p.epoch_ends],
        "offline_replicas": list(p.offline_replicas),
        "disks": [{"broker": d.broker, "log_dir": d.log_dir, "size": d.size,
                   "moving_to": d.moving_to, "moved": d.moved} for d in p.disks],
    }


def log_dir_to_json(d: LogDirInfo) -> dict[str, Any]:
    return {"path": d.path, "offline": d.offline, "error": d.error, "size": d.size,
            "replicas": d.replicas, "total_bytes": d.total_bytes,
            "usable_bytes": d.usable_bytes}


def log_dir_from_json(d: dict[str, Any]) -> LogDirInfo:
    return LogDirInfo(d["path"], d["error"], d["size"], d["replicas"], d["total_bytes"],
                      d["usable_bytes"])


def _member(m: QuorumMember) -> dict[str, Any]:
    return {"id": m.id, "log_end_offset": m.log_end_offset, "lag": m.lag,
            "last_fetch_ms": m.last_fetch_ms, "last_caught_up_ms": m.last_caught_up_ms}


def quorum_to_json(q: QuorumInfo) -> dict[str, Any]:
    return {"leader_id": q.leader_id, "leader_epoch": q.leader_epoch,
            "high_watermark": q.high_watermark, "voters": [_member(v) for v in q.voters],
            "observers": [_member(o) for o in q.observers], "asked": q.asked,
            "controllers": [{"id": c.node_id, "address": c.address, "state": c.state,
                             "leader_epoch": c.leader_epoch, "error": c.error}
                            for c in q.controllers]}


def quorum_from_json(d: dict[str, Any]) -> QuorumInfo:
    def members(rows: list[dict[str, Any]]) -> tuple[QuorumMember, ...]:
        return tuple(QuorumMember(r["id"], r["log_end_offset"], r["lag"], r["last_fetch_ms"],
                                  r["last_caught_up_ms"]) for r in rows)

    return QuorumInfo(d["leader_id"], d["leader_epoch"], d["high_watermark"],
                      members(d["voters"]), members(d["observers"]), d.get("asked"),
                      tuple(ControllerAnswer(c["id"], c["address"], c["state"], c["leader_epoch"],
                                             c["error"]) for c in d.get("controllers", [])))


def unchecked_to_json(u: Unchecked) -> dict[str, Any]:
    return {"check": u.check, "severity": u.severity, "reason": u.reason,
            "subjects": list(u.subjects), "text": u.text}


def snapshot_to_json(s: ClusterSnapshot, with_topics: bool = True) -> dict[str, Any]:
    """The snapshot; `mode` always, `quorum` only in KRaft (null there when it did not answer),
    each broker's `fenced` only in KRaft. Without topics, "topics" is left empty for the
    caller to fill from `topic_to_json`."""
    out = _snapshot_json(s, with_topics)
    out["mode"] = s.mode
    out["unchecked"] = [unchecked_to_json(u) for u in unchecked(s)]  # what assess(s) says
    if s.kraft:
        out["quorum"] = quorum_to_json(s.quorum) if s.quorum is not None else None
        for row, broker in zip(out["brokers"], s.brokers, strict=True):
            row["fenced"] = broker.fenced
    return out


def _snapshot_json(s: ClusterSnapshot, with_topics: bool) -> dict[str, Any]:
    return {
        "taken_at": s.taken_at,
        "replica_logs_at": s.replica_logs_at,
        "controller": {"id": s.controller.id, "epoch": s.controller.epoch,
                       "broker_reported_id": s.controller.broker_reported_id,
                       **({"unknown": s.controller_unknown.reason}
                          if s.controller_unknown is not None else {})},
        "zookeeper": {"state": s.zookeeper_state} if s.sees_zookeeper else None,
        "admin": {"state": s.admin_state, "error": s.admin_error},
        "brokers": [{"id": b.id, "address": b.address, "registered": b.registered,
                     "expected": b.expected,
                     "throttle": None if b.throttle is None
                     else fact_to_json(b.throttle, throttle_to_json),
                     "log_dirs": None if b.log_dirs is None
                     else fact_to_json(b.log_dirs, lambda dirs: [log_dir_to_json(d) for d in dirs])}
                    for b in s.brokers],
        "log_dirs_at": s.log_dirs_at,
        "topics": [topic_to_json(t) for t in s.topics] if with_topics else [],
        "hidden_topics": fact_to_json(s.hidden_topics, list),
        "groups_unknown": {g: why.reason for g, why in s.groups_unknown},
        "warnings": [{"kind": w.kind, "topic": w.topic, "broker": w.broker,
                      "severity": w.severity, "message": w.message} for w in s.warnings],
        "limitations": list(s.limitations),
        "groups": [_group(g, s.taken_at) for g in s.groups],
    }


def topic_to_json(t: TopicInfo, partitions: Any = None) -> dict[str, Any]:
    """One topic with its partitions, or with `partitions` in their place (the bulk of a
    snapshot's JSON, which a caller may encode elsewhere: `partitions_to_json`)."""
    return {
        "name": t.name, "replication_factor": t.replication_factor,
        "config": fact_to_json(t.config, lambda c: {k: v.value for k, v in c}),
        "config_source": fact_to_json(t.config, lambda c: {k: v.source for k, v in c}),
        "partitions": partitions_to_json(t.partitions) if partitions is None else partitions,
    }


def partitions_to_json(partitions: Iterable[PartitionInfo]) -> list[dict[str, Any]]:
    return [_partition(p) for p in partitions]


def seconds(ms: int | None) -> float | None:
    return None if ms is None else round(ms / 1000, 3)


def _group(g: GroupInfo, at_ms: int) -> dict[str, Any]:
    """A group with its lag in records and in seconds (the age of its next record, at the
    snapshot's time; a lower bound when `lag_seconds_complete` is false)."""
    return {"group": g.group_id, "state": g.state, "members": g.members, "lag": g.lag,
            "lag_seconds": seconds(g.lag_ms(at_ms)),
            "lag_seconds_complete": g.lag_ms_complete(at_ms),
            "partitions": [{"topic": p.topic, "partition": p.partition,
                            "committed": p.committed, "high_watermark": p.high_watermark,
                            "lag": p.lag, "lag_seconds": seconds(p.lag_ms(at_ms)),
                            "next_timestamp": p.next_ts, "log_start": p.log_start,
                            "deleted_unconsumed": p.deleted_unconsumed}
                           for p in g.partitions]}


def _topic_config_from_json(t: dict[str, Any]) -> Fact[tuple[tuple[str, ConfigValue], ...]]:
    sources = t.get("config_source") or {}
    return fact_from_json(t.get("config", {}), lambda values: _config_from_json(values, sources))


def snapshot_from_json(d: dict[str, Any]) -> ClusterSnapshot:
    topics = []
    for t in d["topics"]:
        config = _topic_config_from_json(t)
        parts = tuple(PartitionInfo(
            topic=t["name"], partition=p["partition"], leader=p["leader"],
            leader_epoch=p["leader_epoch"], replicas=tuple(p["replicas"]), isr=tuple(p["isr"]),
            high_watermark=p["high_watermark"], log_start=p["log_start"],
            min_isr=fact_from_json(p["min_isr"]), broker_leader=p["broker_view"]["leader"],
            broker_isr=tuple(p["broker_view"]["isr"]) if p["broker_view"]["isr"] is not None
            else None, views_disagree=p["views_disagree"],
            replica_logs=tuple(ReplicaLog(r["broker"], r["log_end"], r["epoch"], r["lag"],
                                          r.get("diverged", 0))
                               for r in p.get("replica_logs", [])),
            epoch_ends=tuple((e["epoch"], e["found"], e["end_offset"])
                             for e in p.get("epoch_ends", [])),
            reassignment=fact_from_json(p.get("reassignment"), reassignment_from_json),
            elr=None if p.get("elr") is None else fact_from_json(p["elr"], elr_from_json),
            leader_live=p.get("leader_live", True), stalled_ms=p.get("stalled_ms"),
            disks=tuple(ReplicaDisk(r["broker"], r["log_dir"], r["size"], r["moving_to"],
                                    r["moved"]) for r in p.get("disks", [])),
            offline_replicas=tuple(p.get("offline_replicas", [])))
            for p in t["partitions"])
        topics.append(TopicInfo(t["name"], t["replication_factor"], config, parts))
    c = d["controller"]
    return ClusterSnapshot(
        taken_at=d["taken_at"], replica_logs_at=d.get("replica_logs_at"),
        controller=ControllerInfo(c["id"], c["epoch"], c.get("broker_reported_id")),
        controller_unknown=Unknown(c["unknown"]) if c.get("unknown") else None,
        zookeeper_state=(d.get("zookeeper") or {}).get("state"),
        admin_state=(d.get("admin") or {}).get("state", "ok"),
        admin_error=(d.get("admin") or {}).get("error"),
        brokers=tuple(BrokerInfo(b["id"], b["address"], b["registered"], b.get("expected", False),
                                 b.get("fenced"),
                                 None if b.get("throttle") is None
                                 else fact_from_json(b["throttle"], throttle_from_json),
                                 None if b.get("log_dirs") is None
                                 else fact_from_json(b["log_dirs"], lambda dirs: tuple(
                                     log_dir_from_json(x) for x in dirs)))
                      for b in d["brokers"]),
        log_dirs_at=d.get("log_dirs_at"),
        hidden_topics=fact_from_json(d.get("hidden_topics", []), tuple),
        groups_unknown=tuple((g, Unknown(why)) for g, why in d.get("groups_unknown", {}).items()),
        topics=tuple(topics),
        warnings=tuple(ClusterWarning(w["kind"], w["message"], w.get("topic"), w.get("broker"),
                                      Severity(w.get("severity", "warn"))) for w in d["warnings"]),
        limitations=tuple(d.get("limitations", [])),
        groups=tuple(GroupInfo(g["group"], g["state"], g["members"], tuple(
            GroupPartition(p["topic"], p["partition"], p["committed"], p["high_watermark"],
                           p.get("next_timestamp"), p.get("log_start"))
            for p in g["partitions"])) for g in d.get("groups", [])),
        mode=d.get("mode", "unknown"),
        quorum=quorum_from_json(d["quorum"]) if d.get("quorum") else None,
    )
