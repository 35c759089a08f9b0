"""What the topics and brokers are set to (sources/configs.py asks DescribeConfigs), asked
with the slow questions; the last answer stands between them."""

from __future__ import annotations

from dataclasses import dataclass, field

from kinspect.model import ConfigValue, Fact, Unknown
from kinspect.sources.configs import describe_brokers, describe_topics
from kinspect.sources.probes.base import Asking, Poll

BrokerConfigs = dict[int, Fact[dict[str, ConfigValue]]]


@dataclass(frozen=True)
class TopicConfigs:
    """Each topic's settings, and why a topic's are unknown (a refusal said as such)."""

    configs: dict[str, dict[str, ConfigValue]] = field(default_factory=dict)
    unknown: dict[str, Unknown] = field(default_factory=dict)


class TopicConfigsProbe:
    def __init__(self, asking: Asking) -> None:
        self._asking = asking
        self.last = TopicConfigs()

    def topics(self) -> set[str]:
        """The topics the last answer has settings of (a new topic asks again at once)."""
        return set(self.last.configs)

    def asks(self, poll: Poll) -> bool:
        return poll.refresh

    def unasked(self, poll: Poll) -> TopicConfigs:
        return self.last

    def ask(self, poll: Poll) -> TopicConfigs:
        configs, unknown = describe_topics(self._asking.admin, list(poll.topics),
                                           self._asking.timeout_s, self.last.configs,
                                           poll.brokers, poll.controller)
        self.last = TopicConfigs(configs, unknown)
        return self.last


class BrokerConfigsProbe:
    def __init__(self, asking: Asking) -> None:
        self._asking = asking
        self.last: BrokerConfigs = {}

    def asks(self, poll: Poll) -> bool:
        return poll.refresh

    def unasked(self, poll: Poll) -> BrokerConfigs:
        return self.last

    def ask(self, poll: Poll) -> BrokerConfigs:
        self.last = describe_brokers(self._asking.admin, poll.brokers, self._asking.timeout_s)
        return self.last
