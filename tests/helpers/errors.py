"""A one-line error, exit 2, no traceback: the CLI's contract for bad input."""

from __future__ import annotations

from typing import Any


def one_line_error(proc: Any) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("kinspect: error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    return str(errors[0])


