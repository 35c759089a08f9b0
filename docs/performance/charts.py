"""The performance pages' tables and charts, from figures.toml (the one place for the figures).

    .venv/bin/python docs/performance/charts.py

writes each table into its page, between `<!-- table: ID -->` and `<!-- /table -->`, and draws
each chart as docs/performance/ID.svg. The output is deterministic (a fixed SVG hash salt, no
date in the metadata, text kept as text), so tests/docs/test_performance_charts.py can tell a
stale page or chart from a current one."""

from __future__ import annotations

import io
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.axes import Axes

HERE = Path(__file__).resolve().parent
FIGURES = HERE / "figures.toml"
PAGES = ("index", "history")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
COLOURS = ("#e8590c", "#4c6ef5", "#868e96")  # kinspect first (the site's deep orange), then peers


@dataclass(frozen=True)
class Table:
    """One table of figures, shown on one page."""

    id: str
    page: str
    columns: tuple[str, ...]
    align: str
    rows: tuple[tuple[str, ...], ...]

    def markdown(self) -> str:
        rule = {"l": "---", "r": "---:"}
        lines = [_row(self.columns), "|" + "|".join(rule[a] for a in self.align) + "|"]
        lines += [_row(row) for row in self.rows]
        return "\n".join(lines)


@dataclass(frozen=True)
class Chart:
    """A chart of some columns of a table: one group of bars (or one point) per row."""

    id: str
    table: str
    title: str
    label: int
    series: tuple[int, ...]
    names: tuple[str, ...]
    kind: str
    unit: str
    log: bool
    rows: tuple[int, ...] | None
    labels: tuple[str, ...] | None
    aim: float | None


@dataclass(frozen=True)
class Figures:
    tables: tuple[Table, ...]
    charts: tuple[Chart, ...]

    def table(self, id_: str) -> Table:
        return next(t for t in self.tables if t.id == id_)


def _row(cells: tuple[str, ...]) -> str:
    """A markdown table row; an empty cell is `| |`."""
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def said(cell: str) -> str:
    """The first number a cell says, as it says it: "**1.30 s** (0.92-1.57)" says "1.30"."""
    found = NUMBER.search(cell)
    if found is None:
        raise ValueError(f"no number in the cell {cell!r}")
    return found.group(0)


def number(cell: str) -> float:
    """The first number a cell says: "**1.30 s** (0.92-1.57)" is 1.3, "1,019" is 1019."""
    return float(said(cell).replace(",", ""))


def load(path: Path = FIGURES) -> Figures:
    data = tomllib.loads(path.read_text())
    tables = tuple(_table(t) for t in data["table"])
    charts = tuple(_chart(c) for c in data["chart"])
    figures = Figures(tables, charts)
    for chart in charts:
        figures.table(chart.table)  # raises StopIteration for a chart of no table
    return figures


def _table(t: dict[str, object]) -> Table:
    columns = tuple(str(c) for c in t["columns"])  # type: ignore[attr-defined]
    rows = tuple(tuple(str(c) for c in row) for row in t["rows"])  # type: ignore[attr-defined]
    align = str(t["align"])
    if t["page"] not in PAGES:
        raise ValueError(f"table {t['id']}: page must be one of {PAGES}")
    if len(align) != len(columns) or any(len(row) != len(columns) for row in rows):
        raise ValueError(f"table {t['id']}: every row and the align need one cell a column")
    return Table(str(t["id"]), str(t["page"]), columns, align, rows)


def _chart(c: dict[str, object]) -> Chart:
    rows = c.get("rows")
    labels = c.get("labels")
    aim = c.get("aim")
    return Chart(
        id=str(c["id"]), table=str(c["table"]), title=str(c["title"]), label=int(c["label"]),  # type: ignore[call-overload]
        series=tuple(c["series"]), names=tuple(c["names"]),  # type: ignore[arg-type]
        kind=str(c["kind"]), unit=str(c["unit"]), log=bool(c.get("log", False)),
        rows=None if rows is None else tuple(rows),  # type: ignore[arg-type]
        labels=None if labels is None else tuple(labels),  # type: ignore[arg-type]
        aim=None if aim is None else float(aim),  # type: ignore[arg-type]
    )


def fill(page: str, tables: tuple[Table, ...]) -> str:
    """The page with each table's markdown between its markers (every marker must have a table)."""
    for table in tables:
        pattern = re.compile(rf"(<!-- table: {re.escape(table.id)} -->\n).*?(<!-- /table -->)", re.S)
        body = table.markdown().replace("\\", "\\\\")
        page, found = pattern.subn(rf"\g<1>{body}\n\g<2>", page)
        if found != 1:
            raise ValueError(f"table {table.id}: its page needs one <!-- table: {table.id} --> marker")
    return page


def draw(chart: Chart, table: Table) -> str:
    """The chart as SVG text."""
    plt.rcdefaults()
    plt.rcParams.update({"svg.hashsalt": "kinspect", "svg.fonttype": "none", "font.size": 10,
                         "font.family": "DejaVu Sans"})
    picked = [table.rows[i] for i in chart.rows] if chart.rows is not None else list(table.rows)
    labels = list(chart.labels) if chart.labels is not None else [row[chart.label] for row in picked]
    figure, axes = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
    figure.patch.set_facecolor("#ffffff")
    if chart.kind == "bar":
        _bars(axes, chart, picked, labels)
    else:
        _lines(axes, chart, picked, labels)
    if chart.aim is not None:
        axes.axhline(chart.aim, color="#2f9e44", linestyle="--", linewidth=1)
        axes.annotate(f"aim {chart.aim:g} {chart.unit}", (0, chart.aim), xycoords=("axes fraction", "data"),
                      xytext=(4, 3), textcoords="offset points", color="#2f9e44", fontsize=9)
    if chart.log:
        axes.set_yscale("log")
    else:
        axes.yaxis.set_major_formatter(ticker.StrMethodFormatter("{x:,g}"))
    axes.set_ylabel(chart.unit)
    axes.set_title(chart.title, fontsize=11)
    axes.spines[["top", "right"]].set_visible(False)
    axes.legend(frameon=False, fontsize=9)
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    return out.getvalue()


def _bars(axes: Axes, chart: Chart, rows: list[tuple[str, ...]], labels: list[str]) -> None:
    width = 0.8 / len(chart.series)
    for n, (column, name) in enumerate(zip(chart.series, chart.names, strict=True)):
        values = [number(row[column]) for row in rows]
        xs = [i + (n - (len(chart.series) - 1) / 2) * width for i in range(len(rows))]
        bars = axes.bar(xs, values, width * 0.92, label=name, color=COLOURS[n % len(COLOURS)])
        axes.bar_label(bars, labels=[said(row[column]) for row in rows], fontsize=8, padding=2)
    axes.set_xticks(range(len(rows)), labels)
    axes.margins(y=0.15)


def _lines(axes: Axes, chart: Chart, rows: list[tuple[str, ...]], labels: list[str]) -> None:
    for n, (column, name) in enumerate(zip(chart.series, chart.names, strict=True)):
        points = [(i, number(row[column])) for i, row in enumerate(rows) if row[column]]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        axes.plot(xs, ys, marker="o", label=name, color=COLOURS[n % len(COLOURS)])
        for x, y in points:
            others = [number(rows[x][c]) for c in chart.series if c != column and rows[x][c]]
            above = all(y >= other for other in others)  # the lower point's label goes under it
            axes.annotate(said(rows[x][column]), (x, y), xytext=(0, 6 if above else -13),
                          textcoords="offset points", ha="center", fontsize=8)
    axes.set_xticks(range(len(rows)), labels)
    axes.set_ylim(bottom=0)
    axes.margins(y=0.2)


def render(figures: Figures, pages_from: Path = HERE) -> dict[str, str]:
    """Every file this script writes, by name: the two pages and one SVG per chart."""
    out = {}
    for page in PAGES:
        text = (pages_from / f"{page}.md").read_text()
        out[f"{page}.md"] = fill(text, tuple(t for t in figures.tables if t.page == page))
    for chart in figures.charts:
        out[f"{chart.id}.svg"] = draw(chart, figures.table(chart.table))
    return out


def main() -> int:
    for name, text in render(load()).items():
        path = HERE / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
