"""Load settings: validated once, saved in the run dir, turned into producer config.

The run dir holds no secret (it is what people attach to bug reports): settings.json keeps a
secret's reference (`${env:…}`, `${file:…}`, the lab's password file), or *** with a note; the
workers get the values on stdin from the runner (see producer_run.py), never from disk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.errors import KinspectError
from kinspect.load.rundir import SETTINGS_FILE, known_fields
from kinspect.profiles import MASK, is_secret, reference_of, resolve_reference
from kinspect.validation import number

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

SECRETS_NOTE = "secrets_note"  # in settings.json beside the fields: which values are masked


def optional(value: object, what: str, low: float, high: float, integer: bool = False,
             low_open: bool = False) -> None:
    """`validation.number` for a setting that may be None (not set)."""
    if value is not None:
        number(value, what, low, high, integer=integer, low_open=low_open)


@dataclass(frozen=True)
class LoadSettings:
    """Defaults follow the source material's producer: 100,000 messages at 10,000/s, acks=1."""

    topic: str
    bootstrap: str
    acks: str = "1"
    count: int | None = 100_000
    duration_s: float | None = None
    rate: float | None = 10_000.0  # None = as fast as possible
    producers: int = 1
    size: int = 100
    idempotent: bool = False
    retries: int | None = None
    delivery_timeout_ms: int | None = None
    max_in_flight: int | None = None
    linger_ms: int | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # The client's own failure modes: a generator killed (SIGKILL) this many seconds after it
    # starts, with messages still in librdkafka's buffer; and what a full buffer does to a
    # send: wait for room (the default) or refuse it (BufferError), as an application that
    # drops what it cannot send.
    crash_at_s: float | None = None
    buffer_full: str = "wait"
    run_id: str = ""  # set by run_load: every message value starts with `<run>-<producer>-<seq>|`

    def validate(self) -> None:
        """Every field in range and of its type (a run dir's settings may have been edited)."""
        self._check_types()
        if self.count is not None and self.duration_s is not None:
            raise KinspectError("give --count or --duration, not both")
        self._check_ranges()
        if self.idempotent and self.acks not in {"all", "-1"}:
            raise KinspectError("--idempotent needs --acks all (Kafka's rule)")
        if self.idempotent and self.max_in_flight is not None and self.max_in_flight > 5:
            raise KinspectError("--idempotent allows --max-in-flight 5 at most (Kafka's rule)")

    def _check_types(self) -> None:
        """The strings, booleans, tables and words (a number's type: `_check_ranges`)."""
        if not isinstance(self.topic, str) or not isinstance(self.bootstrap, str):
            raise KinspectError("topic and bootstrap must be strings")
        if self.acks not in {"0", "1", "all", "-1"}:
            raise KinspectError(f"--acks must be 0, 1 or all, not {self.acks!r}")
        if not isinstance(self.idempotent, bool):
            raise KinspectError(f"idempotent must be true or false, not {self.idempotent!r}")
        if not isinstance(self.extra, dict):
            raise KinspectError("extra must be a table of librdkafka properties")
        if self.buffer_full not in ("wait", "refuse"):
            raise KinspectError(f"--buffer-full must be wait or refuse, not {self.buffer_full!r}")

    def _check_ranges(self) -> None:
        """Each number in its range; None (not set) is always allowed where it may be."""
        optional(self.count, "--count", 1, 1_000_000_000, integer=True)
        optional(self.duration_s, "--duration", 0, 7 * 86400, low_open=True)
        optional(self.rate, "--rate", 0, 10_000_000, low_open=True)
        number(self.producers, "--producers", 1, 64, integer=True)
        number(self.size, "--size", 16, 1_000_000, integer=True)
        for name, low, high in (("retries", 0, 2_147_483_647), ("delivery_timeout_ms", 1, 2_147_483_647),
                                ("max_in_flight", 1, 1_000_000), ("linger_ms", 0, 900_000)):
            optional(getattr(self, name), "--" + name.replace("_", "-"), low, high, integer=True)
        optional(self.crash_at_s, "--crash-at", 0, 7 * 86400, low_open=True)

    def to_producer_config(self) -> dict[str, object]:
        # librdkafka's own log is quiet: every connection error of a fault experiment would
        # otherwise scroll past, and each delivery error is in the ledger anyway.
        config: dict[str, object] = {"acks": self.acks, "enable.idempotence": self.idempotent,
                                  "queue.buffering.max.messages": 200_000, "log_level": 2}
        optional = {"retries": self.retries, "delivery.timeout.ms": self.delivery_timeout_ms,
                    "max.in.flight.requests.per.connection": self.max_in_flight,
                    "linger.ms": self.linger_ms}
        config.update({k: v for k, v in optional.items() if v is not None})
        config.update(self.extra)
        return config

    def save(self, run_dir: Path, secret_files: Sequence[Path] = ()) -> None:
        """settings.json, with every secret of `extra` as its reference or *** (see module);
        a secret one of `secret_files` holds (the lab's password file) is kept as that file."""
        run_dir.mkdir(parents=True, exist_ok=True)
        data: JsonObject = asdict(self)
        data["extra"], masked = stored_extra(self.extra, secret_files)
        if masked:
            data[SECRETS_NOTE] = (f"{', '.join(masked)} given as a literal value (-X or the "
                                  f"profile): not kept here, shown as {MASK}; give it through "
                                  "${env:NAME} or ${file:/path} to have the reference kept")
        (run_dir / SETTINGS_FILE).write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, run_dir: Path) -> LoadSettings:
        """The settings as saved: `extra` holds references and masks, not secrets (see
        `with_secrets`)."""
        path = run_dir / SETTINGS_FILE
        if not path.exists():
            raise KinspectError(f"{path} is missing: not a kinspect run dir")
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise KinspectError(f"{path} cannot be read: "
                                f"{getattr(exc, 'strerror', None) or exc}") from None
        check_saved(data, str(path))
        missing = [n for n in ("topic", "bootstrap") if n not in data]
        if missing:
            raise KinspectError(f"{path} lacks {' and '.join(missing)}: not a kinspect run dir")
        return cls(**known_fields(cls, data))

    @classmethod
    def from_json(cls, data: object) -> LoadSettings | None:
        """The settings as a run dir being written or a session recording holds them, read as
        far as they go (the screen shows them; `load` is the run's own, checked reading): None
        when none were written yet; a field an older kinspect did not write is its default."""
        if not isinstance(data, dict) or not data:
            return None
        return cls(**{"topic": "", "bootstrap": "", **known_fields(LoadSettings, data)})

    def with_secrets(self, where: str = "settings.json") -> LoadSettings:
        """These settings with every `${env:…}`/`${file:…}` of `extra` read now; a masked
        literal cannot be had back (KinspectError)."""
        extra = {}
        for key, value in self.extra.items():
            if value == MASK:
                raise KinspectError(f"{where}: {key} was given as a literal value and is not "
                                    "kept in the run dir; give it again")
            extra[key] = resolve_reference(value, key, where)
        return replace(self, extra=extra)


def stored_extra(extra: dict[str, str], secret_files: Sequence[Path] = (),
                 ) -> tuple[dict[str, str], list[str]]:
    """What of `extra` may be written down: values read through a reference as that reference;
    a secret one of `secret_files` holds as that file; any other secret as ***. Returns the
    stored form and the keys masked."""
    stored: dict[str, str] = {}
    masked: list[str] = []
    for key, value in extra.items():
        reference = reference_of(value)
        if reference is not None:
            stored[key] = reference
        elif not is_secret(key, value):
            stored[key] = value
        elif (holder := _file_holding(value, secret_files)) is not None:
            stored[key] = f"${{file:{holder}}}"
        else:
            stored[key], masked = MASK, [*masked, key]
    return stored, masked


def _file_holding(value: str, files: Sequence[Path]) -> Path | None:
    """The first of these files that holds exactly this value (trailing newline aside)."""
    for path in files:
        try:
            if path.read_text().strip() == value:
                return path.resolve()
        except OSError:
            continue
    return None


def check_saved(data: object, where: str) -> None:
    """A run dir's saved settings (possibly partial, from an older kinspect) are of the right
    types and in range: one line naming the file, never a traceback later in the post-mortem."""
    if not isinstance(data, dict):
        raise KinspectError(f"{where} is not a JSON object")
    try:
        known = known_fields(LoadSettings, data)
        LoadSettings(**{"topic": "", "bootstrap": "", "count": None, **known}).validate()
    except KinspectError as exc:
        raise KinspectError(f"{where}: {exc}") from None

