"""The panels (the partitions are in partition_view.py). Each takes model values and renders
them; none of them touches the network."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, RichLog, Static

from kinspect.lab.state import LabState
from kinspect.model import ClusterSnapshot
from kinspect.tui.partition_rows import BrokerCounts
from kinspect.tui.render import BROKER_COLUMNS, KRAFT_BROKER_LABELS, PAD_STYLE, broker_rows


def _padded(cell: Text | str) -> Text:
    """The cell between spaces of their own style (DataTable's padding would share the
    text's, and an SVG viewer drops a run's leading spaces: columns slid left)."""
    return Text().append(" ", PAD_STYLE).append_text(Text(cell) if isinstance(cell, str)
                                                       else cell).append(" ", PAD_STYLE)


class TextBox(Static):
    """A Static that redraws only when its text changed: every redraw lays the screen out
    again and leaves Textual's strips as cyclic garbage (a refresh a second per panel was
    most of the TUI's garbage on an idle cluster)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shown: Text | None = None

    def show(self, text: Text, *, layout: bool = True) -> None:
        """`layout=False` when the box's size cannot change with the text."""
        if text == self.shown:
            return
        self.shown = text
        self.update(text, layout=layout)


class BrokerTable(DataTable[Text]):
    """Brokers: one row each; the cursor row is the target of the broker keys."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cell_padding=0, **kwargs)  # type: ignore[arg-type]
        self._kraft = False

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self._add_columns()

    def _add_columns(self) -> None:
        labels = KRAFT_BROKER_LABELS if self._kraft else {}
        for name in BROKER_COLUMNS:
            self.add_column(_padded(labels.get(name, name)), key=name)

    def show(self, snapshot: ClusterSnapshot | None, lab: LabState | None,
             counts: BrokerCounts | None = None) -> None:
        kraft = snapshot is not None and snapshot.kraft
        if kraft != self._kraft:  # the columns' labels follow the mode (rows are re-added)
            self._kraft = kraft
            self.clear(columns=True)
            self._add_columns()
        rows = broker_rows(snapshot, lab, counts)
        keys = [str(r.broker_id) for r in rows]
        if keys != [str(k.value) for k in self.rows]:
            cursor = self.cursor_row
            self.clear()
            for row in rows:
                self.add_row(*map(_padded, row.cells), key=str(row.broker_id))
            self.move_cursor(row=min(cursor, max(0, len(rows) - 1)))
            return
        for row in rows:
            key = str(row.broker_id)
            for name, cell in zip(BROKER_COLUMNS, row.cells, strict=True):
                padded = _padded(cell)
                if padded != self.get_cell(key, name):  # unchanged cells cost no layout
                    self.update_cell(key, name, padded, update_width=True)

    @property
    def selected_broker(self) -> int | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return int(key) if key is not None else None

    def select_broker(self, broker_id: int) -> bool:
        try:
            self.move_cursor(row=self.get_row_index(str(broker_id)))
        except Exception:  # no such broker row
            return False
        return True


class EventLog(RichLog):
    """Observer events and lab faults, newest at the bottom."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=1000, wrap=False, markup=False, **kwargs)  # type: ignore[arg-type]
