"""The one table of exit codes holds every code kinspect returns: the commands that keep a
literal of their own (the CLI's dispatcher and KinspectError stay free of the model, for a fast
start) are held to it here, by what they really return."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kinspect.cli import main
from kinspect.errors import KinspectError
from kinspect.model.assessment import Verdict
from kinspect.model.exits import BAD_INPUT, EXITS, INTERRUPTED, VERDICT_CODES

ROOT = Path(__file__).resolve().parents[2]


def _returned_literals(path: Path) -> set[int]:
    """Every `return N` with an integer literal in a module."""
    tree = ast.parse(path.read_text())
    return {n.value.value for n in ast.walk(tree) if isinstance(n, ast.Return)
            and isinstance(n.value, ast.Constant) and type(n.value.value) is int}


def test_every_literal_the_dispatcher_returns_is_in_the_table() -> None:
    codes = {e.code for e in EXITS}
    assert _returned_literals(ROOT / "kinspect/cli/__init__.py") <= codes
    assert INTERRUPTED.code in _returned_literals(ROOT / "kinspect/cli/__init__.py")


def test_bad_input_exits_with_the_tables_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert KinspectError("x").exit_code == BAD_INPUT.code
    assert main(["lab", "up", "--brokers", "99"]) == BAD_INPUT.code
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_every_verdict_has_its_code() -> None:
    assert {v.value for v in Verdict} == set(VERDICT_CODES)
    assert [v.exit_code for v in Verdict] == [VERDICT_CODES[v.value] for v in Verdict]
