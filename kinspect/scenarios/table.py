"""Result rows as a terminal table or as Markdown (the docs' workshop matrix)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kinspect.lab.dist import kafka_version
from kinspect.scenarios.platform import Platform

COLUMNS = (("scenario", "scenario"), ("acked", "acked"), ("in_log", "in log"),
           ("acked_lost", "acked lost"), ("live_lost", "live figure"),
           ("unacked_present", "unacked present"),
           ("duplicates", "duplicates"), ("failed", "failed"), ("indefinite", "indefinite"),
           ("failover_ms", "failover"),
           ("unavailable_ms", "unavailable"), ("beyond_brokers", "client / consumers"),
           ("expectation_met", "expected?"))
# What the client and the consumer group did, in a few words (only what was measured).
BEYOND = (("client_lost", "client lost"), ("refused", "refused"),
          ("never_processed", "never processed"), ("processed_twice", "processed twice"),
          ("aborted_visible", "aborted seen"), ("output_duplicates", "output copies"))


def beyond_brokers(row: dict[str, Any]) -> str:
    """client lost 19,800; never processed 251; … (producer-only rows: '-')."""
    grouped = row.get("never_processed") is not None
    parts = [f"{title} {row[key]:,}" for key, title in BEYOND
             if isinstance(row.get(key), int)
             and (row[key] or (grouped and key in ("never_processed", "processed_twice")))]
    return "; ".join(parts) or "-"


def cell(key: str, row: dict[str, Any]) -> str:
    if key == "source":
        return str(row.get("source", ""))
    if row.get("status") in ("skipped", "error"):
        if key == "scenario":
            return str(row["scenario"])
        return f"{row['status']}: {row.get('reason', '')}" if key == "acked" else ""
    if key == "beyond_brokers":
        return beyond_brokers(row)
    value = row.get(key)
    if value is None:
        return "-"
    if key == "expectation_met":
        return "yes" if value else "NO: " + ", ".join(row.get("expectation_failed") or ["plan"])
    if key.endswith("_ms"):
        return f"{value / 1000:.1f} s"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def text_table(rows: Sequence[dict[str, Any]]) -> str:
    grid = [[title for _, title in COLUMNS]] + [[cell(k, r) for k, _ in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(COLUMNS))]
    out = []
    for n, line in enumerate(grid):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The terminal columns plus the source material's figure, for the docs' matrix."""
    columns = (*COLUMNS, ("source", "2018 / source"))
    head = "| " + " | ".join(title for _, title in columns) + " |"
    rule = "|" + "|".join("---" if k in ("scenario", "source") else "---:" for k, _ in columns) + "|"
    body = ["| " + " | ".join(cell(k, r).replace("|", "/") for k, _ in columns) + " |"
            for r in rows]
    return "\n".join([head, rule, *body])


# What the side-by-side table shows of each platform: the verdict and the failover.
PER_PLATFORM = (("acked_lost", "acked lost"), ("failover_ms", "failover"),
            ("unavailable_ms", "unavailable"), ("expectation_met", "expected?"))


def platform_of(row: dict[str, Any]) -> Platform:
    """Where a row ran (rows from before `kafka` was recorded ran on the pinned release)."""
    return Platform(row.get("mode", "zookeeper"), row.get("kafka") or kafka_version())


def _platform_cells(row: dict[str, Any] | None) -> list[str]:
    """One platform's cells of a row; a run that did not happen says why in its last cell."""
    if row is None:
        return ["-"] * len(PER_PLATFORM)
    if row.get("status") in ("skipped", "error"):
        why = str(row.get("reason", "")).split(";")[0]
        return [""] * (len(PER_PLATFORM) - 1) + [f"{row['status']}: {why}"]
    return [cell(k, row) for k, _ in PER_PLATFORM]


def side_by_side(rows: Sequence[dict[str, Any]], columns: Sequence[Platform],
                 markdown: bool = False) -> str:
    """One line a scenario, each platform's figures beside the others': which lessons still
    hold in today's Kafka. A scenario run more than once shows its last run on each."""
    names = list(dict.fromkeys(r["scenario"] for r in rows))
    last = {(r["scenario"], platform_of(r)): r for r in rows}
    head = ["scenario", *(f"{p.label}: {t}" for p in columns for _, t in PER_PLATFORM)]
    body = []
    for name in names:
        line = [name]
        for platform in columns:
            line += _platform_cells(last.get((name, platform)))
        body.append(line)
    if markdown:
        return _markdown_grid(head, body)
    return _text_grid(head, body)


def _markdown_grid(head: list[str], body: list[list[str]]) -> str:
    """A Markdown table: the scenario left-aligned, the figures right-aligned."""
    rule = "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"
    lines = ["| " + " | ".join(head) + " |", rule]
    for cells in body:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def _text_grid(head: list[str], body: list[list[str]]) -> str:
    """Padded columns under a rule of dashes: the scenario left-aligned, the figures right."""
    grid = [head, *body]
    widths = [max(len(line[i]) for line in grid) for i in range(len(head))]
    out = []
    for line in grid:
        first = line[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)]
        out.append("  ".join([first, *rest]).rstrip())
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)
