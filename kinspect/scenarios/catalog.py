"""The built-in scenarios (one TOML file each) and lookup by name or by path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kinspect.errors import KinspectError
from kinspect.scenarios.spec import Scenario, read

CATALOG_DIR = Path(__file__).parent / "catalog"
T = TypeVar("T")


def builtin() -> list[Scenario]:
    """Every built-in scenario, in the order of the source material's table, then the rest."""
    scenarios = [read(path) for path in sorted(CATALOG_DIR.glob("*.toml"))]
    return scenarios


def find(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a user's TOML file by path."""
    return find_in(name_or_path, read, builtin, lambda s: s.name,
                   "scenario", "kinspect scenario list")


def find_in(name_or_path: str, read_file: Callable[[Path], T], known: Callable[[], list[T]],
            name_of: Callable[[T], str], what: str, listing: str) -> T:
    """A catalogue's entry by name, or a file by path (ending .toml, or holding a slash): the
    scenarios' and the lessons' catalogues are looked up alike."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        return read_file(Path(name_or_path))
    for entry in known():
        if name_of(entry) == name_or_path:
            return entry
    raise KinspectError(f"unknown {what} {name_or_path!r} (see: {listing})")
