"""Lag trend: how fast each consumer group's lag grows or shrinks (pure).

Fed every snapshot; keeps a few seconds of (time, lag) per group so a rate is measured over a
window, not between two polls a second apart (which would flicker with every batch).
"""

from __future__ import annotations

from collections import deque

from kinspect.model.snapshot import ClusterSnapshot

WINDOW_MS = 5_000


class LagTrend:
    def __init__(self, window_ms: int = WINDOW_MS) -> None:
        self.window_ms = window_ms
        self._seen: dict[str, deque[tuple[int, int]]] = {}

    def observe(self, snapshot: ClusterSnapshot) -> None:
        present = set()
        for group in snapshot.groups:
            lag = group.lag
            if lag is None:
                continue
            present.add(group.group_id)
            history = self._seen.setdefault(group.group_id, deque())
            if not history or history[-1][0] < snapshot.taken_at:
                history.append((snapshot.taken_at, lag))
            while len(history) > 2 and snapshot.taken_at - history[1][0] >= self.window_ms:
                history.popleft()
        for gone in set(self._seen) - present:
            del self._seen[gone]

    def per_second(self, group_id: str) -> float | None:
        """Lag change per second over the window (None until two points a second apart)."""
        history = self._seen.get(group_id)
        if not history or len(history) < 2:
            return None
        (t0, lag0), (t1, lag1) = history[0], history[-1]
        if t1 - t0 < 1000:
            return None
        return (lag1 - lag0) * 1000 / (t1 - t0)
