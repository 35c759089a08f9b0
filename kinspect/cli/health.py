"""`kinspect health`: a one-shot ISR-health verdict for scripts, cron and alerting.

Exit codes (Nagios' OK, WARNING, CRITICAL, UNKNOWN): 0 healthy, 1 warnings only, 2 critical,
3 not judged: the cluster could not be reached at all, or a check that could have made the
verdict worse than what was seen could not be made (a refused DescribeConfigs, topics hidden
from this user, ...). A monitor must not page "offline partitions" for a network blip, and
must not read "healthy" where kinspect was not allowed to look.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from kinspect.checks import option
from kinspect.cli.common import add_cluster_arguments, resolve_cluster
from kinspect.errors import KinspectError
from kinspect.model import ClusterSnapshot, EligibleLeaders
from kinspect.model.assessment import classify, copying, elr_explained, stalled_between, verdict_of
from kinspect.model.serialize import unchecked_to_json
from kinspect.profiles import redact
from kinspect.target import ClusterTarget

# A throttled replica fetches in bursts, about one per replication quota window (11 samples of
# 1 s by default): measured here, a copy throttled to 100 KB/s grew every 10-12 s. Watching
# less than that would call a healthy throttled copy stalled.
WATCH_MOVES_S = 15.0
EXIT = {"healthy": 0, "warning": 1, "critical": 2, "unknown": 3, "unreachable": 3}


def register(commands: Any) -> None:
    health = commands.add_parser("health", help="ISR health once: exit 0 healthy, 1 warnings, "
                                 "2 critical, 3 unreachable or not judged (a check refused)")
    health.add_argument("--json", action="store_true", help="one JSON object on stdout")
    health.add_argument("--timeout", type=option(1, 600), default=15.0, metavar="S",
                        help="seconds to wait for the cluster's answers, 1 to 600 (default 15)")
    health.add_argument("--watch-moves", type=option(0, 600), default=WATCH_MOVES_S, metavar="S",
                        help="while a reassignment copies, watch it S more seconds and warn "
                             f"when no replica being added grew (default {WATCH_MOVES_S:.0f}, "
                             "longer than a throttle's 11 s quota window; 0: do not wait)")
    health.add_argument("--max-lag", type=option(0, 10**15, integer=True), metavar="N",
                        help="also warn (exit 1) when a consumer group lags more than N records "
                             "(default: lag is reported, not judged)")
    add_cluster_arguments(health)
    health.set_defaults(handler=cmd_health)


def observe_once(cluster: ClusterTarget, timeout_s: float, watch_moves_s: float = 0.0
                 ) -> tuple[ClusterSnapshot, str | None, tuple[str, ...]]:
    """One snapshot; a ZooKeeper that does not answer is a finding, not a reason to give up.
    While a reassignment is copying, its replicas being added are watched `watch_moves_s`
    more seconds: those that did not grow are named (the verdict's stalled reassignments)."""
    from kinspect.sources.observer import Observer

    def observer(zookeeper: str | None) -> Observer:
        return Observer(cluster.bootstrap, zookeeper, expected_brokers=cluster.expected_brokers,
                        admin_config=cluster.kafka, zk_auth=list(cluster.zk_auth) or None,
                        controllers=cluster.controllers)

    zk_error = None
    watcher = observer(cluster.zookeeper)
    try:
        watcher.start(zk_timeout_s=min(5.0, timeout_s))
    except KinspectError as exc:
        watcher.stop()
        zk_error = str(exc)
        watcher = observer(None)
        watcher.start()
    try:
        first = watcher.wait_ready(timeout_s=timeout_s)
        if watch_moves_s <= 0 or not copying(first):
            return first, zk_error, ()
        time.sleep(watch_moves_s)
        last = watcher.wait_ready(timeout_s=timeout_s)
        return last, zk_error, stalled_between(first, last)
    finally:
        watcher.stop()


def _listed(label: str, names: tuple[str, ...]) -> str:
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(names)} partition{'s' * (len(names) != 1)} {label}: {shown}"


def _reassignments(snapshot: ClusterSnapshot) -> list[dict[str, Any]]:
    """Each partition being moved, with how far each replica being added trails the leader."""
    out = []
    for p in snapshot.partitions():
        if not p.moving:
            continue
        behind = {r.broker: r.lag for r in p.replica_logs if r.broker in p.adding}
        out.append({"partition": p.name, "replicas": list(p.replicas), "adding": list(p.adding),
                    "removing": list(p.removing), "behind": behind, "stalled_ms": p.stalled_ms})
    return out


def _elr(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """KRaft: each under-min-ISR partition's eligible leaders, and what they mean."""
    out: dict[str, Any] = {}
    for p in snapshot.partitions():
        why = elr_explained(p)
        if why is not None and isinstance(p.elr, EligibleLeaders):
            out[p.name] = {"eligible": list(p.elr.eligible), "last_known": list(p.elr.last_known),
                           "explained": why}
    return out


def assess(snapshot: ClusterSnapshot, zk_error: str | None,
           max_lag: int | None = None, stalled: tuple[str, ...] = ()) -> dict[str, Any]:
    """The verdict and its reasons, as data (pure). Consumer lag is listed; it is judged
    only against `max_lag` when one is given (health is about ISR health first). A check that
    could not be made is listed under `unchecked`; see model/assessment.py for the verdict."""
    if snapshot.admin_state != "ok" and not snapshot.sees_zookeeper:
        return {"verdict": "unreachable", "problems": [
            f"no broker answered{': ' + snapshot.admin_error if snapshot.admin_error else ''}"
            + (f"; {zk_error}" if zk_error else "")]}
    report = classify(snapshot, judge_lag=max_lag is not None)
    critical: list[str] = []
    warnings: list[str] = []
    if zk_error:
        critical.append(f"{zk_error}: no controller election or ISR change can happen")
    if snapshot.admin_state != "ok":
        critical.append(f"no broker answered the AdminClient ({snapshot.admin_error or 'timeout'})")
    for label, names, bucket in (("offline", report.offline, critical),
                                 ("unavailable", tuple(n for n in report.unavailable
                                                       if n not in report.offline), critical),
                                 ("under min ISR", report.under_min_isr, critical),
                                 ("at min ISR", report.at_min_isr, warnings),
                                 ("under-replicated", report.under_replicated, warnings),
                                 ("in a reassignment that made no progress for a minute",
                                  report.stalled, warnings),
                                 ("in a reassignment that made no progress while health "
                                  "watched it", tuple(n for n in stalled
                                                      if n not in report.stalled), warnings)):
        if names:
            bucket.append(_listed(label, names))
    controller = snapshot.controller
    if not report.controller_ok and not zk_error:
        critical.append("no controller: no leader can be elected")
    elif (controller.id is not None and controller.broker_reported_id is not None
          and controller.broker_reported_id != controller.id and snapshot.sees_zookeeper):
        warnings.append(f"the brokers report controller {controller.broker_reported_id}, "
                        f"ZooKeeper says {controller.id}")
    warnings += list(report.risky_settings)
    if max_lag is not None:
        warnings += [f"consumer group {g.group_id} lags {g.lag:,} records (over {max_lag:,})"
                     for g in snapshot.groups if g.lag is not None and g.lag > max_lag]
    groups = [{"group": g.group_id, "state": g.state, "members": g.members, "lag": g.lag}
              for g in snapshot.groups]
    verdict, seen = verdict_of(bool(critical), bool(warnings), report.unchecked)
    return {
        "verdict": verdict, "seen": seen, "problems": critical + warnings,
        "unchecked": [unchecked_to_json(u) for u in report.unchecked], "mode": snapshot.mode,
        "controller": {"id": controller.id, "epoch": controller.epoch,
                       "broker_reported_id": controller.broker_reported_id},
        "zookeeper": snapshot.zookeeper_state or ("unreachable" if zk_error else "not watched"),
        "quorum": ({"leader_id": snapshot.quorum.leader_id,
                    "leader_epoch": snapshot.quorum.leader_epoch,
                    "voters": [v.id for v in snapshot.quorum.voters]}
                   if snapshot.quorum is not None else None),
        "brokers": {"registered": list(report.brokers_registered),
                    "expected": list(report.brokers_expected),
                    "answering": [b.id for b in snapshot.brokers if b.address]},
        "partitions": len(snapshot.partitions()),
        "offline": list(report.offline), "under_min_isr": list(report.under_min_isr),
        "at_min_isr": list(report.at_min_isr), "under_replicated": list(report.under_replicated),
        "unavailable": list(report.unavailable), "reassignments": _reassignments(snapshot),
        "elr": _elr(snapshot),
        "risky_settings": list(report.risky_settings), "limitations": list(snapshot.limitations),
        "groups": groups,
    }


def cmd_health(args: argparse.Namespace) -> int:
    cluster = resolve_cluster(args)
    snapshot, zk_error, stalled = observe_once(cluster, args.timeout, args.watch_moves)
    result = {"cluster": redact(cluster.label),
              **assess(snapshot, zk_error, args.max_lag, stalled)}
    result["exit_code"] = EXIT[result["verdict"]]
    if args.json:
        print(redact(json.dumps(result)))
    else:
        print(redact(f"{result['verdict'].upper()}: {result['cluster']}"))
        for problem in result["problems"]:
            print(redact(f"  - {problem}"))
        for group in result.get("groups", []):
            lag = "?" if group["lag"] is None else f"{group['lag']:,}"
            print(redact(f"  group {group['group']}: {group['state']}, {group['members']} "
                         f"members, lag {lag}"))
        if result["verdict"] == "unknown":
            print(f"  (what it could see is {result['seen']}; it could not check:)")
        for missing in result.get("unchecked", []):
            print(redact(f"  ? {missing['text']}"))
        for name, elr in result.get("elr", {}).items():
            print(f"  {name}: {elr['explained']}")
        for moving in result.get("reassignments", []):
            behind = ", ".join(f"{b} {'?' if lag is None else f'{lag:,} behind'}"
                               for b, lag in moving["behind"].items())
            print(f"  reassigning {moving['partition']}: adding "
                  f"{','.join(map(str, moving['adding'])) or '-'}, removing "
                  f"{','.join(map(str, moving['removing'])) or '-'}"
                  + (f" ({behind})" if behind else ""))
        for note in result.get("limitations", []):
            print(f"  (cannot see: {note})")
    return int(result["exit_code"])
