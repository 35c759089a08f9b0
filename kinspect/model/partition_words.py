"""A partition in words, from its schema (partition_schema.py): each column's cell and each
flag that holds, the same words in `snapshot`'s text and on the partition view.

The screen styles what this says (tui/partition_cells.py); the text prints it as it is. A new
column needs nothing here: its `TextColumn.format` says how its value reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kinspect.model.facts import Unknown
from kinspect.model.partition_schema import PARTITION_FACTS, Flag, PartitionFact, TextFormat
from kinspect.model.snapshot import PartitionInfo
from kinspect.model.views import EligibleLeaders

UNKNOWN_CELL = "?"  # a value the cluster did not tell (`unchecked` says why)


def ids(values: tuple[int, ...] | None) -> str:
    if not values:
        return ""
    return ",".join(str(v) for v in values)


def clock(ms: int) -> str:
    """Local wall-clock time to the second, as the event log's clock reads."""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000))


def _plain(value: object) -> str:
    return str(value)


def _count(value: object) -> str:
    assert isinstance(value, int)
    return f"{value:,}"


def _ids_cell(value: object) -> str:
    assert isinstance(value, tuple)
    return ids(value)


def _clock_cell(value: object) -> str:
    assert isinstance(value, int)
    return clock(value)


FORMATS: dict[TextFormat, Callable[[object], str]] = {
    "plain": _plain, "count": _count, "ids": _ids_cell, "clock": _clock_cell}


def cell(fact: PartitionFact, p: PartitionInfo, missing: str = "-") -> str:
    """One fact of the partition as its cell reads: None or nothing as `missing`, Unknown as
    `?`."""
    value = getattr(p, fact.name)
    if value is None:
        return missing
    if isinstance(value, Unknown):
        return UNKNOWN_CELL
    form: TextFormat = "plain"
    if fact.text is not None:
        form = fact.text.format
    words = FORMATS[form](value)
    if not words:
        return missing
    return words


@dataclass(frozen=True)
class FlagSaid:
    """A flag that holds: its fact's name (the screen styles by it), its word, what follows."""

    name: str
    word: str
    detail: str = ""
    unknown: bool = False  # the flag was not told: its `?` word

    @property
    def text(self) -> str:
        if not self.detail:
            return self.word
        return f"{self.word} {self.detail}"


Said = FlagSaid | None
_FLAGS: dict[str, Flag] = {f.name: f.flag for f in PARTITION_FACTS if f.flag is not None}


def _known(name: str, value: object) -> Said:
    """A Fact[bool] flag: its word when true, its `?` word when not told."""
    flag = _FLAGS[name]
    if isinstance(value, Unknown) and flag.unknown_word is not None:
        return FlagSaid(name, flag.unknown_word, unknown=True)
    if value is True:
        return FlagSaid(name, flag.word)
    return None


def _offline(p: PartitionInfo, kraft: bool) -> Said:
    return _known("offline", p.offline)


def _views(p: PartitionInfo, kraft: bool) -> Said:
    """A broker leading against the controller's decision (KRaft: against the newest one)."""
    if not p.views_disagree:
        return None
    flag = _FLAGS["views_disagree"]
    word = flag.word
    if kraft and flag.kraft_word is not None:
        word = flag.kraft_word
    return FlagSaid("views_disagree", word, str(p.broker_leader))


def _under_min(p: PartitionInfo, kraft: bool) -> Said:
    """Short of the minimum ISR; unknown said only where the ISR is short of its replicas."""
    under = p.under_min_isr
    if isinstance(under, Unknown) and not p.isr_short:
        return None
    return _known("under_min_isr", under)


def _at_min(p: PartitionInfo, kraft: bool) -> Said:
    """At the minimum ISR: said only when not under it, and only when known (unknown, the
    under-min-ISR flag says `?`)."""
    if p.under_min_isr is True or p.at_min_isr is not True:
        return None
    return FlagSaid("at_min_isr", _FLAGS["at_min_isr"].word)


def _urp(p: PartitionInfo, kraft: bool) -> Said:
    return _known("under_replicated", p.under_replicated)


def _moving(p: PartitionInfo, kraft: bool) -> Said:
    if not p.moving:
        return None
    detail = []
    if p.adding:
        detail.append(f"+{ids(p.adding)}")
    if p.removing:
        detail.append(f"-{ids(p.removing)}")
    return FlagSaid("reassignment", _FLAGS["reassignment"].word, " ".join(detail))


def _elr(p: PartitionInfo, kraft: bool) -> Said:
    """KRaft's eligible leaders (KIP-966), and the last known ISR when none is eligible."""
    elr = p.elr
    if not isinstance(elr, EligibleLeaders) or not (elr.eligible or elr.last_known):
        return None
    detail = ids(elr.eligible) or "-"
    if not elr.eligible:
        detail += f" (last {ids(elr.last_known)})"
    return FlagSaid("elr", _FLAGS["elr"].word, detail)


def _diverged(p: PartitionInfo, kraft: bool) -> Said:
    if not p.diverged:
        return None
    return FlagSaid("replica_logs", _FLAGS["replica_logs"].word)


def _not_preferred(p: PartitionInfo, kraft: bool) -> Said:
    """Said when it does not hold: led by other than the first replica (offline: moot)."""
    if p.offline or p.preferred_leader:
        return None
    return FlagSaid("preferred_leader", _FLAGS["preferred_leader"].word)


# Each flag's test by the fact it flags, in the order the flags are said (a test checks every
# flag of the schema has one).
FLAG_TESTS: dict[str, Callable[[PartitionInfo, bool], Said]] = {
    "offline": _offline, "views_disagree": _views, "under_min_isr": _under_min,
    "at_min_isr": _at_min, "under_replicated": _urp, "reassignment": _moving, "elr": _elr,
    "replica_logs": _diverged, "preferred_leader": _not_preferred}


def flags(p: PartitionInfo, kraft: bool = False) -> list[FlagSaid]:
    """The flags that hold, in order."""
    said = []
    for test in FLAG_TESTS.values():
        found = test(p, kraft)
        if found is not None:
            said.append(found)
    return said


def flag_words(p: PartitionInfo, kraft: bool = False) -> str:
    """The flags as `snapshot`'s text says them; `ok` when none holds."""
    return " ".join(f.text for f in flags(p, kraft)) or "ok"
