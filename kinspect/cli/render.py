"""Plain-text rendering of a snapshot (for `kinspect snapshot` without --json)."""

from __future__ import annotations

from typing import Any

FLAG_NAMES = (("offline", "OFFLINE"), ("under_min_isr", "UNDER-MIN-ISR"),
              ("at_min_isr", "AT-MIN-ISR"), ("under_replicated", "UNDER-REPLICATED"),
              ("views_disagree", "VIEWS-DISAGREE"))


def flags(partition: dict[str, Any]) -> str:
    names = [label for key, label in FLAG_NAMES if partition.get(key)]
    if partition.get("preferred_leader") is False and not partition.get("offline"):
        names.append("NOT-PREFERRED")
    return " ".join(names) or "ok"


def _ids(values: list[int] | None) -> str:
    return ",".join(str(v) for v in values or []) or "-"


def render_snapshot(data: dict[str, Any]) -> str:
    controller = data.get("controller") or {}
    lines = [
        f"controller {controller.get('id', '-')} (epoch {controller.get('epoch', '-')})   "
        f"zookeeper {(data.get('zookeeper') or {}).get('state', 'not watched')}",
        "brokers: " + "  ".join(
            f"{b['id']}@{b.get('address') or '?'}"
            + ("" if b.get("registered", True) else " (NOT REGISTERED)")
            for b in data.get("brokers", [])),
        "",
        f"{'TOPIC':24} {'P':>3} {'LEADER':>6} {'EPOCH':>5} {'REPLICAS':10} {'ISR':10} "
        f"{'HW':>10}  FLAGS",
    ]
    for topic in data.get("topics", []):
        for part in topic.get("partitions", []):
            leader = part.get("leader")
            lines.append(
                f"{topic['name'][:24]:24} {part['partition']:>3} "
                f"{leader if leader is not None else 'none':>6} "
                f"{part.get('leader_epoch') if part.get('leader_epoch') is not None else '-':>5} "
                f"{_ids(part.get('replicas')):10} {_ids(part.get('isr')):10} "
                f"{part.get('high_watermark') if part.get('high_watermark') is not None else '-':>10}"
                f"  {flags(part)}")
    warnings = data.get("warnings") or []
    if warnings:
        lines.append("")
        lines += [f"warning: {w['message']}" for w in warnings]
    for limitation in data.get("limitations") or []:
        lines.append(f"note: {limitation}")
    return "\n".join(lines)
