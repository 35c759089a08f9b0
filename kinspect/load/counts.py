"""A run's live counters as the screen reads them: the producers' (summed by runstats.aggregate
from each generator's published JSON) and the consumer group's (consumers/stats.py).

Light on purpose (no numpy, no pyarrow): the TUI and the replay read them without the load
extra. Each decodes once from the JSON it was read from or recorded as (`from_json`: a key an
older writer did not write is the zero it meant then) and encodes back to the same keys in the
same order (`to_json`, what a session recording keeps).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kinspect.load.rundir import known_fields

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject


@dataclass(frozen=True)
class ProducerCounts:
    """Totals over the producers; latency percentiles are the worst producer's (conservative)."""

    producers: int = 0
    sent: int = 0
    acked: int = 0
    failed: int = 0
    in_flight: int = 0
    rate: float = 0.0  # messages finished per second, of the producers still running
    failed_by_error: Mapping[str, int] = field(default_factory=dict)
    latency_p50_ms: float = 0.0
    latency_p99_ms: float = 0.0
    done: bool = False  # every producer finished
    ts: int = 0  # the newest publish (ms)

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProducerCounts:
        found = known_fields(cls, data)
        if found.get("failed_by_error") is None:
            found["failed_by_error"] = {}
        return cls(**found)


@dataclass(frozen=True)
class ConsumerCounts:
    """The consumer group reading along: totals over every consumer and incarnation, and
    whether the group still runs."""

    received: int = 0
    processed: int = 0
    failed: int = 0
    aborted: int = 0
    commits: int = 0
    crashes: int = 0
    incarnations: int = 0
    running: bool = False

    def bad(self) -> int:
        """The messages it did not process: failed, or aborted with a transaction."""
        return self.failed + self.aborted

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumerCounts:
        return cls(**known_fields(cls, data))

