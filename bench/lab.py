"""The lab a benchmark runs against: the running one, or a temporary one torn down afterwards."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def kinspect(*args: str, timeout: float = 600) -> str:
    proc = subprocess.run([sys.executable, "-m", "kinspect", *args], capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"bench: kinspect {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


@contextmanager
def bench_lab(backend: str = "process", reuse: bool = True,
              up_args: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """Reuse a running lab (left running); otherwise start one in a temp home (`lab up` with
    `up_args`, e.g. --mode kraft) and take it down."""
    probe = subprocess.run([sys.executable, "-m", "kinspect", "lab", "status", "--json"],
                           capture_output=True, text=True)
    if probe.returncode == 0 and reuse:
        yield json.loads(probe.stdout)
        return
    with tempfile.TemporaryDirectory(prefix="kinspect-bench-") as home:
        previous = os.environ.get("KINSPECT_HOME")
        os.environ["KINSPECT_HOME"] = home
        try:
            print(f"bench: starting a lab for this run {' '.join(up_args)} …", file=sys.stderr)
            yield json.loads(kinspect("lab", "up", "--backend", backend, *up_args, "--json"))
        finally:
            subprocess.run([sys.executable, "-m", "kinspect", "lab", "down"], capture_output=True)
            if previous is None:
                os.environ.pop("KINSPECT_HOME", None)
            else:
                os.environ["KINSPECT_HOME"] = previous


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: honest for small samples (p99 of 50 is the worst but one)."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def describe(values: Sequence[float]) -> str:
    return (f"p50 {percentile(values, 50):.1f}, p99 {percentile(values, 99):.1f}, "
            f"mean {statistics.fmean(values):.1f}, max {max(values):.1f}")
