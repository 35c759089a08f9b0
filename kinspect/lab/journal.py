"""The fault journal: every fault applied, with a wall-clock timestamp in ms (JSONL).

The TUI interleaves it with the observer's events; the post-mortem reads it to place the
fault on the timeline.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from kinspect.paths import lab_dir


def journal_path(root: Path | None = None) -> Path:
    return (root or lab_dir()) / "journal.jsonl"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def record(
    action: str,
    lab_id: str,
    node: str | None = None,
    detail: str = "",
    groups: list[list[str]] | None = None,
    root: Path | None = None,
) -> dict[str, Any]:
    """Append one entry and fsync it: the journal must survive the process that wrote it."""
    entry: dict[str, Any] = {
        "ts": now_ms(),
        "action": action,
        "node": node,
        "groups": groups,
        "detail": detail,
        "lab_id": lab_id,
    }
    path = journal_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(entry) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return entry


def read(root: Path | None = None, since_ms: int = 0) -> list[dict[str, Any]]:
    """Entries at or after since_ms; a torn last line (crash mid-write) is skipped."""
    path = journal_path(root)
    if not path.exists():
        return []
    entries = []
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("ts", 0) >= since_ms:
            entries.append(entry)
    return entries
