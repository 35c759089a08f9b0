"""Per-second acked and failed rates of a load, with the seconds a fault was applied in."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

TREND_SECONDS = 120


@dataclass(frozen=True)
class RateSample:
    ts_ms: int
    acked_per_s: float
    failed_per_s: float
    fault: bool  # a fault was applied during this second


class RateTrend:
    """Per-second rates from the producers' running counters (the feed observes once a second)."""

    def __init__(self, keep: int = TREND_SECONDS) -> None:
        self.samples: deque[RateSample] = deque(maxlen=keep)
        self._last: tuple[int, int, int] | None = None
        self._faults: list[int] = []

    def fault_at(self, ts_ms: Iterable[int]) -> None:
        self._faults.extend(ts_ms)

    def observe(self, ts_ms: int, acked: int, failed: int) -> None:
        if self._last is not None and ts_ms > self._last[0]:
            seconds = (ts_ms - self._last[0]) / 1000
            since = self._last[0]
            fault = any(since < ts <= ts_ms for ts in self._faults)
            self._faults = [ts for ts in self._faults if ts > ts_ms]
            self.samples.append(RateSample(ts_ms, max(0.0, (acked - self._last[1]) / seconds),
                                           max(0.0, (failed - self._last[2]) / seconds), fault))
        self._last = (ts_ms, acked, failed)

    def frozen(self) -> tuple[RateSample, ...]:
        return tuple(self.samples)


def trend_to_json(samples: Iterable[RateSample]) -> list[list[float]]:
    return [[s.ts_ms, s.acked_per_s, s.failed_per_s, int(s.fault)] for s in samples]


def trend_from_json(rows: Iterable[list[float]]) -> tuple[RateSample, ...]:
    return tuple(RateSample(int(r[0]), float(r[1]), float(r[2]), bool(r[3])) for r in rows)
