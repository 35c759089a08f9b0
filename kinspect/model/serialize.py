"""Snapshots to JSON and back: the `snapshot --json` contract, and recorded snapshots for tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kinspect.model.assessment import Unchecked, unchecked
from kinspect.model.events import JsonObject
from kinspect.model.facts import Fact, Unknown
from kinspect.model.flush import flush_from_json, flush_to_json
from kinspect.model.health_checks import CHECKS
from kinspect.model.partition_codec import partition_from_json, partition_to_json
from kinspect.model.severity import Severity
from kinspect.model.snapshot import (
    BrokerInfo,
    ClusterFinding,
    ClusterSnapshot,
    ControllerInfo,
    GroupInfo,
    GroupPartition,
    LogDirInfo,
    PartitionInfo,
    QuorumInfo,
    QuorumMember,
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


def reassignment_to_json(r: Reassignment | None) -> JsonObject | None:
    return None if r is None else {"replicas": list(r.replicas), "adding": list(r.adding),
                                   "removing": list(r.removing)}


def reassignment_from_json(d: dict[str, Any] | None) -> Reassignment | None:
    return None if d is None else Reassignment(tuple(d["replicas"]), tuple(d["adding"]),
                                               tuple(d["removing"]))


def elr_to_json(e: EligibleLeaders) -> JsonObject:
    return {"eligible": list(e.eligible), "last_known": list(e.last_known)}


def elr_from_json(d: dict[str, Any]) -> EligibleLeaders:
    return EligibleLeaders(tuple(d["eligible"]), tuple(d["last_known"]))


def throttle_to_json(t: Throttle) -> JsonObject:
    return {"leader_rate": t.leader_rate, "follower_rate": t.follower_rate}


def throttle_from_json(d: dict[str, Any]) -> Throttle:
    return Throttle(d["leader_rate"], d["follower_rate"])


def _config_from_json(values: dict[str, str], sources: dict[str, str]
                      ) -> tuple[tuple[str, ConfigValue], ...]:
    return tuple(sorted((k, ConfigValue(v, sources.get(k, "unknown"))) for k, v in values.items()))


def log_dir_to_json(d: LogDirInfo) -> JsonObject:
    return {"path": d.path, "offline": d.offline, "error": d.error, "size": d.size,
            "replicas": d.replicas, "total_bytes": d.total_bytes,
            "usable_bytes": d.usable_bytes}


def log_dir_from_json(d: dict[str, Any]) -> LogDirInfo:
    return LogDirInfo(d["path"], d["error"], d["size"], d["replicas"], d["total_bytes"],
                      d["usable_bytes"])


def _member(m: QuorumMember) -> JsonObject:
    return {"id": m.id, "log_end_offset": m.log_end_offset, "lag": m.lag,
            "last_fetch_ms": m.last_fetch_ms, "last_caught_up_ms": m.last_caught_up_ms}


def quorum_to_json(q: QuorumInfo) -> JsonObject:
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


def unchecked_to_json(u: Unchecked) -> JsonObject:
    """An unmade check in the registry's words: what it looks at, what it would have found."""
    check = CHECKS[u.check]
    return {"check": u.check, "severity": u.severity, "reason": u.reason,
            "subjects": list(u.subjects), "text": u.text, "looks_at": check.looks_at,
            "finds": check.finding}


def snapshot_to_json(s: ClusterSnapshot, with_topics: bool = True) -> JsonObject:
    """The snapshot; `mode` always, `quorum` only in KRaft (null there when it did not answer),
    each broker's `fenced` only in KRaft. Without topics, "topics" is left empty for the
    caller to fill from `topic_to_json`."""
    out = _snapshot_json(s, with_topics)
    out["mode"] = s.mode
    out["unchecked"] = [unchecked_to_json(u) for u in unchecked(s)]  # what assess(s) says
    if s.kraft:
        out["quorum"] = None
        if s.quorum is not None:
            out["quorum"] = quorum_to_json(s.quorum)
    return out


def _snapshot_json(s: ClusterSnapshot, with_topics: bool) -> JsonObject:
    return {
        "taken_at": s.taken_at,
        "replica_logs_at": s.replica_logs_at,
        "controller": {"id": s.controller.id, "epoch": s.controller.epoch,
                       "broker_reported_id": s.controller.broker_reported_id,
                       **({"unknown": s.controller_unknown.reason}
                          if s.controller_unknown is not None else {})},
        "zookeeper": {"state": s.zookeeper_state} if s.sees_zookeeper else None,
        "admin": {"state": s.admin_state, "error": s.admin_error},
        "brokers": [_broker(b, s.kraft) for b in s.brokers],
        "log_dirs_at": s.log_dirs_at,
        "topics": [topic_to_json(t) for t in s.topics] if with_topics else [],
        "hidden_topics": fact_to_json(s.hidden_topics, list),
        "groups_unknown": {g: why.reason for g, why in s.groups_unknown},
        "warnings": [{"kind": w.kind, "topic": w.topic, "broker": w.broker,
                      "severity": w.severity, "message": w.message} for w in s.findings],
        "limitations": list(s.limitations),
        "groups": [_group(g, s.taken_at) for g in s.groups],
    }


def _broker(b: BrokerInfo, kraft: bool) -> JsonObject:
    """A broker; `fenced` only in KRaft."""
    out: JsonObject = {"id": b.id, "address": b.address, "registered": b.registered,
                       "expected": b.expected, "throttle": None, "log_dirs": None}
    if b.throttle is not None:
        out["throttle"] = fact_to_json(b.throttle, throttle_to_json)
    if b.log_dirs is not None:
        out["log_dirs"] = fact_to_json(b.log_dirs, _log_dirs_json)
    if b.flush is not None:
        out["flush"] = fact_to_json(b.flush, flush_to_json)
    if kraft:
        out["fenced"] = b.fenced
    return out


def _log_dirs_json(dirs: tuple[LogDirInfo, ...]) -> list[JsonObject]:
    return [log_dir_to_json(d) for d in dirs]


def topic_to_json(t: TopicInfo, partitions: Any = None) -> JsonObject:
    """One topic with its partitions, or with `partitions` in their place (the bulk of a
    snapshot's JSON, which a caller may encode elsewhere: `partitions_to_json`)."""
    return {
        "name": t.name, "replication_factor": t.replication_factor,
        "config": fact_to_json(t.config, lambda c: {k: v.value for k, v in c}),
        "config_source": fact_to_json(t.config, lambda c: {k: v.source for k, v in c}),
        "flush": fact_to_json(t.flush, flush_to_json),
        "partitions": partitions_to_json(t.partitions) if partitions is None else partitions,
    }


def partitions_to_json(partitions: Iterable[PartitionInfo]) -> list[JsonObject]:
    """The partitions, each by the codec compiled from the partition schema."""
    return [partition_to_json(p) for p in partitions]


def seconds(ms: int | None) -> float | None:
    return None if ms is None else round(ms / 1000, 3)


def _group(g: GroupInfo, at_ms: int) -> JsonObject:
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
        parts = tuple([partition_from_json(t["name"], p) for p in t["partitions"]])
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
                                     log_dir_from_json(x) for x in dirs)),
                                 None if b.get("flush") is None
                                 else fact_from_json(b["flush"], flush_from_json))
                      for b in d["brokers"]),
        log_dirs_at=d.get("log_dirs_at"),
        hidden_topics=fact_from_json(d.get("hidden_topics", []), tuple),
        groups_unknown=tuple((g, Unknown(why)) for g, why in d.get("groups_unknown", {}).items()),
        topics=tuple(topics),
        findings=tuple(ClusterFinding(w["kind"], w["message"], w.get("topic"), w.get("broker"),
                                      Severity(w.get("severity", "warn"))) for w in d["warnings"]),
        limitations=tuple(d.get("limitations", [])),
        groups=tuple(GroupInfo(g["group"], g["state"], g["members"], tuple(
            GroupPartition(p["topic"], p["partition"], p["committed"], p["high_watermark"],
                           p.get("next_timestamp"), p.get("log_start"))
            for p in g["partitions"])) for g in d.get("groups", [])),
        mode=d.get("mode", "unknown"),
        quorum=quorum_from_json(d["quorum"]) if d.get("quorum") else None,
    )
