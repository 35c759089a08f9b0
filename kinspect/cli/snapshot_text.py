"""Plain-text rendering of a snapshot (for `kinspect snapshot` without --json)."""

from __future__ import annotations

from typing import Any

FLAG_NAMES = (("offline", "OFFLINE"), ("under_min_isr", "UNDER-MIN-ISR"),
              ("at_min_isr", "AT-MIN-ISR"), ("under_replicated", "UNDER-REPLICATED"),
              ("views_disagree", "VIEWS-DISAGREE"))


def flags(partition: dict[str, Any]) -> str:
    """The flags that hold; `NAME?` for one kinspect was not told (`unchecked` says why)."""
    names = []
    for key, label in FLAG_NAMES:
        value = partition.get(key)
        if isinstance(value, dict) and "unknown" in value:
            names.append(label + "?")
        elif value:
            names.append(label)
    moving = partition.get("reassignment")
    if isinstance(moving, dict) and "adding" in moving:
        names.append(f"MOVING(+{_ids(moving['adding'])} -{_ids(moving['removing'])})")
    elr = partition.get("elr")
    if isinstance(elr, dict) and (elr.get("eligible") or elr.get("last_known")):
        names.append(f"ELR({_ids(elr['eligible'])}; last {_ids(elr['last_known'])})")
    if partition.get("preferred_leader") is False and not partition.get("offline"):
        names.append("NOT-PREFERRED")
    return " ".join(names) or "ok"


def _ids(values: list[int] | None) -> str:
    return ",".join(str(v) for v in values or []) or "-"


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


def render_snapshot(data: dict[str, Any]) -> str:
    lines = [
        *_head(data),
        "brokers: " + "  ".join(_broker(b) for b in data.get("brokers", [])),
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
    for missing in data.get("unchecked") or []:
        lines.append(f"? {missing['text']}")
    for limitation in data.get("limitations") or []:
        lines.append(f"note: {limitation}")
    return "\n".join(lines)
