"""timeline.png in lanes, as Jepsen's plots do: faults, who led, acked/failed per second.

What goes where is decided in kinspect/postmortem/story/lanes.py (shared with the TUI); this only
draws it. `python -m kinspect.postmortem.story.chart RUN_DIR [PNG]` draws it again from a run dir
whose post-mortem ran, without Spark (the per-second series is in report.json).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, no GUI toolkit: this runs in terminals and CI
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from kinspect.lab.faults import colour
from kinspect.model.events import TimelineEvent
from kinspect.postmortem.story.lanes import (
    AttributionRow,
    Band,
    Bar,
    Lanes,
    Mark,
    Placed,
    SecondRow,
    build,
    fit,
    pack,
)

WIDTH_IN, DPI = 10.5, 100  # 1050 px: the width of a docs page
FONT = 10.0
SMALL = FONT - 1  # the words inside the leaders lane
ACKED, FAILED, LED, LOST, TRUNC = "#2ca02c", "#d62728", "#1f77b4", "#ff9f1c", "#7b1fa2"
LABEL_ROWS = 3
LEFT, RIGHT = 0.09, 0.985  # the lanes' edges, as fractions of the width


def draw(per_second: Sequence[SecondRow], events: Sequence[TimelineEvent | Mapping[str, object]],
         attribution: Sequence[AttributionRow], path: Path, title: str) -> None:
    """timeline.png of merged events (or a report's timeline entries) and report rows."""
    fig = figure(build(per_second, events, attribution), title)
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)


def figure(lanes: Lanes, title: str) -> Figure:
    """The whole picture; the caller saves and closes it."""
    rows = _label_rows(lanes)
    heights = [0.25 * rows + 0.1, 0.34 * max(1, len(lanes.brokers)) + 0.1, 2.3]  # inches
    top, gap, bottom = 0.45, 0.14, 1.2
    total = top + sum(heights) + 2 * gap + bottom
    fig = plt.figure(figsize=(WIDTH_IN, total), dpi=DPI)
    axes: list[Axes] = []
    y = total - top
    for height in heights:
        y -= height
        axes.append(fig.add_axes((LEFT, y / total, RIGHT - LEFT, height / total),
                                 sharex=axes[0] if axes else None))
        y -= gap
    faults_ax, leaders_ax, acks_ax = axes
    fig.suptitle(title, fontsize=FONT + 2, y=1 - 0.1 / total, va="top")
    for ax in (leaders_ax, acks_ax):
        _shade_faults(ax, lanes)
    for ax in (faults_ax, leaders_ax, acks_ax):
        ax.tick_params(labelsize=FONT)
    _faults(faults_ax, lanes, rows)
    _leaders(leaders_ax, lanes)
    _acks(acks_ax, lanes)
    acks_ax.set_xlim(lanes.x(lanes.lo), lanes.x(lanes.hi))
    acks_ax.set_xlabel(_x_label(lanes), fontsize=FONT)
    for ax in (faults_ax, leaders_ax):
        ax.tick_params(labelbottom=False, bottom=False)
    fig.legend(handles=_legend(lanes), loc="lower center", ncol=4, fontsize=FONT - 0.5,
               frameon=False, bbox_to_anchor=(0.5, 0.02 / total))
    return fig


def _columns(font: float) -> int:
    """How many characters of this size the lanes are wide (0.6 em: DejaVu Sans's widest
    average, measured on these labels, is 0.58)."""
    return int(WIDTH_IN * DPI * (RIGHT - LEFT) / (font * DPI / 72 * 0.6))


def _label_rows(lanes: Lanes) -> int:
    return 1 + max((p.row for p in _fault_rows(lanes)), default=0)


def _fault_rows(lanes: Lanes) -> list[Placed]:
    """Each band's row and label in the faults lane (lanes.pack: labels never overlap)."""
    width = _columns(FONT)
    return pack([(lanes.column(b.start, width) + 1, b.label, lanes.column(b.end, width))
                 for b in lanes.bands], width, rows=LABEL_ROWS)


def _at(lanes: Lanes, col: float, font: float) -> float:
    """A column of characters of this size back to the x axis (seconds from the fault)."""
    return lanes.x(lanes.lo + col * (lanes.hi - lanes.lo) / _columns(font))


def _shade_faults(ax: Axes, lanes: Lanes) -> None:
    for band in lanes.bands:
        ax.axvspan(lanes.x(band.start), lanes.x(band.end), color=_color(band), lw=0, alpha=0.07)


def _color(band: Band) -> str:
    return colour(band.action)


def _faults(ax: Axes, lanes: Lanes, rows: int) -> None:
    ax.set_ylim(rows, 0)
    ax.set_yticks([])
    ax.set_ylabel("faults", rotation=0, ha="right", va="center", fontsize=FONT)
    for band, p in zip(lanes.bands, _fault_rows(lanes), strict=True):
        ax.axvspan(lanes.x(band.start), lanes.x(band.end), ymin=1 - (p.row + 0.92) / rows,
                   ymax=1 - (p.row + 0.08) / rows, color=_color(band), alpha=0.35, lw=0)
        if p.text:
            ax.text(_at(lanes, p.col, FONT), p.row + 0.5, p.text, fontsize=FONT, va="center",
                    ha="left")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _leaders(ax: Axes, lanes: Lanes) -> None:
    index = {b: i for i, b in enumerate(lanes.brokers)}
    ax.set_ylim(max(1, len(lanes.brokers)) - 0.5, -0.5)
    ax.set_yticks(range(len(lanes.brokers)), [f"broker {b}" for b in lanes.brokers])
    if not lanes.brokers:
        ax.text(0.5, 0.5, "no leader changes in the events", transform=ax.transAxes,
                ha="center", va="center", fontsize=FONT - 1, color="grey")
    for bar in lanes.bars:
        y, x0, x1 = index[bar.broker], lanes.x(bar.start), lanes.x(bar.end)
        if bar.believed:
            ax.barh(y, x1 - x0, left=x0, height=0.62, color="white", edgecolor=LED, hatch="////",
                    lw=0.8)
        else:
            ax.barh(y, x1 - x0, left=x0, height=0.62, color=LED, lw=0)
    for broker in lanes.brokers:
        marks = [m for m in lanes.marks if m.broker == broker]
        ax.scatter([lanes.x(m.ts) for m in marks], [index[broker]] * len(marks), marker="X",
                   s=60, color=TRUNC, zorder=5, edgecolor="white", lw=0.6)
        for p, what in _row_labels(lanes, broker):
            colour, box = _label_look(what)
            ax.text(_at(lanes, p.col, SMALL), index[broker], p.text, fontsize=SMALL, va="center",
                    ha="left", zorder=6, color=colour, bbox=box)
    ax.grid(axis="x", alpha=0.3)


def _label_look(what: Bar | Mark) -> tuple[str, dict[str, object] | None]:
    """A broker row's label colour and box: a truncation's and a cut-off leader's stand out on
    a white box; an ordinary bar's is white on the bar."""
    box: dict[str, object] = {"facecolor": "white", "lw": 0, "pad": 0.8}
    if isinstance(what, Mark):
        return TRUNC, box
    if what.believed:
        return LED, box
    return "white", None


def _row_labels(lanes: Lanes, broker: int) -> list[tuple[Placed, Bar | Mark]]:
    """A broker row's words, never over each other or a mark: the truncations first (right of
    their mark, else left), then each bar's, centred, shorter when the long one does not fit."""
    width = _columns(SMALL)
    marks = [m for m in lanes.marks if m.broker == broker]
    bars = [b for b in lanes.bars if b.broker == broker]
    taken = [(lanes.column(m.ts, width) - 1, lanes.column(m.ts, width) + 2) for m in marks]
    wanted: list[list[tuple[int, str]]] = []
    for m in marks:
        at = lanes.column(m.ts, width)
        wanted.append([(at + 3, m.label), (at - 2 - len(m.label), m.label)])
    several = len({b.partition for b in lanes.bars}) > 1
    for bar in bars:
        a, b = lanes.column(bar.start, width), lanes.column(bar.end, width)
        wanted.append([(col, t) for t in _bar_texts(bar, several) if len(t) + 2 <= b - a
                       for col in ((a + b - len(t)) // 2, a + 2)])
    owners: list[Bar | Mark] = [*marks, *bars]
    return [(p, what) for p, what in zip(fit(wanted, width, taken), owners, strict=True)
            if p is not None]


def _bar_texts(bar: Bar, several: bool) -> list[str]:
    """What a bar says, longest first."""
    who = f"p{bar.partition} " if several else ""
    if bar.believed:
        return [f"{who}still acting as leader", f"{who}cut off"]
    if bar.epoch is None:
        return [who.strip()] if who else []
    return [f"{who}epoch {bar.epoch}", f"{who}e{bar.epoch}"]


def _acks(ax: Axes, lanes: Lanes) -> None:
    xs = [lanes.x(s * 1000) for s in lanes.seconds]
    least = (lanes.hi - lanes.lo) / 250  # a few lost in one moment still show
    for lost in lanes.lost:
        ax.axvspan(lanes.x(lost.start), lanes.x(max(lost.end, lost.start + least)), color=LOST,
                   alpha=0.35, lw=0)
    ax.step(xs, lanes.acked, where="post", color=ACKED, lw=1.4)
    ax.step(xs, lanes.failed, where="post", color=FAILED, lw=1.4)
    ax.set_ylabel("messages / s", fontsize=FONT)
    ax.set_ylim(bottom=0, top=max([*lanes.acked, *lanes.failed, 1]) * 1.12)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
    ax.grid(alpha=0.3)


def _x_label(lanes: Lanes) -> str:
    clock = time.strftime("%H:%M:%S", time.localtime(lanes.zero / 1000))
    return f"seconds from {lanes.origin} ({clock})"


def _legend(lanes: Lanes) -> list[Any]:
    handles: list[Any] = [Line2D([], [], color=ACKED, lw=1.6, label="acknowledged / s"),
                          Line2D([], [], color=FAILED, lw=1.6, label="failed / s")]
    for action in sorted({b.action for b in lanes.bands}, key=str):
        handles.append(Patch(color=colour(action), alpha=0.4, lw=0,
                             label=f"fault: {action}"))
    if any(not b.believed for b in lanes.bars):
        handles.append(Patch(color=LED, label="led (the controller's choice)"))
    if any(b.believed for b in lanes.bars):
        handles.append(Patch(facecolor="white", edgecolor=LED, hatch="////",
                             label="cut off, still acting as leader"))
    if lanes.marks:
        handles.append(Line2D([], [], color=TRUNC, marker="X", ls="", markersize=8,
                              label="log truncated"))
    if lanes.lost:
        total = sum(lost.count for lost in lanes.lost)
        handles.append(Patch(color=LOST, alpha=0.45, lw=0,
                             label=f"acknowledged, then lost ({total:,})"))
    return handles


def redraw(run_dir: Path, png: Path | None = None) -> Path:
    """timeline.png again from a run dir's post-mortem: the events as the job merged them, the
    series and attribution from its report.json."""
    from kinspect.postmortem.evidence.brokerlogs import read_broker_logs
    from kinspect.postmortem.evidence.inputs import evidence_window, load_inputs
    from kinspect.postmortem.story import timeline as tl

    report = json.loads((run_dir / "postmortem" / "report.json").read_text())
    inputs = load_inputs(run_dir)
    start, end = evidence_window(inputs, tl.BEFORE_MS, tl.AFTER_MS)
    lines = [e for e in read_broker_logs(inputs.broker_logs, inputs.topic)
             if (start is None or e.ts >= start) and (end is None or e.ts <= end)]
    events = tl.merge(inputs.timeline, inputs.faults, lines, inputs.topic, start, end)
    png = png or run_dir / "postmortem" / "timeline.png"
    draw(report.get("per_second") or [], events, report.get("attribution") or [], png,
         title(report))
    return png


def title(report: Mapping[str, object]) -> str:
    return f"{report.get('topic')}, acks={report.get('acks')}: faults, leaders, acknowledgements"


def main(argv: Sequence[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: python -m kinspect.postmortem.story.chart RUN_DIR [PNG]", file=sys.stderr)
        return 2
    from kinspect.errors import KinspectError

    try:
        print(redraw(Path(argv[0]), Path(argv[1]) if len(argv) > 1 else None))
    except FileNotFoundError as exc:
        print(f"{exc.filename}: not found (run `kinspect postmortem {argv[0]}` first)",
              file=sys.stderr)
        return 1
    except KinspectError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
