"""Known or unknown: the one vocabulary for what a request could not tell.

A refused request (no permission), an unsupported one (an older Kafka) or one that got no
answer leaves a fact unknown. Unknown is a value with its reason, never a default: a flag that
depends on an unknown fact is unknown too, and a verdict is never better than what was seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Unknown:
    """What a request did not tell, and why, in words a person can act on
    ("no DescribeConfigs permission on topic orders", "Kafka 3.9 has no ELR")."""

    reason: str

    def __bool__(self) -> bool:  # an unknown flag is never silently taken as true or false
        raise TypeError(f"an unknown fact has no truth value ({self.reason})")


Fact: TypeAlias = T | Unknown

# How a reason says the asked node gave no answer at all (down, cut off, too slow): its own
# absence is what is wrong there, and other checks see it (the ISRs it left, the probes).
NOT_ANSWERED = "did not answer"


def unanswered(fact: Unknown) -> bool:
    return NOT_ANSWERED in fact.reason


def known(value: object) -> bool:
    return not isinstance(value, Unknown)
