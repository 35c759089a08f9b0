"""The performance pages' tables and charts are drawn from docs/performance/figures.toml, the one
place for the benches' figures: this regenerates them in a temporary directory and fails when a
committed page or chart differs (`pytest --update-goldens` rewrites them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parents[2] / "docs" / "performance"


def _charts() -> ModuleType:
    """docs/performance/charts.py, a script beside the pages it fills (not a package)."""
    spec = importlib.util.spec_from_file_location("performance_charts", HERE / "charts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_pages_and_charts_are_current(tmp_path: Path, update_goldens: bool) -> None:
    charts = _charts()
    rendered = charts.render(charts.load())
    for name, text in rendered.items():
        (tmp_path / name).write_text(text)
    if update_goldens:
        for name, text in rendered.items():
            (HERE / name).write_text(text)
    stale = [name for name in rendered if (tmp_path / name).read_text() != _read(HERE / name)]
    assert stale == [], "stale: run `.venv/bin/python docs/performance/charts.py`"
    drawn = {p.name for p in HERE.glob("*.svg")}
    assert drawn == {name for name in rendered if name.endswith(".svg")}, "an SVG no chart draws"


def test_drawing_is_deterministic() -> None:
    charts = _charts()
    figures = charts.load()
    chart = figures.charts[0]
    assert charts.draw(chart, figures.table(chart.table)) == charts.draw(chart, figures.table(chart.table))


def test_every_chart_shown_and_every_table_marked() -> None:
    charts = _charts()
    figures = charts.load()
    pages = "".join((HERE / f"{page}.md").read_text() for page in charts.PAGES)
    assert {f"({c.id}.svg)" for c in figures.charts if f"({c.id}.svg)" not in pages} == set()
    assert all(pages.count(f"<!-- table: {t.id} -->") == 1 for t in figures.tables)


@pytest.mark.parametrize(("cell", "value"), [("**1.30 s** (0.92-1.57)", 1.3), ("1,019", 1019.0),
                                             ("4.2x, 5.0x", 4.2), ("+0.59 s", 0.59)])
def test_a_cell_says_its_first_number(cell: str, value: float) -> None:
    assert _charts().number(cell) == value


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
