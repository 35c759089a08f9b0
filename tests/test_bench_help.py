"""Every benchmark answers --help with its usage and starts nothing: a bench that took --help
for a run once started a lab of its own beside the one being measured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
RUNNABLE = sorted(p.stem for p in BENCH.glob("*.py")
                  if 'if __name__ == "__main__":' in p.read_text())


def test_every_runnable_bench_is_found() -> None:
    assert {"run", "snapshot", "tui", "observer", "change_latency"} <= set(RUNNABLE)


@pytest.mark.parametrize("name", RUNNABLE)
def test_a_bench_answers_help_without_running(name: str) -> None:
    done = subprocess.run([sys.executable, "-m", f"bench.{name}", "--help"], capture_output=True,
                          text=True, timeout=60, cwd=BENCH.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: "), done.stdout
    assert "bench:" not in done.stderr  # no "bench: starting a lab …" or any other progress
