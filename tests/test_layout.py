"""The codebase's layout rules, checked: one name for one thing, tests laid out like the code,
and every post-mortem sub-package saying what flows in and out."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("model", "clients", "sources", "lab", "load", "postmortem", "scenarios", "lessons", "tui",
          "cli")


def test_no_module_name_is_used_twice() -> None:
    """`engine` was the Docker engine, the Spark server and the TUI's keeper: a module name
    names one thing (packages' __init__ aside)."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in (ROOT / "kinspect").rglob("*.py"):
        if path.name != "__init__.py":
            where[path.name].append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    found |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return found


def test_no_test_module_imports_another() -> None:
    """Shared test code lives in tests/helpers/, never in a test module another one imports."""
    offenders = {}
    for path in (ROOT / "tests").rglob("*.py"):
        bad = {m for m in _imported_modules(path) if m.startswith("tests.")
               and not m.startswith("tests.helpers")}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_tests_are_laid_out_by_layer() -> None:
    """A test folder per layer of kinspect/ (plus helpers, and docs for the site in docs/): no
    catch-all tests/unit."""
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith(
        ("_", "."))}
    assert folders - {"helpers", "docs"} <= set(LAYERS), folders
    assert not (ROOT / "tests" / "unit").exists()


def test_every_postmortem_subpackage_says_what_flows_in_and_out() -> None:
    packages = [p for p in (ROOT / "kinspect" / "postmortem").iterdir() if (p / "__init__.py").exists()]
    assert {p.name for p in packages} == {"evidence", "spark", "matching", "story"}
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        assert "In:" in doc and "Out:" in doc, package.name


def test_every_package_says_what_flows_in_and_out() -> None:
    """kinspect/postmortem/__init__.py is the model: a newcomer reads a package's docstring and
    knows what it takes and what it gives, before opening a module."""
    packages = [p.parent for p in (ROOT / "kinspect").rglob("__init__.py")
                if "__pycache__" not in p.parts]
    silent = []
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        if "In:" not in doc or "Out:" not in doc:
            silent.append(str(package.relative_to(ROOT)))
    assert sorted(silent) == []


def test_no_docstring_names_a_module_that_is_not_there() -> None:
    """Docstrings named engine.py, runner.py and ledger.py long after those were renamed."""
    modules = {p.name for p in (ROOT / "kinspect").rglob("*.py")}
    named = re.compile(r"(?<![\w/.])(\w+\.py)\b")
    stale = []
    for path in (ROOT / "kinspect").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                continue
            for name in named.findall(ast.get_docstring(node) or ""):
                if name not in modules:
                    stale.append(f"{path.relative_to(ROOT)}: {name}")
    assert stale == []
