"""How bad a thing is: one vocabulary for events, cluster warnings and unmade checks (pure).

The values are what JSON carries, so they stay the words each producer wrote before there was
one vocabulary: an observed event is `error` at worst (timeline.jsonl, `watch --jsonl`), a
finding about the cluster `critical` (Nagios' word, as `kinspect health` says it). Both rank
the same: something is broken now.
"""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    INFO = "info"  # said, never a problem of its own
    WARN = "warn"  # one more failure away from trouble
    ERROR = "error"  # an observed event: something broke (a leader lost, a broker fenced)
    CRITICAL = "critical"  # a finding: the cluster is broken now (writes refused, no leader)

    @property
    def rank(self) -> int:
        """0 info, 1 warn, 2 error or critical: to compare, and to pick the worst."""
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARN: 1, Severity.ERROR: 2, Severity.CRITICAL: 2}
