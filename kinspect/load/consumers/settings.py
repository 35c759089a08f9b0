"""Consumer settings: how the group commits, fails and crashes, saved in the run dir.

The commit modes are the source material's consumer cases: `auto` (offsets committed on a
timer, whatever processing did), `before` (commit, then process), `after` (process, then
commit: the correct order) and `transaction` (with `output`: offsets sent inside the
transaction that writes the output, Kafka's exactly-once loop).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.load.rundir import known_fields
from kinspect.load.runsettings import optional, stored_extra
from kinspect.validation import number, topic_name

COMMIT_MODES = ("auto", "before", "after", "transaction")
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
CONSUMER_DIR = "consumer"  # in the run dir: settings, ledger, stats, summary of the consumers
SETTINGS_FILE = "settings.json"
# The output topic of a consume-transform-produce run, read back by verify twice: as a
# read_committed consumer sees it and as a read_uncommitted one does (aborted records too).
OUTPUT_COMMITTED_DIR = f"{CONSUMER_DIR}/output_committed"
OUTPUT_ALL_DIR = f"{CONSUMER_DIR}/output_all"


def consumer_dir(run_dir: Path) -> Path:
    return run_dir / CONSUMER_DIR


@dataclass(frozen=True)
class ConsumeSettings:
    """Defaults are the safe consumer: commit after processing, no failures, no crash."""

    topic: str
    bootstrap: str
    group: str
    commit: str = "after"
    auto_commit_ms: int = 1000
    consumers: int = 1
    batch: int = 100  # records per poll (and per transaction)
    process_ms: float = 0.0  # the time processing one record takes
    fail_rate: float = 0.0  # processing fails (with `output`: the transaction aborts)
    crash_after: int | None = None  # consumer 0 dies (SIGKILL) after receiving this many
    crash_at_s: float | None = None  # … or this many seconds after it started
    restart: bool = True  # a crashed consumer comes back (a new member: a rebalance)
    isolation: str = "read_committed"
    output: str | None = None  # consume-transform-produce into this topic, transactionally
    duration_s: float | None = None
    idle_stop_s: float | None = None  # stop when nothing arrived for this long (after a first)
    # the idle clock starts no sooner than this run dir's load ended: a scenario's group reads
    # through every fault (an hour's nemesis lost its group to a power cut at minute 2)
    idle_after_load: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    run_id: str = ""

    def validate(self) -> None:
        """Every field in range and of its type (a run dir's settings may have been edited)."""
        self._check_names()
        self._check_modes()
        self._check_ranges()
        if self.crash_after is not None and self.crash_at_s is not None:
            raise KinspectError("give --crash-after or --crash-at, not both")
        if not isinstance(self.restart, bool):
            raise KinspectError(f"restart must be true or false, not {self.restart!r}")
        if not isinstance(self.idle_after_load, bool):
            raise KinspectError(f"idle_after_load must be true or false, not "
                                f"{self.idle_after_load!r}")
        if self.output is not None:
            topic_name(self.output, "--output")
            if self.output == self.topic:
                raise KinspectError("--output must be another topic than --topic")
        if self.commit == "transaction" and self.output is None:
            raise KinspectError("--commit transaction needs --output (the offsets go into the "
                                "transaction that writes the output)")
        if not isinstance(self.extra, dict):
            raise KinspectError("extra must be a table of librdkafka properties")

    def _check_names(self) -> None:
        for name in ("topic", "bootstrap", "group"):
            if not isinstance(getattr(self, name), str):
                raise KinspectError(f"{name} must be a string")
        topic_name(self.topic, "--topic")
        if not self.group or len(self.group) > 249:
            raise KinspectError("--group must be a name of 1 to 249 characters")

    def _check_modes(self) -> None:
        if self.commit not in COMMIT_MODES:
            raise KinspectError(f"--commit must be one of {', '.join(COMMIT_MODES)}, "
                                f"not {self.commit!r}")
        if self.isolation not in ISOLATION_LEVELS:
            raise KinspectError(f"--isolation must be one of {', '.join(ISOLATION_LEVELS)}, "
                                f"not {self.isolation!r}")

    def _check_ranges(self) -> None:
        """Each number in its range; None (not set) is always allowed where it may be."""
        number(self.auto_commit_ms, "--auto-commit-ms", 1, 3_600_000, integer=True)
        number(self.consumers, "--consumers", 1, 64, integer=True)
        number(self.batch, "--batch", 1, 100_000, integer=True)
        number(self.process_ms, "--process-ms", 0, 60_000)
        number(self.fail_rate, "--fail-rate", 0, 1)
        optional(self.crash_after, "--crash-after", 1, 1_000_000_000, integer=True)
        optional(self.crash_at_s, "--crash-at", 0, 7 * 86400, low_open=True)
        optional(self.duration_s, "--duration", 0, 7 * 86400, low_open=True)
        optional(self.idle_stop_s, "--idle-stop", 0, 7 * 86400, low_open=True)

    @property
    def transactional(self) -> bool:
        return self.output is not None

    def consumer_config(self) -> dict[str, object]:
        """librdkafka's consumer properties for this mode (quiet: faults make noise)."""
        auto = self.commit == "auto"
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "enable.auto.commit": auto, "auto.commit.interval.ms": self.auto_commit_ms,
            "auto.offset.reset": "earliest", "isolation.level": self.isolation,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
            "enable.partition.eof": False, "log_level": 2,
        }
        config.update(self.extra)
        return config

    def save(self, run_dir: Path, secret_files: Sequence[Path] = ()) -> None:
        """settings.json with every secret of `extra` as its reference or *** (as the
        producer's: the workers get the values on a pipe, see producer_run.py)."""
        folder = consumer_dir(run_dir)
        folder.mkdir(parents=True, exist_ok=True)
        data = asdict(self)
        data["extra"], _masked = stored_extra(self.extra, secret_files)
        (folder / SETTINGS_FILE).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, run_dir: Path) -> ConsumeSettings:
        path = consumer_dir(run_dir) / SETTINGS_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise KinspectError(f"{path} is missing: no consumers ran in {run_dir}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise KinspectError(f"{path} cannot be read: "
                                f"{getattr(exc, 'strerror', None) or exc}") from None
        if not isinstance(data, dict):
            raise KinspectError(f"{path} is not a JSON object")
        try:
            settings = cls(**known_fields(cls, data))
            settings.validate()
        except (TypeError, KinspectError) as exc:
            raise KinspectError(f"{path}: {exc}") from None
        return settings

    def with_run(self, run_id: str) -> ConsumeSettings:
        return replace(self, run_id=run_id)
