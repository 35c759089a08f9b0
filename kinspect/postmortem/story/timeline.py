"""Observer events, fault journal and broker log lines merged into one timeline (pure Python).

It answers the questions the counts raise: which broker led a given leader epoch, when the
next epoch began, when a partition had no leader, and what the fault was. One fact is one line:
an election the observer saw, the controller logged and the new leader logged is one entry with
three `sources` (see `fold`).
"""

from __future__ import annotations

import re
from typing import Any

from kinspect.lab.topology import broker_id_of
from kinspect.postmortem.evidence.inputs import DISRUPTIVE

TIMELINE_CAP = 400
BEFORE_MS = 60_000  # timeline kept from a minute before the first send ...
AFTER_MS = 600_000  # ... to ten minutes after the last ack (truncation comes after the heal)
FOLD_MS = 5_000  # sightings of one fact this close together are one line

# Each fact's kinds, best first: the first one present is the folded entry's kind and detail.
# For an election that is also epoch_leaders' order: the leader's own line, the controller's, ours.
ELECTION = ("log_leader_start", "log_leader_and_isr", "leader_changed", "partition_online",
            "log_follower_start")
ISR = ("log_isr_shrink", "log_isr_expand", "isr_shrank", "isr_expanded")
CONTROLLER = ("controller_changed", "log_controller_elected")
REGISTERED = ("log_broker_registered", "broker_registered")
FENCED = ("log_broker_fenced", "broker_fenced")  # KRaft: the quorum stopped counting on it
PREFERENCE = {kind: i for family in (ELECTION, ISR, CONTROLLER, REGISTERED, FENCED,
                                     ("log_truncate",))
              for i, kind in enumerate(family)}
SOURCE_ORDER = ("faults", "observer", "controller log", "broker log")


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
                    "broker": broker_id_of(node), "severity": "error" if action in DISRUPTIVE else "info",
                    "detail": f"fault: {what}" + (f" ({detail})" if detail and detail != what else ""),
                    "source": "faults", "action": action, "node": node, "note": detail})
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
    return fold(events)


def _label(e: dict[str, Any]) -> str:
    """Who saw it, in words: the controller's lines are told apart from a broker's own."""
    if e.get("source") == "broker-log":
        return "controller log" if e["kind"] in {"log_leader_and_isr", "log_controller_elected",
                                                 "log_broker_fenced"} \
            else "broker log"
    return str(e.get("source"))


def _fact(e: dict[str, Any]) -> tuple[Any, ...] | None:
    """What an event says, as a key shared by every sighting of the same fact (None: unique)."""
    kind, partition = e.get("kind"), e.get("partition")
    if _leader(e) is not None and e.get("epoch") is not None:
        return ("election", partition, int(e["epoch"]))
    if kind in ISR:
        isr = e.get("new_isr", e.get("isr"))
        grew = kind in {"log_isr_expand", "isr_expanded"}
        return ("isr", partition, grew, tuple(sorted(isr))) if isr is not None else None
    if kind in CONTROLLER and e.get("broker") is not None and e.get("epoch") is not None:
        return ("controller", int(e["broker"]), int(e["epoch"]))
    if kind in REGISTERED and e.get("broker") is not None:
        return ("registered", int(e["broker"]))
    if kind in FENCED and e.get("broker") is not None:
        return ("fenced", int(e["broker"]))
    if kind == "log_truncate":  # the fetcher and the log itself both say it
        return ("truncate", e.get("broker"), partition, e.get("offset"))
    return None


def fold(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sightings of one fact within FOLD_MS of its first become one entry: the earliest ts, the
    best sighting's kind and detail, `sources` and `seen` (source -> first ts). Distinct facts
    (another epoch, another ISR) stay apart, and so does a sighting FOLD_MS later."""
    out: list[dict[str, Any]] = []
    open_groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    groups: list[list[dict[str, Any]]] = []
    for e in sorted(events, key=lambda e: e["ts"]):
        key = _fact(e)
        if key is None:
            out.append(e)
            continue
        group = open_groups.get(key)
        if group is None or e["ts"] - group[0]["ts"] > FOLD_MS:
            group = open_groups[key] = []
            groups.append(group)
        group.append(e)
    out += [_one(g) if len(g) > 1 else g[0] for g in groups]
    out.sort(key=lambda e: (e["ts"], e.get("source") != "faults"))
    return out


def _one(group: list[dict[str, Any]]) -> dict[str, Any]:
    best = min(group, key=lambda e: PREFERENCE[e["kind"]])
    seen: dict[str, int] = {}
    for e in group:  # in time order, so the first ts per source
        seen.setdefault(_label(e), e["ts"])
    entry = {**best, "ts": group[0]["ts"], "sources": sorted(seen, key=SOURCE_ORDER.index),
             "seen": seen}
    for e in group:
        if e["kind"] != "log_follower_start":  # a follower's offset is its own, not the leader's
            for field in ("old", "new", "old_isr", "new_isr", "offset"):
                if entry.get(field) is None and e.get(field) is not None:
                    entry[field] = e[field]
    if best["kind"] in ELECTION:
        entry["detail"] = _election_detail(entry)
    return entry


def _leader(e: dict[str, Any]) -> int | None:
    """The leader an election sighting names (None: not an election, or no leader)."""
    kind = e.get("kind")
    if kind not in ELECTION:
        return None
    leader = e.get({"leader_changed": "new", "partition_online": "new",
                    "log_follower_start": "leader"}.get(str(kind), "broker"))
    return int(leader) if leader is not None and int(leader) >= 0 else None


def _election_detail(e: dict[str, Any]) -> str:
    leader = _leader(e)
    text = f"{e.get('partition')}: broker {leader} leads at epoch {e['epoch']}"
    if e.get("offset") is not None:
        text += f" from offset {int(e['offset']):,}"
    if e.get("old") is not None and e["old"] != leader:
        text += f" (was broker {e['old']})"
    return text


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
    """The observer's partition_offline until that partition has a leader again. The end is the
    observer's own sighting when it has one (its polling lag then cancels out), else the first."""
    open_at: dict[str, int] = {}
    out = []
    for e in events:
        partition = e.get("partition")
        if partition is None:
            continue
        if e["kind"] == "partition_offline" and e.get("source") == "observer":
            open_at.setdefault(partition, e["ts"])
        elif partition in open_at and _leader(e) is not None and e["kind"] != "log_follower_start":
            start = open_at.pop(partition)
            end = max(start, int(e.get("seen", {}).get("observer", e["ts"])))
            out.append({"partition": partition, "start": start, "end": end,
                        "ms": end - start, "reason": "no leader"})
    for partition, start in open_at.items():
        if end_ts is not None and end_ts > start:
            out.append({"partition": partition, "start": start, "end": end_ts,
                        "ms": end_ts - start, "reason": "no leader (until the end of the run)"})
    return sorted(out, key=lambda w: w["start"])


def report_entries(events: list[dict[str, Any]], fault_ts: int | None,
                   cap: int = TIMELINE_CAP) -> tuple[list[dict[str, Any]], int]:
    """The report's timeline: compact entries with deltas from the fault; the rest counted."""
    keep = ("ts", "kind", "partition", "broker", "severity", "detail", "source", "sources", "seen",
            "epoch", "offset", "old", "new", "action", "node")
    out = []
    for e in events[:cap]:
        entry = {k: e[k] for k in keep if k in e}
        entry["delta_ms"] = e["ts"] - fault_ts if fault_ts is not None else None
        out.append(entry)
    return out, max(0, len(events) - cap)


SHRANK = ("log_isr_shrink", "isr_shrank")
EXPANDED = ("log_isr_expand", "isr_expanded")


def _moved(e: dict[str, Any]) -> set[int]:
    """The replicas an ISR entry removed or added."""
    old, new = e.get("old_isr"), e.get("new_isr", e.get("isr"))
    if old is not None and new is not None:
        return set(map(int, old)) ^ set(map(int, new))
    return {int(e["replica"])} if e.get("replica") is not None else set()


def slow_links(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tie the ISR to the slowed links: each shrink that dropped a broker whose link was slowed
    says so in its detail, and each slowed broker gets one line: when its link was slowed,
    when it left an ISR (and how long that took), when the link was restored and when it
    rejoined. Events are changed in place; the lines are returned (time order)."""
    slowed: dict[int, dict[str, Any]] = {}  # broker -> its open line
    lines: list[dict[str, Any]] = []
    for e in events:
        if e.get("kind") == "fault" and e.get("action") in ("slow", "unslow"):
            broker = broker_id_of(e.get("node"))
            if e["action"] == "slow" and broker is not None:
                line = slowed.get(broker)
                if line is not None and line["unslowed_ts"] is not None:
                    line = None  # slowed again after a repair: a new line
                line = line or {"node": e["node"], "broker": broker,
                                              "slowed_ts": e["ts"], "left_isr_ts": None,
                                              "left_isr_ms": None, "unslowed_ts": None,
                                              "rejoined_ts": None}
                line["shape"] = str(e.get("note") or "").partition(": ")[2]
                if slowed.get(broker) is not line:
                    lines.append(line)
                slowed[broker] = line
            elif e["action"] == "unslow":
                for line in slowed.values():
                    if e.get("node") in (None, line["node"]):
                        line["unslowed_ts"] = e["ts"]
        elif e.get("kind") in SHRANK:
            hit = [b for b in sorted(_moved(e) & set(slowed))
                   if slowed[b]["unslowed_ts"] is None]
            if hit:
                e["slowed"] = hit
                e["detail"] += " (slowed link: " + ", ".join(
                    f"broker {b} for {(e['ts'] - slowed[b]['slowed_ts']) / 1000:.1f} s"
                    for b in hit) + ")"
            for broker in hit:
                line = slowed[broker]
                if line["left_isr_ts"] is None:
                    line["left_isr_ts"] = e["ts"]
                    line["left_isr_ms"] = e["ts"] - line["slowed_ts"]
        elif e.get("kind") in EXPANDED:
            for broker in _moved(e) & set(slowed):
                line = slowed[broker]
                if line["left_isr_ts"] is not None and line["rejoined_ts"] is None:
                    line["rejoined_ts"] = e["ts"]
    return lines


def smallest_isr(events: list[dict[str, Any]]) -> int | None:
    """The fewest in-sync replicas any ISR change of the run left (None: no change seen)."""
    sizes = [len(isr) for e in events if e.get("kind") in (*SHRANK, *EXPANDED)
             if (isr := e.get("new_isr", e.get("isr"))) is not None]
    return min(sizes, default=None)
