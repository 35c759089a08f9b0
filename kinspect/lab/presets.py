"""Broker settings presets: the 2018 timings of the source material, or Kafka 3.9's own defaults."""

from __future__ import annotations

from kinspect.errors import KinspectError

# The 2018 experiment's timings (fast failover for demos) with durable topic defaults.
DEMO: dict[str, str] = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "10000",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "auto.leader.rebalance.enable": "false",
    "auto.create.topics.enable": "false",
}

# Kafka 3.9's defaults, spelled out so `lab status` can show them.
MODERN: dict[str, str] = {
    "zookeeper.session.timeout.ms": "18000",
    "replica.lag.time.max.ms": "30000",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "auto.leader.rebalance.enable": "true",
    "auto.create.topics.enable": "true",
}

PRESETS = {"demo": DEMO, "modern": MODERN}

# In KRaft a broker's liveness is its heartbeat to the controller quorum, not a ZooKeeper
# session: the demo preset gives it the same 6 s the 2018 session had; modern, Kafka's own 9 s.
KRAFT_SESSION: dict[str, dict[str, str]] = {
    "demo": {"broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "1000"},
    "modern": {"broker.session.timeout.ms": "9000", "broker.heartbeat.interval.ms": "2000"},
}

# Settings every lab broker gets: small thread pools for a 2-core machine, quick group joins.
COMMON: dict[str, str] = {
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "background.threads": "4",
    "num.recovery.threads.per.data.dir": "1",
    "group.initial.rebalance.delay.ms": "0",
    "zookeeper.connection.timeout.ms": "30000",
    "controlled.shutdown.enable": "true",
    "delete.topic.enable": "true",
    "log.segment.bytes": "67108864",
    "log.retention.check.interval.ms": "300000",
}

# The values `lab status` shows: the ones that decide what the experiments do.
SHOWN_KEYS = (
    "zookeeper.session.timeout.ms",
    "broker.session.timeout.ms",
    "replica.lag.time.max.ms",
    "default.replication.factor",
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "offsets.topic.replication.factor",
    "auto.leader.rebalance.enable",
)


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    """`--broker-config key=value` pairs, validated."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise KinspectError(f"--broker-config expects key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def effective(preset: str, overrides: dict[str, str], mode: str = "zookeeper") -> dict[str, str]:
    """The broker settings a lab runs with: common, then preset, then user overrides. A KRaft
    lab has no ZooKeeper settings and gets the quorum's session in their place."""
    if preset not in PRESETS:
        raise KinspectError(f"unknown preset {preset!r} (choose from: {', '.join(PRESETS)})")
    settings = {**COMMON, **PRESETS[preset], **overrides}
    if mode != "kraft":
        return settings
    if any(key.startswith("zookeeper.") for key in overrides):
        raise KinspectError("a KRaft lab has no ZooKeeper: drop the zookeeper.* --broker-config")
    kraft = {k: v for k, v in settings.items() if not k.startswith("zookeeper.")}
    return {**kraft, **KRAFT_SESSION[preset], **overrides}
