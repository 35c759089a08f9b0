"""The partition view's columns and cells, from the partition schema.

The columns and their order are the schema's (`ScreenColumn`); a column with no cell of its
own here reads as its words (model/partition_words.py), so a new data-backed column needs no
code on screen. The flags are partition_words' flags, styled by the fact they come from.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text

from kinspect.model import PartitionInfo
from kinspect.model.partition_schema import (
    BY_NAME,
    FLAGS_COLUMN,
    PARTITION_FACTS,
    PartitionFact,
    screen_columns,
)
from kinspect.model.partition_words import FlagSaid, cell, flags
from kinspect.tui.render import (
    DIVERGED_STYLE,
    PAD_STYLE,
    SEVERITY_STYLE,
    UNKNOWN_STYLE,
    isr_text,
    moving_text,
    replica_logs_text,
)

PARTITION_COLUMNS = screen_columns()
# Columns aligned right (numbers), from the schema.
RIGHT_ALIGNED = frozenset(f.column.label for f in PARTITION_FACTS
                          if f.column is not None and f.column.right)
# Each flag's style, by the fact it comes from (a test checks every flag has one).
FLAG_STYLE = {"offline": "bold white on red", "views_disagree": "bold magenta",
              "under_min_isr": "bold red", "at_min_isr": "yellow", "under_replicated": "yellow",
              "reassignment": "cyan", "elr": "cyan", "replica_logs": DIVERGED_STYLE,
              "preferred_leader": "dim"}
Cell = Callable[[PartitionInfo, bool], Text]


def _topic(p: PartitionInfo, kraft: bool) -> Text:
    return Text(p.topic, SEVERITY_STYLE[p.state])


def _leader(p: PartitionInfo, kraft: bool) -> Text:
    if p.leader is None:
        return Text("none", "bold red")
    return Text(str(p.leader), "bold")


def _isr(p: PartitionInfo, kraft: bool) -> Text:
    return isr_text(p)


def _replica_logs(p: PartitionInfo, kraft: bool) -> Text:
    return replica_logs_text(p)


def flag_text(p: PartitionInfo, said: FlagSaid) -> Text:
    """One flag: a reassignment with how far each added replica trails, the rest as said."""
    if said.name == "reassignment":
        return moving_text(p)
    style = FLAG_STYLE[said.name]
    if said.unknown:
        style = UNKNOWN_STYLE
    return Text(said.text, style)


def partition_flags(p: PartitionInfo, kraft: bool = False) -> Text:
    text = Text()
    for i, said in enumerate(flags(p, kraft)):
        if i:
            text.append(" ", PAD_STYLE)
        text.append_text(flag_text(p, said))
    return text


# The cells drawn otherwise than as their words, by column.
CELLS: dict[str, Cell] = {"topic": _topic, "leader": _leader, "isr": _isr,
                          "replica logs": _replica_logs, FLAGS_COLUMN.label: partition_flags}


def _words(fact: PartitionFact) -> Cell:
    missing = "-"
    if fact.text is not None:
        missing = fact.text.missing

    def words(p: PartitionInfo, kraft: bool) -> Text:
        return Text(cell(fact, p, missing))

    return words


def _drawers() -> tuple[tuple[str, Cell], ...]:
    """Each column's cell, in column order."""
    by_label = {f.column.label: f for f in BY_NAME.values() if f.column is not None}
    out = []
    for label in PARTITION_COLUMNS:
        drawer = CELLS.get(label)
        if drawer is None:
            drawer = _words(by_label[label])
        out.append((label, drawer))
    return tuple(out)


DRAWERS = _drawers()


def partition_cells(p: PartitionInfo, kraft: bool = False) -> dict[str, Text]:
    """Cells by column; each is compared with the last one shown to mark what changed."""
    return {label: draw(p, kraft) for label, draw in DRAWERS}
