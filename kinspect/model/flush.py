"""When a partition's log is fsynced: the flush settings, read as Kafka applies them (pure).

By default Kafka never fsyncs by itself (every flush setting is Long.MAX_VALUE) and relies on
replication: a power loss of every replica at once loses acknowledged writes. A setting not
told is Unknown with why, never Kafka's default: a default of ours would say "never" of a
cluster that syncs every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kinspect.model.facts import Fact, Unknown
from kinspect.model.views import ConfigValue

NEVER = 9223372036854775807  # Long.MAX_VALUE: Kafka's default, no fsync of its own
TOPIC_FLUSH_KEYS = ("flush.messages", "flush.ms")
BROKER_FLUSH_KEYS = ("log.flush.interval.messages", "log.flush.interval.ms",
                     "log.flush.scheduler.interval.ms")


@dataclass(frozen=True)
class Flush:
    """After how many messages, and how many ms, a log is fsynced (NEVER: not by Kafka)."""

    messages: Fact[int]
    ms: Fact[int]

    @property
    def never(self) -> bool:
        """Known to sync neither by count nor by time."""
        return self.messages == NEVER and self.ms == NEVER

    @property
    def unknown(self) -> Unknown | None:
        """Why a setting of it is not known (None: both are)."""
        for value in (self.messages, self.ms):
            if isinstance(value, Unknown):
                return value
        return None


def _number(values: Mapping[str, ConfigValue], key: str, who: str) -> Fact[int]:
    """The setting as a number, or why not (not told, or not a number)."""
    told = values.get(key)
    if told is None:
        return Unknown(f"{who} did not tell {key}")
    if not told.value.lstrip("-").isdigit():
        return Unknown(f"{key}={told.value} is not a number")
    return int(told.value)


def topic_flush(config: Fact[tuple[tuple[str, ConfigValue], ...]]) -> Fact[Flush]:
    """A topic's effective flush.messages and flush.ms (its describe says the broker's default
    when the topic sets none), or why its settings are unknown (refused: said as such)."""
    if isinstance(config, Unknown):
        return config
    values = dict(config)
    return Flush(_number(values, "flush.messages", "the topic's DescribeConfigs"),
                 _number(values, "flush.ms", "the topic's DescribeConfigs"))


def broker_flush(config: Mapping[str, ConfigValue]) -> Flush:
    """A broker's log.flush.interval.messages and log.flush.interval.ms; the latter null (not
    set, so not told) falls back to log.flush.scheduler.interval.ms, as Kafka does."""
    who = "the broker's DescribeConfigs"
    ms_key = "log.flush.interval.ms"
    if ms_key not in config:
        ms_key = "log.flush.scheduler.interval.ms"
    return Flush(_number(config, "log.flush.interval.messages", who), _number(config, ms_key, who))


def flush_words(value: Fact[int], unit: str) -> str:
    """"never" for Long.MAX_VALUE, "every message" for 1 message, else the number with its unit."""
    if isinstance(value, Unknown):
        return f"unknown ({value.reason})"
    if value == NEVER:
        return "never"
    if value == 1 and unit == "messages":
        return "every message"
    return f"{value:,} {unit}"


def flush_to_json(f: Flush) -> dict[str, object]:
    """{"messages": ..., "ms": ...}: each its number, or {"unknown": reason}."""
    return {"messages": _fact_json(f.messages), "ms": _fact_json(f.ms),
            "messages_words": flush_words(f.messages, "messages"),
            "ms_words": flush_words(f.ms, "ms")}


def _fact_json(value: Fact[int]) -> object:
    if isinstance(value, Unknown):
        return {"unknown": value.reason}
    return value


def _fact_back(raw: object) -> Fact[int]:
    if isinstance(raw, dict):
        return Unknown(str(raw.get("unknown")))
    if isinstance(raw, int):
        return raw
    return Unknown("not recorded")


def flush_from_json(d: Mapping[str, object]) -> Flush:
    return Flush(_fact_back(d.get("messages")), _fact_back(d.get("ms")))
