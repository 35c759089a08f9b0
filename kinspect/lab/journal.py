"""The fault journal: every fault applied, with a wall-clock timestamp in ms (JSONL).

The TUI interleaves it with the observer's events; the post-mortem reads it to place the
fault on the timeline. Each line is a `JournalEntry`, decoded once where it is read: the
screen, the lessons and the post-mortem read its fields, never its keys.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kinspect.lab.faults import FaultKind, Scope, fault_kind
from kinspect.lab.topology import broker_id_of
from kinspect.paths import lab_dir

# 2: an isolation is journaled as one ("isolate", its node and scope); version 1 (no
# "version" key) journaled it as the partition it made.
VERSION = 2
Groups = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class JournalEntry:
    """One line of the journal. `action` is as written: a FaultKind's word, one of the lab's
    own steps (up, down) or an older kinspect's fault (LEGACY_ACTIONS); `kind` is what was
    done, read right in older journals too."""

    ts: int
    action: str
    lab_id: str | None = None
    node: str | None = None
    groups: Groups | None = None  # a partition's (or an isolation's) groups, as cut
    detail: str = ""
    scope: Scope | None = None  # an isolation's: what its node was cut off from
    version: int = VERSION

    @property
    def isolation(self) -> tuple[str, Scope] | None:
        """The node an isolation cut off and from what; in a version 1 journal, a partition
        of the shape an isolation made."""
        if self.action == FaultKind.ISOLATE and self.node and self.scope:
            return self.node, self.scope
        if self.version < 2 and self.action == FaultKind.PARTITION:
            return old_isolation(self.groups)
        return None

    @property
    def kind(self) -> FaultKind | None:
        """What was done (None: the lab's own step or an older kinspect's fault)."""
        if self.isolation is not None:
            return FaultKind.ISOLATE
        return fault_kind(self.action)

    @property
    def words(self) -> str:
        """As a user would say it: `kill kafka2`, `partition a | b,c`, `isolate kafka1 from zk`."""
        if self.action == FaultKind.ISOLATE and self.scope is not None:
            return f"{self.action} {self.node} from {self.scope}"
        what = self.action
        if self.node:
            what += f" {self.node}"
        if self.groups:
            what += " " + cut_text(self.groups)
        return what

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "ts": self.ts, "action": self.action, "node": self.node,
            "groups": None, "detail": self.detail, "lab_id": self.lab_id}
        if self.groups is not None:
            out["groups"] = [list(group) for group in self.groups]
        if self.scope is not None:
            out["scope"] = self.scope.value
        out["version"] = self.version
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> JournalEntry:
        """A line as json.loads gave it; what is missing or of the wrong type is left out."""
        return cls(ts=_int(raw.get("ts")), action=str(raw.get("action") or ""),
                   lab_id=_text(raw.get("lab_id")), node=_text(raw.get("node")),
                   groups=_groups(raw.get("groups")), detail=str(raw.get("detail") or ""),
                   scope=_scope(raw.get("scope")), version=_int(raw.get("version"), 1))


def cut_text(groups: Sequence[Sequence[str]]) -> str:
    """`kafka1 | kafka2,kafka3,zk1`: the journal's, the screen's and the timeline's words."""
    return " | ".join(",".join(group) for group in groups)


def old_isolation(groups: Groups | None) -> tuple[str, Scope] | None:
    """`isolate X --from S` as version 1 journaled it: the groups topology.isolate_groups
    made, X alone or with every other broker (S = zk) or every other non-broker (S = brokers),
    then all but X. A hand-made partition is read as one only when it cuts exactly that."""
    if groups is None or len(groups) != 2 or not groups[0]:
        return None
    first, rest = groups
    node, beside = first[0], set(first[1:])
    if node in rest or not beside <= set(rest):
        return None
    brokers = {name for name in rest if broker_id_of(name) is not None}
    if not beside:
        return node, Scope.ALL
    if beside == brokers:
        return node, Scope.ZK
    if beside == set(rest) - brokers:
        return node, Scope.BROKERS
    return None


def _int(value: object, default: int = 0) -> int:
    if isinstance(value, int | float):
        return int(value)
    return default


def _text(value: object) -> str | None:
    if value is None:
        return None
    return str(value)


def _groups(value: object) -> Groups | None:
    if not isinstance(value, list):
        return None
    return tuple(tuple(map(str, group)) for group in value if isinstance(group, list))


def _scope(value: object) -> Scope | None:
    if value is None:
        return None
    try:
        return Scope(str(value))
    except ValueError:
        return None


def journal_path(root: Path | None = None) -> Path:
    return (root or lab_dir()) / "journal.jsonl"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def record(
    action: str,
    lab_id: str,
    node: str | None = None,
    detail: str = "",
    groups: Sequence[Sequence[str]] | None = None,
    root: Path | None = None,
    scope: Scope | None = None,
) -> JournalEntry:
    """Append one entry and fsync it: the journal must survive the process that wrote it."""
    entry = JournalEntry(now_ms(), action, lab_id, node, _cut(groups), detail, scope)
    path = journal_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(entry.to_json()) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return entry


def _cut(groups: Sequence[Sequence[str]] | None) -> Groups | None:
    if groups is None:
        return None
    return tuple(tuple(group) for group in groups)


def read(root: Path | None = None, since_ms: int = 0) -> list[JournalEntry]:
    """Entries at or after since_ms; a torn last line (crash mid-write) is skipped."""
    path = journal_path(root)
    if not path.exists():
        return []
    entries = []
    for line in path.read_text().splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(raw, dict):
            continue
        entry = JournalEntry.from_json(raw)
        if entry.ts >= since_ms:
            entries.append(entry)
    return entries
