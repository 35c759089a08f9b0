"""report.json, report.md and the plain-words paragraph, from the job's small results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from kinspect.lab.topology import broker_node
from kinspect.model.events import EventKind, LogKind, TimelineEvent

MD_RANGES = 10  # lost ranges per producer in report.md (report.json has more)
COUNTS = ("sent", "acked", "failed", "unknown", "in_log_ids", "acked_lost", "unacked_present",
          "unknown_present", "not_in_ledger", "duplicates", "duplicate_ids")


def clock(ts: int | None) -> str:
    """Local wall clock with tenths, as the brokers' logs and the demo narration use it."""
    if ts is None:
        return "?"
    moment = datetime.fromtimestamp(ts / 1000)
    return moment.strftime("%H:%M:%S") + f".{moment.microsecond // 100_000}"


def seconds(ms: int | None) -> str:
    return "?" if ms is None else f"{ms / 1000:+.1f} s"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def duration(ms: int) -> str:
    return f"{ms} ms" if abs(ms) < 1000 else f"{ms / 1000:.1f} s"


def totals(groups: list[dict[str, Any]]) -> dict[str, int]:
    return {k: int(sum(g[k] or 0 for g in groups)) for k in COUNTS}


def partition_rows(groups: list[dict[str, Any]], epochs: list[dict[str, Any]],
                   log_stats: list[dict[str, Any]], partitions: list[int]) -> list[dict[str, Any]]:
    """One row per partition seen anywhere; ids with no partition (never sent) are left out."""
    stats = {int(s["partition"]): s for s in log_stats}
    keys = sorted({int(g["pp"]) for g in groups if g["pp"] is not None and g["pp"] >= 0}
                  | set(stats) | set(partitions))
    rows = []
    for p in keys:
        row: dict[str, Any] = {"partition": p, **totals([g for g in groups if g["pp"] == p])}
        s = stats.get(p, {})
        row["in_log"] = int(s.get("in_log") or 0)
        row["foreign"] = int(s.get("foreign") or 0)
        row["other_runs"] = int(s.get("other_runs") or 0)
        row["reordered"] = int(s.get("reordered") or 0)
        row["final_log"] = p in partitions
        by_epoch: dict[str, int] = {}
        for e in sorted(epochs, key=lambda e: e["epoch"] if e["epoch"] is not None else -1):
            if e["pp"] == p:
                name = str(e["epoch"]) if e["epoch"] is not None else "unknown"
                by_epoch[name] = by_epoch.get(name, 0) + int(e["count"])
        row["lost_by_epoch"] = by_epoch
        rows.append(row)
    return rows


def attribution(epochs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lost messages by (partition, leader epoch, broker), largest first. `method` says how we
    know: "measured" (every one found in a kept replica snapshot), "inferred" (none), or "mixed"
    (`measured` of them were: a zombie keeps acknowledging for a moment after the heal, past
    the snapshot taken before it)."""
    rows: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for e in epochs:
        key = (e["pp"], e["epoch"], e["broker"])
        row = rows.setdefault(key, {"partition": e["pp"], "leader_epoch": e["epoch"],
                                    "broker": e["broker"], "count": 0, "measured": 0,
                                    "first_ack_ts": e["first_ack_ts"], "last_ack_ts": e["last_ack_ts"],
                                    "first_offset": e["first_offset"], "last_offset": e["last_offset"]})
        row["count"] += int(e["count"])
        row["measured"] += int(e["count"]) if e["method"] == "measured" else 0
        for field, pick in (("first_ack_ts", min), ("last_ack_ts", max), ("first_offset", min),
                            ("last_offset", max)):
            values = [v for v in (row[field], e[field]) if v is not None]
            row[field] = pick(values) if values else None
    for row in rows.values():
        row["method"] = ("measured" if row["measured"] == row["count"]
                         else "inferred" if row["measured"] == 0 else "mixed")
        row["epoch_inferred"] = row["method"] != "measured"
    return sorted(rows.values(), key=lambda a: (-a["count"], a["partition"], a["leader_epoch"] or -1))


def blamed(report: dict[str, Any]) -> dict[int | None, int]:
    """Lost messages per acknowledging broker (None: unknown), over every partition."""
    out: dict[int | None, int] = {}
    for a in report.get("attribution") or []:
        out[a.get("broker")] = out.get(a.get("broker"), 0) + int(a["count"])
    return out


def ranges_by_producer(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, int]]:
    ranges: dict[str, list[list[int]]] = {}
    more: dict[str, int] = {}
    for r in rows:
        key = str(r["producer"])
        ranges.setdefault(key, []).append([int(r["lo"]), int(r["hi"])])
        more[key] = int(r["ranges"]) - len(ranges[key])
    return ranges, {k: v for k, v in more.items() if v > 0}


def explain(report: dict[str, Any], events: Sequence[TimelineEvent],
            leaders: dict[tuple[str, int], tuple[int, int]]) -> str:
    """One paragraph: what was lost, who acknowledged it when, and what the cluster did."""
    acked, lost = report["acked"], report["acked_lost"]
    zero_note = " (with acks=0 'acknowledged' only means handed to the network)" \
        if report.get("acks") == "0" else ""
    if lost == 0:
        text = (f"No acknowledged message was lost: all {plural(acked, 'acknowledged message')} "
                f"{'is' if acked == 1 else 'are'} in the final log{zero_note}.")
    else:
        text = f"{plural(lost, 'acknowledged message')} {'was' if lost == 1 else 'were'} lost{zero_note}"
        top = report["attribution"][0]
        who = f"broker {top['broker']}" if top["broker"] is not None else "an unknown broker"
        epoch = f"at leader epoch {top['leader_epoch']}" if top["leader_epoch"] is not None \
            else "at an unknown leader epoch"
        epoch += {"measured": " (measured: found in its kept log segments)",
                  "inferred": " (inferred from the brokers' leadership history)",
                  "mixed": f" (measured for {top.get('measured', 0):,} of them, found in its kept log "
                           "segments; the rest inferred from the brokers' leadership history)"}.get(
                      str(top.get("method")), "")
        share = "" if top["count"] == lost else f" ({top['count']:,} of them)"
        text += (f": {who} acknowledged them{share} {epoch} between {clock(top['first_ack_ts'])} "
                 f"and {clock(top['last_ack_ts'])}")
        text += _context(report, top, events, leaders) + "."
        if top["broker"] is None and top["leader_epoch"] is not None:
            text += (f" Nothing recorded says which broker led epoch {top['leader_epoch']} "
                     "(no timeline or broker logs cover it).")
    extras = _extras(report)
    if extras:
        text += " " + "; ".join(extras)[0].upper() + "; ".join(extras)[1:] + "."
    return text


def _extras(report: dict[str, Any]) -> list[str]:
    """The sentences beside the verdict: what the client did, copies, order, recovery."""
    extras = []
    if report["unacked_present"]:
        known = report.get("unknown_present") or 0
        extras.append(f"{plural(report['unacked_present'], 'message')} the producer never saw "
                      "acknowledged are in the log anyway (not an error"
                      + (f"; {known:,} of them unknown: sent by a generator that died before "
                         "its ledger recorded an answer" if known else "") + ")")
    if report.get("client_lost"):
        extras.append(f"{plural(report['client_lost'], 'message')} handed to the client "
                      f"{'was' if report['client_lost'] == 1 else 'were'} never delivered: the "
                      "generator died with them in librdkafka's buffer (the client's loss, not "
                      "the brokers')")
    if report.get("refused"):
        extras.append(f"{plural(report['refused'], 'send')} "
                      f"{'was' if report['refused'] == 1 else 'were'} refused by the client "
                      "because its buffer was full (_QUEUE_FULL: never sent, not a broker's loss)")
    if report["duplicates"]:
        extras.append(f"{plural(report['duplicates'], 'extra copy', 'extra copies')} of "
                      f"{plural(report['duplicate_ids'], 'message')} were written (retries without "
                      "idempotence)")
    if report.get("other_runs_records"):
        extras.append(f"{plural(report['other_runs_records'], 'record')} of other runs "
                      f"{'is' if report['other_runs_records'] == 1 else 'are'} in the topic too "
                      "(not counted here)")
    if report["reordered"]:
        extras.append(f"{plural(report['reordered'], 'message')} "
                      f"{'sits' if report['reordered'] == 1 else 'sit'} behind a later message of "
                      "the same producer")
    after, kept = report.get("first_ack_after_fault_ms"), report.get("first_kept_ack_after_fault_ms")
    if after is not None:
        extras.append(f"the first successful acknowledgement after the fault came {duration(after)} "
                      "after it" + (f", the first one that lasted {duration(kept)} after it"
                                    if kept is not None and kept != after else ""))
    return extras


def _context(report: dict[str, Any], top: dict[str, Any], events: Sequence[TimelineEvent],
             leaders: dict[tuple[str, int], tuple[int, int]]) -> str:
    broker, epoch, partition = top["broker"], top["leader_epoch"], f"{report['topic']}-{top['partition']}"
    parts = []
    fault = report.get("fault")
    if fault and broker is not None and fault.get("node") == broker_node(broker):
        parts.append(f", after the fault ({fault['action']} {fault['node']} at {clock(fault['ts'])})")
    expired = [e for e in events if e.kind in {LogKind.ZK_EXPIRED, EventKind.BROKER_GONE}
               and e.broker == broker and broker is not None]
    if expired:
        parts.append(f"; it lost ZooKeeper at {clock(expired[0].ts)}")
    fenced = [e for e in events if e.kind in {LogKind.BROKER_FENCED, EventKind.BROKER_FENCED}
              and e.broker == broker and broker is not None]
    if fenced and not expired:
        parts.append(f"; the controller quorum fenced it at {clock(fenced[0].ts)}")
    if epoch is not None:
        later = sorted((e, b, ts) for (p, e), (b, ts) in leaders.items() if p == partition and e > epoch)
        if later:
            e2, b2, ts2 = later[0]
            when = "had already made" if ts2 <= (top["last_ack_ts"] or 0) else "then made"
            parts.append(f"; the controller {when} broker {b2} leader at {clock(ts2)} (epoch {e2})")
    truncs = [e for e in events if e.kind is LogKind.TRUNCATE and e.broker == broker
              and e.partition in {partition, None} and e.ts >= (top["first_ack_ts"] or 0)]
    if truncs and broker is not None:
        parts.append(f"; when broker {broker} came back it truncated its log to offset "
                     f"{truncs[0].offset:,}")
    return "".join(parts)


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# Post-mortem: {report['run_dir']}", "",
             f"Run `{report.get('run_id') or '(no id)'}`, topic `{report['topic']}`, "
             f"acks={report['acks']}, {report['engine']}, {report['seconds']:.1f} s.", "",
             report["explanation"], "", "| | messages |", "|---|---:|"]
    for key in ("sent", "acked", "failed", "refused", "unknown", "client_lost", "in_log",
                "acked_lost", "unacked_present", "duplicates", "reordered"):
        lines.append(f"| {key.replace('_', ' ')} | {report.get(key) or 0:,} |")
    if report.get("live_lost") is not None:
        lines.append(f"| acked lost, as judged live | {report['live_lost']:,} |")
    lines += consumer_markdown(report.get("consumers"))
    lines += ["", "## Per partition", "", "| partition | acked | in log | acked lost | unacked present "
              "| duplicates | reordered | lost by epoch |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in report["partitions"]:
        epochs = ", ".join(f"{k}: {v:,}" for k, v in p["lost_by_epoch"].items()) or "-"
        log = f"{p['in_log']:,}" if p["final_log"] else "no final log"
        lines.append(f"| {p['partition']} | {p['acked']:,} | {log} | {p['acked_lost']:,} | "
                     f"{p['unacked_present']:,} | {p['duplicates']:,} | {p['reordered']:,} | {epochs} |")
    if report["attribution"]:
        lines += ["", "## Lost, by who acknowledged them", "", "| partition | epoch | broker | lost | "
                  "acked from | to | how we know |", "|---:|---:|---:|---:|---|---|---|"]
        for a in report["attribution"]:
            broker = a["broker"] if a["broker"] is not None else "unknown"
            how = a["method"] if a["method"] != "mixed" else f"{a['measured']:,} measured, rest inferred"
            lines.append(f"| {a['partition']} | {a['leader_epoch']} | {broker} | "
                         f"{a['count']:,} | {clock(a['first_ack_ts'])} | {clock(a['last_ack_ts'])} | "
                         f"{how} |")
        lines += ["", "Lost ids (producer: seq ranges):", ""]
        for producer, ranges in report["lost_ranges"].items():
            shown = ", ".join(f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in ranges[:MD_RANGES])
            more = report["lost_ranges_more"].get(producer, 0) + max(0, len(ranges) - MD_RANGES)
            lines.append(f"- {producer}: {shown}" + (f" and {more:,} more ranges" if more else ""))
    lines += slow_link_markdown(report.get("slow_links") or [])
    lines += ["", "## Unavailability", ""]
    if report["unavailable"]:
        lines += [f"- {w['partition']}: {clock(w['start'])} → {clock(w['end'])} ({w['ms'] / 1000:.1f} s, "
                  f"{w['reason']})" for w in report["unavailable"]]
    else:
        lines.append("No window without a leader or without successful acknowledgements.")
    lines += ["", "## Timeline", ""]
    if not report["timeline"]:
        lines.append("No timeline was recorded (no timeline.jsonl, faults.jsonl or broker logs).")
    for e in report["timeline"]:
        seen = f" [{', '.join(e['sources'])}]" if len(e.get("sources") or []) > 1 else ""
        lines.append(f"- {clock(e['ts'])} ({seconds(e['delta_ms'])}) {e['detail']}{seen}")
    if report.get("timeline_more"):
        lines.append(f"- … and {report['timeline_more']:,} more events")
    if report["notes"]:
        lines += ["", "## Notes", "", *[f"- {n}" for n in report["notes"]]]
    return "\n".join(lines) + "\n"


def slow_link_markdown(links: list[dict[str, Any]]) -> list[str]:
    """One line per slowed link: the shape, and what the ISR did about it."""
    if not links:
        return []
    lines = ["", "## Slow links", ""]
    for link in links:
        text = f"- {link['node']}: {link.get('shape') or 'slowed'} from {clock(link['slowed_ts'])}"
        if link["left_isr_ts"] is not None:
            text += (f"; left the ISR at {clock(link['left_isr_ts'])}, "
                     f"{link['left_isr_ms'] / 1000:.1f} s later")
        else:
            text += "; never left the ISR"
        if link["unslowed_ts"] is not None:
            text += f"; full speed again at {clock(link['unslowed_ts'])}"
        if link["rejoined_ts"] is not None:
            text += f"; back in the ISR at {clock(link['rejoined_ts'])}"
        lines.append(text)
    return lines


def consumer_markdown(side: dict[str, Any] | None) -> list[str]:
    """The consumer group's section: counts, causes, Jepsen's names with their definitions."""
    if not side:
        return []
    lines = ["", f"## Consumer group `{side['group']}` (commit {side['commit']})", "",
             "| | records |", "|---|---:|"]
    for key in ("answered_for", "processed", "never_processed", "committed_unprocessed",
                "processed_twice", "redelivered_records", "unconsumed_at_end"):
        lines.append(f"| {key.replace('_', ' ')} | {side[key]:,} |")
    output = side.get("output_counts")
    if output:
        lines.append(f"| output, read_committed | {output['committed_records']:,} |")
        lines.append(f"| output, read_uncommitted | {output['all_records']:,} |")
        lines.append(f"| aborted, visible to read_uncommitted | {output['aborted_visible']:,} |")
    causes = [(c, n) for c, n in side["never_processed_by_cause"].items() if n]
    if causes:
        lines += ["", "Never processed, by cause:", ""]
        lines += [f"- {side['cause_definitions'][c]}: {n:,}" for c, n in causes]
    lines += ["", "Jepsen's names:", ""]
    lines += [f"- {name}: {side['jepsen'][name]:,} ({definition})"
              for name, definition in side["jepsen_definitions"].items()]
    return lines


def summary(report: dict[str, Any]) -> str:
    """The compact human summary for stdout."""
    return "\n".join([
        f"sent {report['sent']:,}  acked {report['acked']:,}  failed {report['failed']:,}  "
        f"unknown {report['unknown']:,}  in log {report['in_log']:,}",
        f"acked but lost {report['acked_lost']:,}  unacked present {report['unacked_present']:,}  "
        f"duplicates {report['duplicates']:,}  reordered {report['reordered']:,}",
        report["explanation"], f"report: {report['out']}"])


def write(report: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))
