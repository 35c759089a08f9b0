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
from typing import TYPE_CHECKING, Any

from kinspect.cli.common import add_cluster_arguments, early_groups, resolve_with_admin
from kinspect.errors import KinspectError
from kinspect.model import ClusterSnapshot, EligibleLeaders, HealthReport, Verdict, assess
from kinspect.model.assessment import EXIT_CODES, copying, elr_explained, stalled_between
from kinspect.model.events import JsonObject
from kinspect.model.health_checks import check_key
from kinspect.model.serialize import seconds, unchecked_to_json
from kinspect.model.severity import Severity
from kinspect.profiles import redact
from kinspect.target import ClusterTarget
from kinspect.validation import option

if TYPE_CHECKING:
    from kinspect.clients.groups_watch import GroupsWatch
    from kinspect.clients.kafka import WatchedAdmin

# A throttled replica fetches in bursts, about one per replication quota window (11 samples of
# 1 s by default): measured here, a copy throttled to 100 KB/s grew every 10-12 s. Watching
# less than that would call a healthy throttled copy stalled.
WATCH_MOVES_S = 15.0
EXIT = EXIT_CODES  # by verdict: Nagios' OK, WARNING, CRITICAL, UNKNOWN


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
    health.add_argument("--max-lag-seconds", type=option(0, 10**9), metavar="S",
                        help="also warn (exit 1) when a consumer group's oldest unconsumed "
                             "record is more than S seconds old; with either limit, a group "
                             "near or past its topic's retention is a warning too")
    health.add_argument("--all", action="store_true",
                        help="every profile of the profiles file at once: one line each, exit "
                             "with the worst code (critical, then not judged, then warnings)")
    add_cluster_arguments(health)
    health.set_defaults(handler=cmd_health, quick_exit=True)


def observe_once(cluster: ClusterTarget, timeout_s: float, watch_moves_s: float = 0.0,
                 admin: WatchedAdmin | None = None
                 ) -> tuple[ClusterSnapshot, str | None, tuple[str, ...]]:
    """One snapshot; a ZooKeeper that does not answer is a finding, not a reason to give up.
    While a reassignment is copying, its replicas being added are watched `watch_moves_s`
    more seconds: those that did not grow are named (the verdict's stalled reassignments).
    `admin`: the AdminClient made already for this cluster (resolve_with_admin)."""
    groups = early_groups(cluster)
    from kinspect.sources.observer import Observer

    def observer(zookeeper: str | None, groups: GroupsWatch | None = None,
                 admin: WatchedAdmin | None = None) -> Observer:
        return Observer(cluster.bootstrap, zookeeper, expected_brokers=cluster.expected_brokers,
                        admin_config=cluster.kafka, zk_auth=list(cluster.zk_auth) or None,
                        controllers=cluster.controllers, groups=groups, admin_client=admin)

    zk_error = None
    watcher = observer(cluster.zookeeper, groups, admin)
    try:
        watcher.start(zk_timeout_s=min(5.0, timeout_s))
    except KinspectError as exc:
        watcher.stop()  # and the groups' probe with it: the next observer starts its own
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


def _reassignments(snapshot: ClusterSnapshot) -> list[JsonObject]:
    """Each partition being moved, with how far each replica being added trails the leader."""
    out: list[JsonObject] = []
    for p in snapshot.partitions():
        if not p.moving:
            continue
        behind = {r.broker: r.lag for r in p.replica_logs if r.broker in p.adding}
        out.append({"partition": p.name, "replicas": list(p.replicas), "adding": list(p.adding),
                    "removing": list(p.removing), "behind": behind, "stalled_ms": p.stalled_ms})
    return out


def _elr(snapshot: ClusterSnapshot) -> JsonObject:
    """KRaft: each under-min-ISR partition's eligible leaders, and what they mean."""
    out: JsonObject = {}
    for p in snapshot.partitions():
        why = elr_explained(p)
        if why is not None and isinstance(p.elr, EligibleLeaders):
            out[p.name] = {"eligible": list(p.elr.eligible), "last_known": list(p.elr.last_known),
                           "explained": why}
    return out


def _quorum(snapshot: ClusterSnapshot) -> JsonObject | None:
    q = snapshot.quorum
    if q is None:
        return None
    return {"leader_id": q.leader_id, "leader_epoch": q.leader_epoch,
            "voters": [v.id for v in q.voters]}


def report_json(report: HealthReport, snapshot: ClusterSnapshot, zk_error: str | None = None
                ) -> dict[str, Any]:
    """`health --json`'s object without the cluster: the report, and what the snapshot shows
    around it (the controller, the brokers, the moves, the groups)."""
    if not report.reachable:
        return {"verdict": report.verdict, "problems": list(report.problems)}
    controller = snapshot.controller
    return {
        "verdict": report.verdict, "seen": report.seen, "problems": list(report.problems),
        "unchecked": [unchecked_to_json(u) for u in report.unchecked], "mode": snapshot.mode,
        "controller": {"id": controller.id, "epoch": controller.epoch,
                       "broker_reported_id": controller.broker_reported_id},
        "zookeeper": snapshot.zookeeper_state or ("unreachable" if zk_error else "not watched"),
        "quorum": _quorum(snapshot),
        "brokers": {"registered": list(report.brokers_registered),
                    "expected": list(report.brokers_expected),
                    "answering": [b.id for b in snapshot.brokers if b.address]},
        "partitions": len(snapshot.partitions()),
        "offline": list(report.offline), "under_min_isr": list(report.under_min_isr),
        "at_min_isr": list(report.at_min_isr), "under_replicated": list(report.under_replicated),
        "unavailable": list(report.unavailable), "reassignments": _reassignments(snapshot),
        "offline_log_dirs": list(report.offline_log_dirs),
        "elr": _elr(snapshot),
        "risky_settings": list(report.risky_settings), "findings": _findings(report),
        "limitations": list(snapshot.limitations),
        "groups": [{"group": g.group_id, "state": g.state, "members": g.members, "lag": g.lag,
                    "lag_seconds": seconds(g.lag_ms(snapshot.taken_at))}
                   for g in snapshot.groups],
    }


def _findings(report: HealthReport) -> list[JsonObject]:
    """The cluster's findings, each with its severity and the check that made it (a broker
    missing is the brokers' check, not a risky setting)."""
    out: list[JsonObject] = []
    for w in report.findings:
        out.append({"kind": w.kind, "check": check_key(w.kind),
                    "severity": w.severity, "message": w.message})
    return out


def health_json(snapshot: ClusterSnapshot, zk_error: str | None = None,
                max_lag: int | None = None, stalled: tuple[str, ...] = (),
                max_lag_s: float | None = None) -> dict[str, Any]:
    """The model's assessment of one snapshot, as `health --json` writes it (pure)."""
    return report_json(assess(snapshot, zk_error, max_lag, stalled, max_lag_s), snapshot,
                       zk_error)


def problem_lines(report: HealthReport) -> list[str]:
    """Each problem with its severity, the registry's word (`- critical: ...`, `- warn: ...`):
    the verdict says the worst, each line how bad it is itself."""
    lines = [f"  - {Severity.CRITICAL}: {problem}" for problem in report.critical]
    lines += [f"  - {Severity.WARN}: {problem}" for problem in report.warnings]
    return lines


def _text(result: dict[str, Any], report: HealthReport) -> list[str]:
    """The JSON object, for a human: the verdict, the problems, then the details."""
    lines = [f"{result['verdict'].upper()}: {result['cluster']}"]
    lines += problem_lines(report)
    for group in result.get("groups", []):
        lag = "?" if group["lag"] is None else f"{group['lag']:,}"
        behind = "" if group.get("lag_seconds") is None else f" ({group['lag_seconds']:,.1f} s)"
        lines.append(f"  group {group['group']}: {group['state']}, {group['members']} "
                     f"members, lag {lag}{behind}")
    if result["verdict"] == Verdict.UNKNOWN:
        lines.append(f"  (what it could see is {result['seen']}; it could not check:)")
    lines += [f"  ? {missing['text']}" for missing in result.get("unchecked", [])]
    lines += [f"  {name}: {elr['explained']}" for name, elr in result.get("elr", {}).items()]
    lines += [_moving(moving) for moving in result.get("reassignments", [])]
    lines += [f"  (cannot see: {note})" for note in result.get("limitations", [])]
    return lines


def _moving(moving: dict[str, Any]) -> str:
    behind = ", ".join(f"{b} {'?' if lag is None else f'{lag:,} behind'}"
                       for b, lag in moving["behind"].items())
    return (f"  reassigning {moving['partition']}: adding "
            f"{','.join(map(str, moving['adding'])) or '-'}, removing "
            f"{','.join(map(str, moving['removing'])) or '-'}"
            + (f" ({behind})" if behind else ""))


def cmd_health(args: argparse.Namespace) -> int:
    if args.all:
        if args.profile or args.bootstrap or args.zookeeper:
            raise KinspectError("--all checks every profile: leave out --profile, --bootstrap "
                                "and --zookeeper")
        from kinspect.cli.health_all import cmd_health_all

        return cmd_health_all(args)
    cluster, admin = resolve_with_admin(args)
    snapshot, zk_error, stalled = observe_once(cluster, args.timeout, args.watch_moves, admin)
    report = assess(snapshot, zk_error, args.max_lag, stalled, args.max_lag_seconds)
    result = {"cluster": redact(cluster.label), **report_json(report, snapshot, zk_error),
              "exit_code": report.exit_code}
    if args.json:
        print(redact(json.dumps(result)))
    else:
        print("\n".join(redact(line) for line in _text(result, report)))
    return report.exit_code
