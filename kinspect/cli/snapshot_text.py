"""Plain-text rendering of a snapshot (for `kinspect snapshot` without --json)."""

from __future__ import annotations

from typing import Any

from kinspect.model.partition_codec import partition_from_json
from kinspect.model.partition_schema import TextColumn, text_columns
from kinspect.model.partition_words import cell, flag_words
from kinspect.model.snapshot import PartitionInfo


def _header() -> str:
    """The partition table's header: the schema's text columns, then the flags."""
    cells = []
    for fact in text_columns():
        column = fact.text
        assert column is not None
        cells.append(_aligned(column, column.label))
    return " ".join(cells) + "  FLAGS"


def _aligned(column: TextColumn, words: str) -> str:
    """Cut to the column's width, padded on its side."""
    words = words[:column.width]
    if column.right:
        return words.rjust(column.width)
    return words.ljust(column.width)


def partition_line(p: PartitionInfo, kraft: bool = False) -> str:
    """One partition: each text column's cell (partition_words), then its flags' words."""
    cells = []
    for fact in text_columns():
        column = fact.text
        assert column is not None
        cells.append(_aligned(column, cell(fact, p, column.missing)))
    return " ".join(cells) + "  " + flag_words(p, kraft)


def _broker(b: dict[str, Any]) -> str:
    """In ZooKeeper mode: registered or not; in KRaft: fenced (not in the metadata) or not."""
    if b.get("fenced") is not None:
        state = " (FENCED)" if b["fenced"] else ""
    else:
        state = " (NOT REGISTERED)" if b.get("registered") is False else ""
    return f"{b['id']}@{b.get('address') or '?'}{state}"


def _head(data: dict[str, Any]) -> list[str]:
    controller = data.get("controller") or {}
    if data.get("mode") != "kraft":
        epoch = controller.get("epoch")
        return [f"controller {controller.get('id', '-')}"
                + (f" (epoch {epoch})" if epoch is not None else "")
                + f"   zookeeper {(data.get('zookeeper') or {}).get('state', 'not watched')}"]
    quorum = data.get("quorum")
    if quorum is None and controller.get("unknown"):
        return [f"controller ? ({controller['unknown']})   KRaft"]
    if quorum is None:
        return ["controller ? (the KRaft quorum does not answer)   KRaft"]
    leader = quorum["leader_id"] if quorum["leader_id"] is not None else "none"
    members = "  ".join(f"{m['id']}{'*' if m['id'] == quorum['leader_id'] else ''}:"
                        f"{'?' if m['lag'] is None else -m['lag'] if m['lag'] else 'ok'}"
                        for m in quorum["voters"] + quorum["observers"])
    return [f"controller {leader} (quorum leader, epoch {quorum['leader_epoch']})   KRaft",
            f"quorum hw {quorum['high_watermark']}  (lag) {members}"]


def _partition_lines(topics: list[Any], kraft: bool) -> list[str]:
    lines = []
    for topic in topics:
        for raw in topic.get("partitions", []):
            lines.append(partition_line(partition_from_json(topic["name"], raw), kraft))
    return lines


def _flush_words(flush: object) -> str:
    """A topic's fsync settings in words: "messages never, ms never" (or why unknown)."""
    if not isinstance(flush, dict):
        return "not told"
    if "unknown" in flush:
        return f"unknown ({flush['unknown']})"
    return f"messages {flush.get('messages_words')}, ms {flush.get('ms_words')}"


def _flush_lines(topics: list[Any]) -> list[str]:
    """Each distinct flush setting once, with the topics it holds for (a few named)."""
    by_words: dict[str, list[str]] = {}
    for topic in topics:
        by_words.setdefault(_flush_words(topic.get("flush")), []).append(topic["name"])
    lines = []
    for words, names in by_words.items():
        shown = ", ".join(names[:5])
        if len(names) > 5:
            shown += f" and {len(names) - 5} more"
        lines.append(f"fsync (flush.messages, flush.ms): {words}: {shown}")
    return lines


def render_snapshot(data: dict[str, Any]) -> str:
    """The `snapshot --json` document as text (its partitions read back by the schema's
    codec, so the text and the JSON say the same)."""
    lines = [
        *_head(data),
        "brokers: " + "  ".join(_broker(b) for b in data.get("brokers", [])),
        "",
        _header(),
        *_partition_lines(data.get("topics", []), data.get("mode") == "kraft"),
        "",
        *_flush_lines(data.get("topics", [])),
    ]
    findings = data.get("warnings") or []  # the JSON's name for the cluster's findings
    if findings:
        lines.append("")
        lines += [f"{w.get('severity', 'warn')}: {w['message']}" for w in findings]
    for missing in data.get("unchecked") or []:
        lines.append(f"? {missing['text']}")
    for limitation in data.get("limitations") or []:
        lines.append(f"note: {limitation}")
    return "\n".join(lines)
