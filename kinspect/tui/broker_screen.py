"""One broker's view (`b` on the brokers panel): every replica it hosts, whether it leads or
follows, is in sync, sits on an offline log dir, how far behind the leader it is and how big,
sortable (`s`) and filtered (`/`, `u`) like the partition view, live with each snapshot.

The rows are drawn with the Line API, as the partition view's are: only the lines on screen
become Strips, so a broker hosting 10,000 replicas costs one pass per snapshot."""

from __future__ import annotations

from pathlib import PurePath
from typing import ClassVar

from rich.filesize import decimal
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Input, Static

from kinspect.model import ClusterSnapshot
from kinspect.model.brokers import SORTS, HostedReplica, Role, hosted_by, summary, view
from kinspect.tui.render import PAD_STYLE, sep

COLUMNS = (("partition", 24), ("role", 9), ("in ISR", 7), ("log end", 12), ("leader's", 12),
           ("behind", 9), ("size", 10), ("log dir", 20))  # the dir's name (JSON: its path)
GAP = "  "


UNTOLD = "?"  # a value the broker did not tell


def replica_cells(r: HostedReplica) -> list[Text]:
    """A replica's cells, in COLUMNS order (only the lines on screen are drawn)."""
    return [Text(r.name), _role_cell(r), _isr_cell(r), _offset_cell(r.log_end, ""),
            _offset_cell(r.leader_end, "dim"), _behind_cell(r.behind), _size_cell(r.size),
            _log_dir_cell(r.log_dir)]


def _untold() -> Text:
    return Text(UNTOLD, "dim")


def _role_cell(r: HostedReplica) -> Text:
    if r.role is Role.LEADER:
        return Text(r.role, "bold")
    return Text(r.role, "")


def _isr_cell(r: HostedReplica) -> Text:
    if r.offline:
        return Text("OFFLINE", "bold red")
    if r.in_isr:
        return Text("yes", "green")
    return Text("NO", "bold red")


def _offset_cell(offset: int | None, style: str) -> Text:
    if offset is None:
        return _untold()
    return Text(f"{offset:,}", style)


BEHIND_STYLES = {1: "bold yellow", -1: "bold red", 0: "dim"}  # by the sign: behind, ahead, level


def _behind_cell(behind: int | None) -> Text:
    if behind is None:
        return _untold()
    sign = (behind > 0) - (behind < 0)
    return Text(f"{behind:,}", BEHIND_STYLES[sign])


def _size_cell(size: int | None) -> Text:
    if size is None:
        return _untold()
    return Text(decimal(size))


def _log_dir_cell(log_dir: str | None) -> Text:
    if not log_dir:
        return _untold()
    return Text(PurePath(log_dir).name, "")


class ReplicaList(ScrollView, can_focus=True):
    """The broker's replicas, one line each under a header line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
        Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows: list[HostedReplica] = []
        self.cursor = 0
        self._strips: dict[tuple[int, bool], Strip] = {}

    def set_rows(self, rows: list[HostedReplica]) -> None:
        """New rows; the cursor stays on its replica while it is listed, else where it was."""
        keep = None
        if self.cursor < len(self.rows):
            keep = self.rows[self.cursor].name
        self.rows = rows
        names = [r.name for r in rows]
        if keep in names:
            self.cursor = names.index(keep)
        else:
            self.cursor = min(self.cursor, max(0, len(rows) - 1))
        self._strips.clear()
        self.virtual_size = Size(sum(w for _, w in COLUMNS) + len(GAP) * len(COLUMNS),
                                 len(rows) + 1)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width, base = self.size.width, self.rich_style
        if y == 0:
            header = self._line([Text(name, "bold") for name, _ in COLUMNS])
            return header.crop_extend(scroll_x, scroll_x + width, base)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, base)
        key = (index, index == self.cursor)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._line(replica_cells(self.rows[index]),
                                                   cursor=key[1])
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _line(self, cells: list[Text], cursor: bool = False) -> Strip:
        line = Text(style=self.rich_style)
        for cell, (_, width) in zip(cells, COLUMNS, strict=True):
            cell.truncate(width)
            line.append_text(cell).append(" " * (width - cell.cell_len) + GAP, PAD_STYLE)
        if cursor:
            line.append(" " * max(0, self.size.width - line.cell_len), PAD_STYLE)
            line.stylize(self._cursor_style())
        return Strip(line.render(self.app.console), line.cell_len)

    def _cursor_style(self) -> str:
        if self.has_focus:
            return "reverse"
        return "on #303030"

    def action_move(self, by: int) -> None:
        if not self.rows:
            return
        before, self.cursor = self.cursor, max(0, min(self.cursor + by, len(self.rows) - 1))
        self._strips.pop((before, True), None)
        self.refresh_line(before + 1)
        self.refresh_line(self.cursor + 1)
        top, page = round(self.scroll_offset.y), max(1, self.size.height - 1)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + page:
            self.scroll_to(y=self.cursor - page + 1, animate=False)

    def action_page(self, pages: int) -> None:
        self.action_move(pages * max(1, self.size.height - 1))


class BrokerScreen(Screen[None]):
    """A broker's replicas, kept up to date by the app (`show` with each snapshot)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,b", "close", "back"),
        Binding("s", "sort", "sort"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("u", "unhealthy", "unhealthy"),
    ]
    DEFAULT_CSS = """
    BrokerScreen #broker-summary { height: auto; padding: 0 1; }
    BrokerScreen ReplicaList { height: 1fr; }
    BrokerScreen #broker-filter { display: none; }
    BrokerScreen #broker-filter.visible { display: block; }
    """

    def __init__(self, broker: int, snapshot: ClusterSnapshot | None) -> None:
        super().__init__()
        self.broker, self.snapshot = broker, snapshot
        self.sort, self.text, self.unhealthy_only = "partition", "", False
        self.replicas: tuple[HostedReplica, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static(id="broker-summary")
        yield ReplicaList(id="broker-replicas")
        yield Input(placeholder="filter by topic or topic-N; Enter keeps, Esc clears",
                    id="broker-filter")
        yield Footer()

    def on_mount(self) -> None:
        self.show(self.snapshot)
        self.query_one(ReplicaList).focus()

    def show(self, snapshot: ClusterSnapshot | None) -> None:
        """A new snapshot: the replicas again, the same sort, filter and cursor."""
        self.snapshot = snapshot
        self.replicas = ()
        if snapshot is not None:
            self.replicas = hosted_by(snapshot, self.broker)
        self._refresh_rows()

    def _refresh_rows(self) -> None:
        rows = view(self.replicas, self.sort, self.text, self.unhealthy_only)
        self.query_one(ReplicaList).set_rows(rows)
        self.query_one("#broker-summary", Static).update(self._summary(len(rows)))

    def _summary(self, shown: int) -> Text:
        load = summary(self.replicas)
        text = Text().append(f"broker {self.broker}", "bold")
        sep(text, "·").append(f"hosts {load.hosted:,}")
        sep(text, "·").append(f"leads {load.leads:,}")
        sep(text, "·").append(f"follows {load.hosted - load.leads:,}")
        for count, words in ((load.out_of_isr, "not in ISR"), (load.offline, "offline"),
                             (load.behind, "behind the leader")):
            style = "dim"
            if count:
                style = "bold red"
            sep(text, "·").append(f"{count:,} {words}", style)
        size = "size not told"
        if load.size is not None:
            size = f"{decimal(load.size)} on disk"
        sep(text, "·").append(size)
        text.append("\n").append(f"sorted by {self.sort}", "dim")
        filtered = self._filtered()
        if filtered:
            sep(text, "·").append(f"showing {shown:,}{filtered}", "dim")
        sep(text, "·").append("s sort · / filter · u unhealthy · Esc back", "dim")
        return text

    def _filtered(self) -> str:
        """What the list is filtered by, as the summary says it ("" when not)."""
        words = ""
        if self.text:
            words += f" matching '{self.text}'"
        if self.unhealthy_only:
            words += " unhealthy or behind"
        return words

    def action_close(self) -> None:
        box = self.query_one("#broker-filter", Input)
        if box.has_class("visible"):
            box.value, self.text = "", ""
            box.remove_class("visible")
            self._refresh_rows()
            self.query_one(ReplicaList).focus()
            return
        self.dismiss(None)

    def action_sort(self) -> None:
        keys = list(SORTS)
        self.sort = keys[(keys.index(self.sort) + 1) % len(keys)]
        self._refresh_rows()

    def action_unhealthy(self) -> None:
        self.unhealthy_only = not self.unhealthy_only
        self._refresh_rows()

    def action_filter(self) -> None:
        box = self.query_one("#broker-filter", Input)
        box.add_class("visible")
        box.focus()

    @on(Input.Changed, "#broker-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.text = event.value.strip()
        self._refresh_rows()

    @on(Input.Submitted, "#broker-filter")
    def filter_kept(self) -> None:
        self.query_one(ReplicaList).focus()
