"""The post-mortem report inside the TUI: numbers, the explanation, the lanes, the timeline."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import DataTable, Label, Static

from kinspect.lab.faults import colour
from kinspect.tui.render import clock_text

if TYPE_CHECKING:
    from kinspect.postmortem.story.lanes import Lanes
    from kinspect.postmortem.story.values import Report

NUMBERS = (("sent", "sent"), ("acked", "acknowledged"), ("failed", "failed"),
           ("unknown", "unknown"), ("in_log", "in the final log"),
           ("acked_lost", "ACKNOWLEDGED BUT LOST"), ("unacked_present", "unacked but present"),
           ("duplicates", "duplicates"), ("reordered", "reordered"),
           ("other_runs_records", "other runs' records"))


def numbers_text(report: Report) -> Text:
    text = Text()
    for key, label in NUMBERS:
        value = getattr(report, key)
        text.append(f"{label:>22}  ", "dim")
        if value is None:  # an older report.json that did not count it: said, never shown as 0
            text.append("not recorded\n", "dim")
        elif key == "acked_lost" and value:
            text.append(f"{value:,}\n", "bold red")
        else:
            text.append(f"{value:,}\n", "")
    for key, label in (("unavailable_ms", "longest unavailability"),
                       ("first_ack_after_fault_ms", "first ack after fault")):
        value = getattr(report, key)
        text.append(f"{label:>22}  ", "dim").append("—\n" if value is None else f"{value:,} ms\n")
    return text


NAME_W = 10  # "broker 12 ", "acked/s   "
BARS = "▁▂▃▄▅▆▇█"
LED, LOST, TRUNC = "#3a7bd5", "#ff9f1c", "magenta"


class _Row:
    """One line of the text chart: a character and a style per column."""

    def __init__(self, width: int) -> None:
        self.chars, self.styles = [" "] * width, [""] * width

    def put(self, col: int, text: str, style: str | None = None) -> None:
        for i, ch in enumerate(text[:max(0, len(self.chars) - col)]):
            self.chars[col + i] = ch
            if style is not None:
                self.styles[col + i] = style

    def paint(self, start: int, end: int, style: str) -> None:
        for c in range(max(0, start), min(end, len(self.chars))):
            self.styles[c] = style

    def text(self, name: str) -> Text:
        out = Text()
        out.append(f"{name:<{NAME_W}}", "dim")
        for ch, style in zip(self.chars, self.styles, strict=True):
            out.append(ch, style)
        return out


def lanes_text(lanes: Lanes, width: int) -> Text:
    """The post-mortem chart in text, `width` columns wide: the fault bands with their names,
    a row per broker (full blocks: led; shaded: cut off but still acting as leader; a cross:
    truncated), acked/s and failed/s, the lost window, seconds from the fault."""
    plot = max(10, width - NAME_W)
    lines = _fault_rows(lanes, plot)
    lines += [_broker_row(lanes, broker, plot) for broker in lanes.brokers]
    lines += [_rate_row(lanes, "acked/s", lanes.acked, "green", plot),
              _rate_row(lanes, "failed/s", lanes.failed, "red", plot)]
    if lanes.lost:
        lines.append(_lost_row(lanes, plot))
    lines += [_axis(lanes, plot), _legend(lanes, NAME_W + plot)]
    return Text("\n").join(lines)


def _fault_rows(lanes: Lanes, plot: int) -> list[Text]:
    """The fault bands, packed into at most two rows; the first is named "faults"."""
    from kinspect.postmortem.story.lanes import pack

    col = lanes.column
    placed = pack([(col(b.start, plot), b.label, col(b.end, plot) + 1) for b in lanes.bands],
                  plot, rows=2, gap=1)
    rows = 1 + max((p.row for p in placed), default=-1)
    lines = []
    for row in range(rows):
        line = _Row(plot)
        for band, spot in zip(lanes.bands, placed, strict=True):
            if spot.row == row:
                line.paint(col(band.start, plot), col(band.end, plot) + 1,
                           f"on {colour(band.action)}")
                line.put(spot.col, spot.text)
        name = "faults" if row == 0 else ""
        lines.append(line.text(name))
    return lines


def _broker_row(lanes: Lanes, broker: int, plot: int) -> Text:
    """What `broker` led (full blocks; shaded while cut off) and where it truncated (✕)."""
    line = _Row(plot)
    for bar in lanes.bars:
        if bar.broker != broker:
            continue
        start = lanes.column(bar.start, plot)
        length = max(1, lanes.column(bar.end, plot) - start)
        block = "▒" if bar.believed else "█"
        line.put(start, block * length, LED)
    for mark in lanes.marks:
        if mark.broker == broker:
            line.put(lanes.column(mark.ts, plot), "✕", f"bold {TRUNC}")
    return line.text(f"broker {broker}")


def _rate_row(lanes: Lanes, name: str, values: list[int], style: str, plot: int) -> Text:
    line = _Row(plot)
    line.put(0, _spark(lanes, values, plot), style)
    return line.text(name)


def _lost_row(lanes: Lanes, plot: int) -> Text:
    """The acknowledged-then-lost windows, with their count where it fits: after the last,
    before the first, or centred over them; the long words first, then the short."""
    from kinspect.postmortem.story.lanes import fit

    col = lanes.column
    line = _Row(plot)
    for lost in lanes.lost:
        start = col(lost.start, plot)
        line.put(start, "━" * (col(lost.end, plot) + 1 - start), LOST)
    first, last = col(lanes.lost[0].start, plot), col(lanes.lost[-1].end, plot)
    count = f"{sum(lost.count for lost in lanes.lost):,}"
    candidates = []
    for words in (f"{count} acknowledged, then lost", f"{count} lost"):
        for at in (last + 2, first - 1 - len(words), (first + last - len(words)) // 2):
            candidates.append((at, words))
    said = fit([candidates], plot)[0]
    if said is not None:
        line.put(said.col, said.text, f"bold {LOST}")
    return line.text("lost")


def _spark(lanes: Lanes, values: list[int], plot: int) -> str:
    """The busiest second under each column, as a bar of eight heights (blank: none)."""
    top = [0] * plot
    for second, value in zip(lanes.seconds, values, strict=True):
        for c in range(lanes.column(second * 1000, plot), lanes.column(second * 1000 + 999, plot) + 1):
            top[c] = max(top[c], value)
    peak = max(top, default=0) or 1
    return "".join(BARS[min(7, v * 8 // peak)] if v else " " for v in top)


def _axis(lanes: Lanes, plot: int) -> Text:
    from kinspect.postmortem.story.lanes import fit, ticks

    marks = ticks(lanes.x(lanes.lo), lanes.x(lanes.hi), most=max(2, plot // 10))
    line = _Row(plot)
    for spot in fit([[(lanes.column(lanes.zero + t * 1000, plot), f"{t:+d} s" if t else "0")]
                     for t in marks], plot):
        if spot is not None:
            line.put(spot.col, spot.text, "dim")
    return line.text("")


def _legend(lanes: Lanes, width: int) -> Text:
    """What the marks mean, only those drawn and as many as fit, and the scale the sparklines
    leave out."""
    items: list[tuple[str, str, str]] = []
    if lanes.bars:
        items.append(("█", LED, " led"))
    if any(b.believed for b in lanes.bars):
        items.append(("▒", LED, " cut off, still leading"))
    if lanes.marks:
        items.append(("✕", f"bold {TRUNC}", " log truncated"))
    if lanes.acked:
        items.append(("", "", f"acked/s peaks at {max(lanes.acked):,}"))
    out = Text(" " * NAME_W)
    for sign, style, words in items:
        if len(out) + len(sign) + len(words) <= width:
            out.append(sign, style).append(words + "  ", "dim")
    out.rstrip()
    return out


class LanesChart(Widget):
    """The report's lanes, drawn again at the dialog's width."""

    DEFAULT_CSS = "LanesChart { height: auto; margin: 1 0; }"

    def __init__(self, report: Report) -> None:
        super().__init__()
        from kinspect.postmortem.story.lanes import build

        self.lanes = build([s.to_json() for s in report.per_second], list(report.timeline),
                           [a.to_json() for a in report.attribution])

    def render(self) -> Text:
        return lanes_text(self.lanes, self.content_size.width)

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        return len(lanes_text(self.lanes, width).split())


def _ts(entry: Mapping[str, object]) -> int:
    ts = entry.get("ts")
    return int(ts) if isinstance(ts, int | float) else 0


def timeline_cells(entry: Mapping[str, object]) -> tuple[str, ...]:
    """A report timeline entry (story/timeline.py report_entries) as the table's cells."""
    delta, sources = entry.get("delta_ms"), entry.get("sources")
    seen = [str(s) for s in sources] if isinstance(sources, list) and sources else \
        [str(entry.get("source", ""))]
    return (clock_text(_ts(entry)),
            f"{delta / 1000:+.1f} s" if isinstance(delta, int | float) else "",
            str(entry.get("kind", "")), str(entry.get("partition") or ""),
            str(entry.get("detail", ""))[:80], ", ".join(seen))


class ReportScreen(ModalScreen[None]):
    """Read-only view of report.json; the files themselves stay in the run dir."""

    BINDINGS = [Binding("escape,q", "dismiss(None)", "close")]
    # Enter on a timeline entry: the run's replay at that moment (kinspect/tui/replay_feed.py).

    def __init__(self, report: Report, out_dir: Path) -> None:
        super().__init__()
        self.report, self.out_dir = report, out_dir

    def compose(self) -> ComposeResult:
        report = self.report
        with VerticalScroll(classes="dialog wide report"):
            yield Label(Text(f"Post-mortem of run {report.run_id or '(no id)'}: "
                             f"{report.topic}, acks={report.acks or None}"
                             f"  ({report.engine})", "bold"))
            yield Static(numbers_text(report))
            yield Static(Text(report.explanation, "italic"))
            if report.per_second or report.timeline:
                yield LanesChart(report)
            table: DataTable[str] = DataTable(classes="timeline", cursor_type="row")
            table.add_columns("time", "Δ fault", "kind", "partition", "detail", "seen by")
            for i, entry in enumerate(report.timeline[:200]):
                table.add_row(*timeline_cells(entry), key=f"{i}:{_ts(entry)}")
            yield table
            yield Static(Text(f"report.md, report.json, timeline.png in {self.out_dir}; Enter on "
                              "an entry replays the run from there", "dim"))

    @on(DataTable.RowSelected, ".timeline")
    def replay_entry(self, event: DataTable.RowSelected) -> None:
        from kinspect.tui.replay_launch import open_replay

        run_dir = Path(self.report.run_dir or self.out_dir.parent)
        open_replay(self.app, run_dir, int(str(event.row_key.value).split(":")[1]))
