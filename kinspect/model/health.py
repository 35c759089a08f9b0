"""The ISR-health verdict for scripts: healthy, warning or critical (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from kinspect.model.snapshot import ClusterSnapshot


@dataclass(frozen=True)
class HealthReport:
    verdict: str  # healthy | warning | critical
    offline: tuple[str, ...]
    under_min_isr: tuple[str, ...]
    at_min_isr: tuple[str, ...]
    under_replicated: tuple[str, ...]
    controller_ok: bool
    brokers_registered: tuple[int, ...]
    brokers_expected: tuple[int, ...]
    risky_settings: tuple[str, ...]


def classify(s: ClusterSnapshot) -> HealthReport:
    parts = s.partitions()
    offline = tuple(p.name for p in parts if p.offline)
    under_min = tuple(p.name for p in parts if not p.offline and p.under_min_isr)
    at_min = tuple(p.name for p in parts if not p.offline and p.at_min_isr)
    under_rep = tuple(p.name for p in parts if not p.offline and p.under_replicated)
    controller_ok = s.controller.id is not None
    risky = tuple(w.message for w in s.warnings if w.kind not in {"no_controller"})
    if offline or under_min or not controller_ok:
        verdict = "critical"
    elif under_rep or at_min or risky:
        verdict = "warning"
    else:
        verdict = "healthy"
    return HealthReport(verdict, offline, under_min, at_min, under_rep, controller_ok,
                        # registered: in ZooKeeper, or in KRaft in the metadata (unfenced)
                        tuple(b.id for b in s.brokers if b.registered or b.fenced is False),
                        tuple(b.id for b in s.brokers if b.expected), risky)
