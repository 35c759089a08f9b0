"""The kind of lab a scenario runs on: a mode (ZooKeeper or KRaft) and a Kafka release.

The workshop matrix is one column per platform: ZooKeeper 3.9, KRaft 3.9, KRaft 4.x. A
scenario may need more than a lab: KRaft's own failure modes need a controller quorum, the
eligible-leader-replica lessons need Kafka 4.x. What a platform cannot show is a skipped row
with its reason, never a run that demonstrates nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kinspect.lab import dist

# What a scenario's `needs` may name, and what each asks of the platform
# (docs/development/scenarios.md): netem is the kernel's, the rest are the lab's.
NEEDS: dict[str, str] = {
    "netem": "the kernel's netem (delay, loss), else tbf stands in where it can",
    "kraft": "a KRaft lab: a controller quorum to break",
    "elr": "Kafka 4.x in KRaft: eligible leader replicas (KIP-966) and feature levels",
}


@dataclass(frozen=True)
class Platform:
    """A lab's mode and its Kafka release (resolved: '4.x' is already e.g. 4.4.0)."""

    mode: str = "zookeeper"
    kafka: str = ""

    @classmethod
    def of(cls, mode: str | None, kafka: str | None = None) -> Platform:
        """The platform a request names (no mode: ZooKeeper on 3.x, KRaft on 4.x); a one-line
        error for a release kinspect cannot run."""
        release = dist.resolve_version(kafka)
        return cls(mode or ("zookeeper" if dist.supports_zookeeper(release) else "kraft"), release)

    @property
    def kraft(self) -> bool:
        return self.mode == "kraft"

    @property
    def major(self) -> int:
        return dist.parse_version(self.kafka)[0]

    @property
    def label(self) -> str:
        """"ZooKeeper 3.9.2", "KRaft 4.4.0": a column of the matrix."""
        return f"{'KRaft' if self.kraft else 'ZooKeeper'} {self.kafka}"

    @property
    def impossible(self) -> str | None:
        """Why no lab can be this platform (ZooKeeper mode on 4.x), else None."""
        if not self.kraft and not dist.supports_zookeeper(self.kafka):
            return f"Kafka {self.kafka} has no ZooKeeper mode (removed in 4.0)"
        return None

    @property
    def scopes(self) -> tuple[str, ...]:
        """The [expect.SCOPE] tables that apply here, in the order they override."""
        return (*(("kraft",) if self.kraft else ()), *(("kafka4",) if self.major >= 4 else ()))

    @property
    def fields(self) -> dict[str, str]:
        """Where a result row ran, as the row says it."""
        return {"mode": self.mode, "kafka": self.kafka}

    def refuses(self, needs: Sequence[str], features: bool = False) -> str | None:
        """Why this platform cannot show a scenario that needs these (None: it can)."""
        if self.impossible:
            return self.impossible
        if ("kraft" in needs or "elr" in needs) and not self.kraft:
            return "needs a KRaft lab (a controller quorum); this run is in ZooKeeper mode"
        if ("elr" in needs or features) and self.major < 4:
            return (f"needs Kafka 4.x (eligible leader replicas and feature levels); this run is "
                    f"on {self.kafka}")
        return None


def platforms(modes: Sequence[str] | None, versions: Sequence[str | None]
              ) -> tuple[list[Platform], list[str]]:
    """Every mode on every release, in that order, and one line for each pair that cannot be
    (ZooKeeper on 4.x): `--modes zookeeper,kraft --kafka 3.9.2,4.x` is three columns. No
    modes: each release in its own default (ZooKeeper on 3.x, KRaft on 4.x)."""
    chosen: list[Platform] = []
    dropped: list[str] = []
    for version in versions:
        for mode in modes or (None,):
            platform = Platform.of(mode, version)
            if platform.impossible:
                dropped.append(f"{platform.label}: no ZooKeeper mode in 4.x, left out")
            elif platform not in chosen:
                chosen.append(platform)
    return chosen, dropped
