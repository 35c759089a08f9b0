"""Since when each replica being added has not grown its log: not a question of its own, what
two answers of each poll say together (the reassignments, the brokers' own log ends)."""

from __future__ import annotations

from kinspect.model import Unknown
from kinspect.sources.probes.base import Ends, Key
from kinspect.sources.probes.cluster_probe import Reassignments

Replica = tuple[Key, int]  # a partition, and the broker its replica is being added on


class Stalls:
    """Each adding replica's last log end and since when it has been that (between polls)."""

    def __init__(self) -> None:
        self._progress: dict[Replica, tuple[int, int]] = {}  # end, since (ms)

    def since(self, moving: Reassignments, ends: Ends, now_ms: int) -> dict[Replica, int]:
        """Since when each replica being added, still behind, has not grown its log."""
        progress: dict[Replica, tuple[int, int]] = {}
        if isinstance(moving, Unknown):
            moving = {}
        for key, reassignment in moving.items():
            logs = ends.get(key, {})
            for broker in reassignment.adding:
                end = logs.get(broker)
                if end is not None:
                    progress[(key, broker)] = (end.log_end, self._since(key, broker, end.log_end,
                                                                         now_ms))
        self._progress = progress
        return {k: since for k, (_end, since) in progress.items() if since < now_ms}

    def _since(self, key: Key, broker: int, log_end: int, now_ms: int) -> int:
        last = self._progress.get((key, broker))
        if last is not None and last[0] == log_end:
            return last[1]
        return now_ms
