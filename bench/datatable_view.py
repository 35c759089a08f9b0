"""Today's DataTable partition view, kept only to compare with the line-rendered one.

This is the PartitionTable the product shipped before kinspect/tui/partition_view.py: one
DataTable row per partition, updated cell by cell. bench/tui.py runs both in the same run; the
product has one view.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable

from rich.text import Text
from textual.widgets import DataTable

from kinspect.model import ClusterSnapshot, PartitionInfo
from kinspect.tui.partition_cells import PARTITION_COLUMNS, partition_cells
from kinspect.tui.partition_rows import Prepared
from kinspect.tui.render import healthy

MARK_LIMIT = 300  # more changed cells than this in one snapshot: no highlight
MARK_FOR_S = 3.0
MARK_STYLE = "on #6b4e00"


def _same(a: Text, b: Text) -> bool:
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def _marked(text: Text) -> Text:
    copy = text.copy()
    copy.stylize(MARK_STYLE)
    return copy


def _display_order(p: PartitionInfo) -> tuple[bool, str, int]:
    """Topic by topic, internal topics (__consumer_offsets) last: stable rows, easy to follow."""
    return p.topic.startswith("__"), p.topic, p.partition


class PartitionTable(DataTable[Text]):
    """Partitions, updated cell by cell; a cell that changed is marked for a few seconds.

    Only rows whose cells differ are touched, so 2,000 partitions cost one comparison pass per
    snapshot, and keys stay responsive while leaders move.
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown: dict[str, dict[str, Text]] = {}
        self._widths: dict[str, int] = {}  # widest text shown per column
        self._marks: dict[tuple[str, str], float] = {}
        self.filter_text = ""
        self.unhealthy_only = False
        self._last: ClusterSnapshot | None = None

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name in PARTITION_COLUMNS:
            self.add_column(name, key=name)
        self.set_interval(0.5, self._expire_marks)

    def _visible(self, partitions: Iterable[PartitionInfo]) -> list[PartitionInfo]:
        needle = self.filter_text.lower()
        out = []
        for p in partitions:
            if needle and needle not in p.name.lower():
                continue
            if self.unhealthy_only and healthy(p):
                continue
            out.append(p)
        return out

    def refilter(self) -> None:
        if self._last is not None:
            self.show(self._last, mark=False)

    def show(self, snapshot: ClusterSnapshot, mark: bool = True,
             prepared: Prepared | None = None) -> int:
        """Render the snapshot; returns how many cells changed (the old view prepares nothing
        off the loop: `prepared` is not used)."""
        self._last = snapshot
        visible = self._visible(sorted(snapshot.partitions(), key=_display_order))
        keys = [f"{p.topic}\0{p.partition}" for p in visible]
        if keys != list(self._shown):
            self._rebuild(keys, visible)
            return len(keys)
        diffs = [(key, column, cell)
                 for key, partition in zip(keys, visible, strict=True)
                 for column, cell in partition_cells(partition).items()
                 if not _same(self._shown[key][column], cell)]
        # When a failover changes most of the table, highlighting everything says nothing and
        # un-highlighting it 3 s later would cost as much again: mark only small changes.
        mark = mark and len(diffs) <= MARK_LIMIT
        now = time.monotonic()
        for key, column, cell in diffs:
            self._shown[key][column] = cell
            if mark:
                self._marks[(key, column)] = now + MARK_FOR_S
            # Re-measuring a column costs a console query per cell (a whole-cluster failover
            # stalled the screen for a minute): only when the text outgrows the column.
            wider = cell.cell_len > self._widths.get(column, 0)
            if wider:
                self._widths[column] = cell.cell_len
            self.update_cell(key, column, _marked(cell) if mark else cell, update_width=wider)
        return len(diffs)

    def _rebuild(self, keys: list[str], visible: list[PartitionInfo]) -> None:
        selected = None
        if self.row_count:
            selected = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        self.clear()
        self._shown = {}
        self._marks = {}
        for key, partition in zip(keys, visible, strict=True):
            cells = partition_cells(partition)
            self._shown[key] = cells
            for column, cell in cells.items():
                self._widths[column] = max(self._widths.get(column, 0), cell.cell_len)
            self.add_row(*(cells[c] for c in PARTITION_COLUMNS), key=key)
        if selected in self._shown:
            self.move_cursor(row=self.get_row_index(selected))

    def _expire_marks(self) -> None:
        now = time.monotonic()
        for (key, column), until in list(self._marks.items()):
            if until <= now:
                del self._marks[(key, column)]
                if key in self._shown:
                    self.update_cell(key, column, self._shown[key][column])

    def pin(self, topics: Collection[str]) -> None:
        """The old table had no pinned topics."""
