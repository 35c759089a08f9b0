"""The built-in scenarios (one TOML file each) and lookup by name or by path."""

from __future__ import annotations

from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.scenarios.spec import Scenario, read

CATALOG_DIR = Path(__file__).parent / "catalog"


def builtin() -> list[Scenario]:
    """Every built-in scenario, in the order of the source material's table, then the rest."""
    scenarios = [read(path) for path in sorted(CATALOG_DIR.glob("*.toml"))]
    return scenarios


def find(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a user's TOML file by path."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        return read(Path(name_or_path))
    known = builtin()
    for scenario in known:
        if scenario.name == name_or_path:
            return scenario
    raise KinspectError(f"unknown scenario {name_or_path!r} (see: kinspect scenario list)")
