"""A load started for a screen: `kinspect load run` as its own process, and its status.

The TUI's `l` key starts one here and follows it through `load_status` once a second; the load
outlives the TUI (quitting says which keep running), and stops through `stop_load`. The status
is typed where it is read from the run dir (the settings, the producers' and the consumers'
counters: load/counts.py), so the screen reads fields, never keys; a session recording keeps
it as `LoadStatus.to_json` and the replay reads it back with `from_json`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.load.consumers.settings import consumer_dir
from kinspect.load.consumers.stats import STATS_DIR, read_consumer_stats
from kinspect.load.counts import ConsumerCounts, ProducerCounts
from kinspect.load.liveloss import LiveLoss
from kinspect.load.rundir import SETTINGS_FILE, load_running, new_run_dir
from kinspect.load.runsettings import LoadSettings
from kinspect.load.trend import RateSample, trend_from_json, trend_to_json

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

__all__ = ["LoadRequest", "LoadStatus", "load_status", "start_load", "stop_load"]

OUTPUT_FILE = "load.out"  # the process's own output: its last line says why it failed


@dataclass(frozen=True)
class LoadRequest:
    """What the load form asks for, as typed (the load command checks every value)."""

    topic: str = "test1"
    acks: str = "1"
    rate: str = "10000"
    count: str = "100000"
    producers: str = "1"

    def arguments(self) -> list[str]:
        return ["--topic", self.topic, "--acks", self.acks, "--rate", self.rate,
                "--count", self.count, "--producers", self.producers]


@dataclass(frozen=True)
class LoadStatus:
    """A run as the screen follows it. `settings` None: not written yet (the load starting);
    `stats` None: no producer has published its counts yet."""

    run_dir: Path
    running: bool
    settings: LoadSettings | None
    stats: ProducerCounts | None
    consumers: ConsumerCounts | None = None  # the group reading along, if one was started
    live: LiveLoss | None = None  # acknowledgements judged against the leaders now (the feed's)
    trend: tuple[RateSample, ...] = ()  # acked/failed per second, faults marked (the feed's)

    def topic(self) -> str:
        """The topic it writes to; "" before its settings are written."""
        if self.settings is None:
            return ""
        return self.settings.topic

    def consumers_running(self) -> bool:
        return self.consumers is not None and self.consumers.running

    def to_json(self) -> JsonObject:
        """As a session recording keeps it (the replay's load panel: `from_json`)."""
        return {"run_dir": str(self.run_dir), "running": self.running,
                "settings": _json_of(self.settings, {}), "stats": _json_of(self.stats, {}),
                "consumers": _json_of(self.consumers, None), "live": _json_of(self.live, None),
                "trend": trend_to_json(self.trend)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoadStatus:
        """A recorded status, of this kinspect or an older one (a key it did not write is
        what that writer meant by leaving it out); KeyError, TypeError or ValueError for a
        shape of another kind."""
        live = None
        if data.get("live"):
            live = LiveLoss.from_json(data["live"])
        return cls(Path(data["run_dir"]), bool(data["running"]),
                   LoadSettings.from_json(data["settings"]), _counts(data["stats"]),
                   _consumer_counts(data.get("consumers")), live,
                   trend_from_json(data.get("trend") or ()))


def _json_of(value: LoadSettings | ProducerCounts | ConsumerCounts | LiveLoss | None,
             empty: JsonObject | None) -> JsonObject | None:
    """A part's recorded form; `empty` when there is none (the recordings hold {} for settings
    not written yet, None for no consumer group)."""
    if value is None:
        return empty
    if isinstance(value, LoadSettings):
        return asdict(value)
    return value.to_json()


def _counts(data: Mapping[str, Any] | None) -> ProducerCounts | None:
    """None when no producer had published: {} now, the sum over none (producers 0) in a
    recording of an older kinspect."""
    if not data:
        return None
    if data.get("producers") == 0:
        return None
    return ProducerCounts.from_json(data)


def _consumer_counts(data: Mapping[str, Any] | None) -> ConsumerCounts | None:
    if not data:
        return None
    return ConsumerCounts.from_json(data)


def spawn(arguments: list[str], output: Path, what: str) -> None:
    """`kinspect ARGUMENTS` as a process of its own (it outlives the screen), its output in
    `output`; KinspectError with its last line when it refuses at once (bad input)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kinspect", *arguments], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    time.sleep(0.5)
    code = proc.poll()
    if code is not None and code != 0:
        lines = output.read_text().strip().splitlines()
        raise KinspectError(lines[-1] if lines else f"{what} exited with {code}")


def start_load(request: LoadRequest, origin: str = "tui") -> Path:
    """Start the load in a run dir of its own; its run dir, or KinspectError with the line the
    load command refused it with (a bad rate, an unknown topic)."""
    run_dir = new_run_dir()
    spawn(["load", "run", *request.arguments(), "--run-dir", str(run_dir), "--json",
           "--origin", origin], run_dir / OUTPUT_FILE, "load")
    return run_dir


def load_status(run_dir: Path | None) -> LoadStatus | None:
    """The run's settings, whether its load still runs, and its counters (None: no run)."""
    if run_dir is None:
        return None
    from kinspect.load.runstats import aggregate, read_stats  # the load extra, once one runs

    consumers = None
    if (consumer_dir(run_dir) / STATS_DIR).is_dir():
        consumers = ConsumerCounts.from_json({**read_consumer_stats(run_dir),
                                              "running": load_running(consumer_dir(run_dir))})
    published = read_stats(run_dir)
    stats = None  # no producer published yet: its counts are not known, not zero
    if published:
        stats = aggregate(published)
    return LoadStatus(run_dir, load_running(run_dir), _settings(run_dir), stats, consumers)


def _settings(run_dir: Path) -> LoadSettings | None:
    """The run's settings.json as far as it goes; None: not written yet (the load starting)."""
    try:
        data = json.loads((run_dir / SETTINGS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return LoadSettings.from_json(data)


def stop_load(run_dir: Path) -> bool:
    """`producer_run.stop_load`, imported when asked: the screen opens without the load extra."""
    from kinspect.load import producer_run

    return producer_run.stop_load(run_dir)
