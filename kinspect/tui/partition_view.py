"""The partition view: topic rows that open and close, and their partitions, line-rendered.

A DataTable holds a row object per partition, drops its whole render cache on any change and
removes rows in O(n): a 2,000-partition failover stalled the event loop for 1.3 s. This view
keeps the snapshot's rows as a plain list (partition_rows.PartitionTable) and turns into Strips only
the rows on screen, when Textual asks for them (the Line API), caching those until the next
snapshot. A new snapshot is one pass over its partitions, whatever their number.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import ClassVar, Protocol

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.events import Click
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kinspect.model import ClusterSnapshot, PartitionInfo
from kinspect.tui.partition_cells import PARTITION_COLUMNS, RIGHT_ALIGNED, partition_cells
from kinspect.tui.partition_rows import (
    MARK_LIMIT,
    Change,
    PartitionTable,
    Prepared,
    Row,
    RowKey,
    TopicSummary,
    row_key,
)
from kinspect.tui.render import PAD_STYLE, topic_summary_text

MARK_FOR_S = 3.0
MARK_STYLE = Style.parse("on #6b4e00")
GAP = "  "
INDENT = "  "  # partition rows sit under their topic's ▾


class PartitionPanel(Protocol):
    """What the app asks of a partition view (bench/ puts the old DataTable behind it)."""

    filter_text: str
    unhealthy_only: bool

    def show(self, snapshot: ClusterSnapshot, mark: bool = True,
             prepared: Prepared | None = None) -> int: ...

    def refilter(self) -> None: ...

    def pin(self, topics: Collection[str]) -> None: ...


def _same(a: Text, b: Text) -> bool:
    return a.plain == b.plain and a.spans == b.spans and a.style == b.style


class PartitionView(ScrollView, can_focus=True):
    """Partitions grouped by topic, changed cells marked for a few seconds."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", show=False),
        Binding("down", "cursor_down", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
        Binding("home", "first", show=False),
        Binding("end", "last", show=False),
        Binding("enter", "toggle_topic", "open/close topic"),
        Binding("a", "toggle_all", "all topics"),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "partition-view--header", "partition-view--cursor", "partition-view--topic"}
    DEFAULT_CSS = """
    PartitionView > .partition-view--header { text-style: bold; }
    PartitionView > .partition-view--topic { background: $boost; }
    PartitionView > .partition-view--cursor { background: $primary 60%; }
    PartitionView:focus > .partition-view--cursor { background: $accent; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.filter_text = ""
        self.unhealthy_only = False
        self.pinned: tuple[str, ...] = ()
        self.cursor = 0
        self._snapshot: ClusterSnapshot | None = None
        self._model: PartitionTable | None = None
        self._rows: list[Row] = []
        self._opened: dict[str, bool] = {}  # topics the user opened or closed
        self._widths = {c: len(c) for c in PARTITION_COLUMNS}
        self._marks: dict[RowKey, tuple[float, frozenset[str]]] = {}
        self._strips: LRUCache[tuple[int, bool], Strip] = LRUCache(1024)
        self._widen_pending = False

    def on_mount(self) -> None:
        self.set_interval(0.5, self._expire_marks)

    # ----- data ------------------------------------------------------------------------

    def show(self, snapshot: ClusterSnapshot, mark: bool = True,
             prepared: Prepared | None = None) -> int:
        """Take a new snapshot; returns how many partitions changed (counted up to the mark
        limit: past it a failover is under way and marking everything would say nothing).
        `prepared`: its model and changes, made in the feed's thread (sorted with the pins of
        then: with others the model is made again here)."""
        if prepared is not None and prepared.pinned == self.pinned:
            model, changes = prepared.model, prepared.changes
        else:
            model = PartitionTable.of(snapshot, self.pinned)
            changes = tuple(model.changed(self._model, MARK_LIMIT)) if self._model else ()
        changed = self._mark(changes) if mark and self._model else 0
        unchanged = model is self._model  # an idle cluster's poll: no repaint (and no garbage)
        self._snapshot, self._model = snapshot, model
        if not unchanged:
            self._rebuild()
        return changed

    @property
    def kraft(self) -> bool:
        """KRaft names a zombie leader differently (no ZooKeeper to disagree with)."""
        return self._snapshot is not None and self._snapshot.kraft

    def refilter(self) -> None:
        self._rebuild()

    def pin(self, topics: Collection[str]) -> None:
        """Show these topics first (a load runs on them)."""
        pinned = tuple(sorted(topics))
        if pinned != self.pinned:
            self.pinned = pinned
            if self._snapshot is not None:
                self.show(self._snapshot, mark=False)

    def _mark(self, changed: Sequence[Change]) -> int:
        if len(changed) > MARK_LIMIT:
            return len(changed)
        until = time.monotonic() + MARK_FOR_S
        for q, p in changed:
            was, now = partition_cells(q, self.kraft), partition_cells(p, self.kraft)
            columns = frozenset(c for c in PARTITION_COLUMNS if not _same(was[c], now[c]))
            key = (p.topic, p.partition)
            if columns:
                self._marks[key] = (until, columns | self._marks.get(key, (0.0, frozenset()))[1])
        return len(changed)

    def _is_open(self, summary: TopicSummary, filtered: bool) -> bool:
        """Internal topics start closed (50 __consumer_offsets rows bury the rest); a filter
        opens what it matched, unless the user closed it."""
        return self._opened.get(summary.topic, filtered or not summary.internal)

    def _rebuild(self) -> None:
        if self._model is None:
            return
        keep = row_key(self._rows[self.cursor]) if self.cursor < len(self._rows) else None
        self._rows = self._model.rows(self._is_open, self.filter_text, self.unhealthy_only)
        self.cursor = self._find(keep) if keep else 0
        # The topic column fits the open topics' names; a closed topic's row runs over it.
        opened = (len(s.topic) for s, _ in self._model.topics if self._is_open(s, False))
        self._widths["topic"] = max(self._widths["topic"], max(opened, default=0) + len(INDENT))
        self._strips.clear()
        self._resize()
        self.refresh()

    def _find(self, key: RowKey) -> int:
        """The row with this key now, else its topic's row, else as close as it was."""
        rows, cursor = self._rows, min(self.cursor, max(0, len(self._rows) - 1))
        if rows and row_key(rows[cursor]) == key:
            return cursor
        topic_row = None
        for i, row in enumerate(rows):
            found = row_key(row)
            if found == key:
                return i
            if found == (key[0], -1):
                topic_row = i
        return topic_row if topic_row is not None else cursor

    def _resize(self) -> None:
        width = sum(self._widths.values()) + len(GAP) * len(PARTITION_COLUMNS)
        self.virtual_size = Size(width, len(self._rows) + 1)

    def _expire_marks(self) -> None:
        now = time.monotonic()
        gone = [k for k, (until, _) in self._marks.items() if until <= now]
        for key in gone:
            del self._marks[key]
        if gone:
            self._strips.clear()
            self.refresh()

    # ----- what the app and tests read --------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def selected(self) -> Row | None:
        return self._rows[self.cursor] if self.cursor < len(self._rows) else None

    def cell(self, topic: str, partition: int, column: str) -> str:
        """The text a partition's cell shows ('' when it is not in the snapshot)."""
        p = self._model.partition(topic, partition) if self._model else None
        return partition_cells(p, self.kraft)[column].plain if p else ""

    # ----- drawing ----------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if y == 0:
            return self._header().crop_extend(scroll_x, scroll_x + width, base)
        index = scroll_y + y - 1
        if index >= len(self._rows):
            return Strip.blank(width, base)
        on_cursor = index == self.cursor
        strip = self._strips.get((index, on_cursor))
        if strip is None:
            strip = self._row_strip(self._rows[index], on_cursor)
            self._strips[(index, on_cursor)] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _header(self) -> Strip:
        line = Text(style=self.rich_style)
        for column in PARTITION_COLUMNS:
            label, width = column, self._widths[column]
            pad = " " * (width - len(label))
            if column in RIGHT_ALIGNED:
                line.append(pad, PAD_STYLE).append(label)
            else:
                line.append(label).append(pad, PAD_STYLE)
            line.append(GAP, PAD_STYLE)
        line.stylize(self.get_component_rich_style("partition-view--header"))
        return Strip(line.render(self.app.console), line.cell_len)

    def _row_strip(self, row: Row, on_cursor: bool) -> Strip:
        line = (self._topic_line(row) if isinstance(row, TopicSummary)
                else self._partition_line(row))
        if on_cursor:
            line.append(" " * max(0, self.size.width - line.cell_len), PAD_STYLE)
            line.stylize(self.get_component_rich_style("partition-view--cursor"))
        return Strip(line.render(self.app.console), line.cell_len)

    def _topic_line(self, summary: TopicSummary) -> Text:
        line = Text(style=self.rich_style + self.get_component_rich_style("partition-view--topic"))
        line.append("▾" if summary.open else "▸", "dim").append(" ", PAD_STYLE)
        line.append(summary.topic, "bold")
        pad = max(1, self._widths["topic"] - len(summary.topic) - len(INDENT)) + len(GAP)
        line.append(" " * pad, PAD_STYLE)
        return line.append_text(topic_summary_text(summary))

    def _partition_line(self, p: PartitionInfo) -> Text:
        cells = partition_cells(p, self.kraft)
        cells["topic"] = Text().append(INDENT, PAD_STYLE).append_text(cells["topic"])
        mark = self._marks.get((p.topic, p.partition))
        marked = mark[1] if mark and mark[0] > time.monotonic() else frozenset()
        line = Text(style=self.rich_style)
        for column in PARTITION_COLUMNS:
            cell, width = cells[column], self._widths[column]
            if cell.cell_len > width:
                self._widths[column] = width = cell.cell_len
                self._widen()
            if column in marked:
                cell.stylize(MARK_STYLE)
            pad = " " * (width - cell.cell_len)
            if column in RIGHT_ALIGNED:
                line.append(pad, PAD_STYLE).append_text(cell)
            else:
                line.append_text(cell).append(pad, PAD_STYLE)
            line.append(GAP, PAD_STYLE)
        return line

    def _widen(self) -> None:
        """A cell outgrew its column: redraw every row at the new width, once, after this
        paint (columns only grow, so rows do not jump back and forth)."""
        if not self._widen_pending:
            self._widen_pending = True
            self.call_later(self._widened)

    def _widened(self) -> None:
        self._widen_pending = False
        self._strips.clear()
        self._resize()
        self.refresh()

    # ----- keys -------------------------------------------------------------------------

    def _move(self, to: int) -> None:
        if not self._rows:
            return
        before, self.cursor = self.cursor, max(0, min(to, len(self._rows) - 1))
        if before == self.cursor:
            return
        self.refresh_line(before + 1)  # + 1: the header is line 0
        self.refresh_line(self.cursor + 1)
        page = self._page()
        top = round(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + page:
            self.scroll_to(y=self.cursor - page + 1, animate=False)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def action_cursor_up(self) -> None:
        self._move(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self._move(self.cursor + 1)

    def action_page_up(self) -> None:
        self._move(self.cursor - self._page())

    def action_page_down(self) -> None:
        self._move(self.cursor + self._page())

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(len(self._rows) - 1)

    def action_toggle_topic(self) -> None:
        """Open or close the cursor's topic (on a partition: close the topic it is in)."""
        row = self.selected
        if row is None:
            return
        opened = row.open if isinstance(row, TopicSummary) else True
        self._opened[row.topic] = not opened
        if not isinstance(row, TopicSummary):
            self.cursor = self._find((row.topic, -1))
        self._rebuild()

    def action_toggle_all(self) -> None:
        """Open every topic, or close them all when all are open."""
        topics = [r for r in self._rows if isinstance(r, TopicSummary)]
        close = all(t.open for t in topics)
        for t in topics:
            self._opened[t.topic] = not close
        self._rebuild()

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        index = round(self.scroll_offset.y) + offset.y - 1
        if index == self.cursor and isinstance(self.selected, TopicSummary):
            self.action_toggle_topic()
        else:
            self._move(index)
