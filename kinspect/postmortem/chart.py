"""timeline.png: acked and failed messages per second, with faults and elections marked."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, no GUI toolkit: this runs in terminals and CI
import matplotlib.dates as mdates
import matplotlib.pyplot as plt

MARKED = {"fault", "leader_changed", "partition_online", "partition_offline", "log_leader_start",
          "log_leader_and_isr",
          "log_truncate", "controller_changed", "log_zk_expired"}


_EPOCH = datetime(1970, 1, 1)


def _when(ts_ms: float) -> float:
    """Epoch ms -> matplotlib's date number (days since 1970) of the local wall clock."""
    return (datetime.fromtimestamp(ts_ms / 1000) - _EPOCH).total_seconds() / 86400


def _dense(per_second: list[dict[str, Any]]) -> tuple[list[int], list[int], list[int]]:
    """Seconds without any report are zeros, not a straight line between their neighbours."""
    if not per_second:
        return [], [], []
    by = {int(r["second"]): r for r in per_second}
    first, last = min(by), max(by)
    # A very long run (days): plot only the seconds there are.
    keys = sorted(by) if last - first > 200_000 else list(range(first, last + 2))
    return (keys, [int(by[k]["acked"]) if k in by else 0 for k in keys],
            [int(by[k]["failed"]) if k in by else 0 for k in keys])


def draw(per_second: list[dict[str, Any]], events: list[dict[str, Any]],
         attribution: list[dict[str, Any]], path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(11, 4.5), dpi=100)
    try:
        seconds, acked, failed = _dense(per_second)
        xs = [_when(sec * 1000) for sec in seconds]
        ax.step(xs, acked, where="post", color="tab:green", lw=1.2, label="acked/s")
        ax.step(xs, failed, where="post", color="tab:red", lw=1.2, label="failed/s")
        lo = per_second[0]["second"] * 1000 - 2000 if per_second else None
        hi = per_second[-1]["second"] * 1000 + 3000 if per_second else None
        for i, a in enumerate(attribution):
            if a["first_ack_ts"] is not None:
                ax.axvspan(_when(a["first_ack_ts"]), _when(a["last_ack_ts"]), color="orange", alpha=0.25,
                           label=None if i else "acknowledged, then lost")
        labelled: set[str] = set()
        for e in events:
            if e["kind"] not in MARKED or (lo is not None and not lo <= e["ts"] <= (hi or 0)):
                continue
            fault = e["kind"] == "fault"
            color = "black" if fault else "tab:blue"
            label = "fault" if fault else "election / leader event"
            ax.axvline(_when(e["ts"]), color=color, ls="--" if fault else ":", lw=1,
                       label=None if label in labelled else label)
            labelled.add(label)
            if fault or e["kind"] in {"leader_changed", "log_leader_start", "log_truncate"}:
                ax.annotate(str(e["detail"])[:40], (_when(e["ts"]), 1.0),
                            xycoords=("data", "axes fraction"), rotation=90, fontsize=7,
                            va="top", ha="right", color=color)
        ax.set_title(title)
        ax.set_ylabel("messages per second")
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))  # type: ignore[no-untyped-call]
        ax.grid(alpha=0.3)
        if per_second or events:
            ax.legend(loc="upper left", fontsize=8)
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
