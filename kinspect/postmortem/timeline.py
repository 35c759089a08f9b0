"""Observer events, fault journal and broker log lines merged into one timeline (pure Python).

It answers the questions the counts raise: which broker led a given leader epoch, when the
next epoch began, when a partition had no leader, and what the fault was.
"""

from __future__ import annotations

import re
from typing import Any

from kinspect.postmortem.inputs import DISRUPTIVE

TIMELINE_CAP = 400
BEFORE_MS = 60_000  # timeline kept from a minute before the first send ...
AFTER_MS = 600_000  # ... to ten minutes after the last ack (truncation comes after the heal)
ELECTION_KINDS = {"leader_changed", "partition_online", "log_leader_start", "log_leader_and_isr"}


def node_broker(node: str | None) -> int | None:
    digits = "".join(c for c in node or "" if c.isdigit())
    return int(digits) if digits and (node or "").startswith("kafka") else None


def _ours(partition: Any, topic: str) -> bool:
    return partition is None or not topic or bool(re.fullmatch(rf"{re.escape(topic)}-\d+", str(partition)))


def fault_events(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for f in faults:
        action, node = str(f.get("action", "?")), f.get("node")
        groups = f.get("groups")
        what = f"{action} {node}" if node else action
        if groups:
            what += " " + " | ".join(",".join(map(str, g)) for g in groups)
        detail = str(f.get("detail") or "")
        out.append({"ts": int(f["ts"]), "kind": "fault", "partition": None,
                    "broker": node_broker(node), "severity": "error" if action in DISRUPTIVE else "info",
                    "detail": f"fault: {what}" + (f" ({detail})" if detail and detail != what else ""),
                    "source": "faults", "action": action, "node": node})
    return out


def merge(observer: list[dict[str, Any]] | None, faults: list[dict[str, Any]] | None,
          logs: list[dict[str, Any]], topic: str, start: int | None = None,
          end: int | None = None) -> list[dict[str, Any]]:
    """Everything in [start, end], in time order, restricted to the run's topic (cluster-wide
    events stay): a lab's journal and logs also hold earlier runs."""
    events = [{**e, "source": e.get("source", "observer")} for e in observer or []
              if _ours(e.get("partition"), topic)]
    events += fault_events(faults or [])
    events += [e for e in logs if _ours(e.get("partition"), topic)]
    for e in events:
        e["ts"] = int(e["ts"])
    events = [e for e in events if (start is None or e["ts"] >= start) and (end is None or e["ts"] <= end)]
    events.sort(key=lambda e: (e["ts"], e["source"] != "faults"))
    return events


def main_fault(faults: list[dict[str, Any]] | None, start: int | None,
               end: int | None) -> dict[str, Any] | None:
    """The first disruptive fault inside the run (a lab journal holds earlier runs too)."""
    for f in sorted(faults or [], key=lambda f: f["ts"]):
        if f.get("action") not in DISRUPTIVE:
            continue
        if (start is None or f["ts"] >= start - 5000) and (end is None or f["ts"] <= end):
            return {**f, "node": f.get("node") or isolated_node(f.get("groups"))}
    return None


def isolated_node(groups: list[list[str]] | None) -> str | None:
    """A partition that puts one node alone (`lab isolate X --from all`) is a fault against X."""
    alone = [g[0] for g in groups or [] if len(g) == 1]
    return alone[0] if len(alone) == 1 else None


def epoch_leaders(events: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[int, int]]:
    """(partition, leader epoch) -> (broker, first ts seen). A broker's own 'starts at leader
    epoch' line beats the controller's state-change line, which beats the observer's view."""
    rank = {"log_leader_start": 0, "log_leader_and_isr": 1, "leader_changed": 2, "partition_online": 2}
    best: dict[tuple[str, int], tuple[int, int, int]] = {}
    for e in events:
        kind = e.get("kind")
        if kind not in rank or e.get("partition") is None or e.get("epoch") is None:
            continue
        broker = e.get("new") if kind in {"leader_changed", "partition_online"} else e.get("broker")
        if broker is None or int(broker) < 0:
            continue
        key = (str(e["partition"]), int(e["epoch"]))
        ts = int(e["ts"])
        old = best.get(key)
        if old is None or rank[kind] < old[0]:
            best[key] = (rank[kind], int(broker), min(ts, old[2]) if old else ts)
        else:
            best[key] = (old[0], old[1], min(ts, old[2]))
    return {k: (v[1], v[2]) for k, v in best.items()}


def no_leader_windows(events: list[dict[str, Any]], end_ts: int | None) -> list[dict[str, Any]]:
    """partition_offline until that partition is online (or has a new leader) again."""
    open_at: dict[str, int] = {}
    out = []
    for e in events:
        partition = e.get("partition")
        if partition is None or e.get("source") != "observer":
            continue
        if e["kind"] == "partition_offline":
            open_at.setdefault(partition, e["ts"])
        elif e["kind"] in {"partition_online", "leader_changed"} and partition in open_at:
            start = open_at.pop(partition)
            out.append({"partition": partition, "start": start, "end": e["ts"],
                        "ms": e["ts"] - start, "reason": "no leader"})
    for partition, start in open_at.items():
        if end_ts is not None and end_ts > start:
            out.append({"partition": partition, "start": start, "end": end_ts,
                        "ms": end_ts - start, "reason": "no leader (until the end of the run)"})
    return sorted(out, key=lambda w: w["start"])


def report_entries(events: list[dict[str, Any]], fault_ts: int | None,
                   cap: int = TIMELINE_CAP) -> tuple[list[dict[str, Any]], int]:
    """The report's timeline: compact entries with deltas from the fault; the rest counted."""
    keep = ("ts", "kind", "partition", "broker", "severity", "detail", "source", "epoch", "offset",
            "old", "new", "action", "node")
    out = []
    for e in events[:cap]:
        entry = {k: e[k] for k in keep if k in e}
        entry["delta_ms"] = e["ts"] - fault_ts if fault_ts is not None else None
        out.append(entry)
    return out, max(0, len(events) - cap)
