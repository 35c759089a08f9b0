"""`kinspect health --all`: every profile's verdict at once, one line each, and the worst exit
code, as kafui and kafbat show every configured cluster's health on one screen.

Worst is what pages first: critical (2), then not judged (3: unreachable, or a check refused),
then warnings (1), then healthy (0). The clusters are asked in parallel, each as `health
--profile NAME` would ask it (without watching reassignments for more seconds)."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from kinspect.cli.common import resolve_cluster
from kinspect.errors import KinspectError
from kinspect.model import assess
from kinspect.profiles import profile_names, redact

WORST_FIRST = (2, 3, 1, 0)  # exit codes, the one that pages first first
PARALLEL = 4  # clusters asked at once (each is a poll, a groups process and its clients)


@dataclass(frozen=True)
class ClusterVerdict:
    """One profile's health, or why it could not be judged at all (`error`)."""

    profile: str
    verdict: str
    exit_code: int
    problems: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()
    error: str | None = None

    @property
    def line(self) -> str:
        line = f"{self.verdict.upper():<11} {self.profile}"
        if self.error:
            return f"{line}: {self.error}"
        said = [*self.problems, *self.unchecked]  # the first said, the rest counted
        if said and said[0]:
            line += f": {said[0]}"
        if len(said) > 1:
            line += f" (+{len(said) - 1} more)"
        return line


def worst(codes: list[int]) -> int:
    return min(codes, key=WORST_FIRST.index, default=0)


def judge(profile: str, args: argparse.Namespace) -> ClusterVerdict:
    """One profile judged; a profile that cannot be read or reached is not judged (3)."""
    from kinspect.cli.health import observe_once

    target = argparse.Namespace(profile=profile, config=args.config, bootstrap=None,
                                zookeeper=None, X=[])
    try:
        snapshot, zk_error, stalled = observe_once(resolve_cluster(target), args.timeout, 0.0)
    except KinspectError as exc:
        return ClusterVerdict(profile, "unknown", 3, error=str(exc).removeprefix("kinspect: "))
    report = assess(snapshot, zk_error, args.max_lag, stalled, args.max_lag_seconds)
    return ClusterVerdict(profile, str(report.verdict), report.exit_code, report.problems,
                          tuple(u.text for u in report.unchecked if u.severity != "info"))


def cmd_health_all(args: argparse.Namespace) -> int:
    names = profile_names(args.config)
    if not names:
        raise KinspectError("--all: the profiles file has no [clusters.NAME] (see "
                            "docs/guides/on-call.md#profiles)")
    with ThreadPoolExecutor(max_workers=min(PARALLEL, len(names))) as pool:
        verdicts = list(pool.map(lambda name: judge(name, args), names))
    code = worst([v.exit_code for v in verdicts])
    if args.json:
        print(redact(json.dumps({"clusters": [asdict(v) for v in verdicts], "exit_code": code})))
    else:
        for verdict in verdicts:
            print(redact(verdict.line))
    return code
