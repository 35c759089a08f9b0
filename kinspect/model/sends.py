"""What a send's answer says about whether its message was written: Jepsen's ok, fail and info.

An acknowledgement says written. A definite error says the broker or the client refused the
message before it was written. An indefinite answer leaves it open: a timeout, a connection
lost with the request in flight, or no answer at all (the generator died). Such a message may
be in the log or not. Finding it there is no anomaly. Finding a definitely failed message
there is one worth naming: a retry can write a message whose last attempt then failed.

The ledger keeps librdkafka's error name with each failed send; this table is the one place
that says which names leave the outcome open. A name not listed is a definite failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class Answer(StrEnum):
    """A send's outcome in three values (the ledger's status and error, read together)."""

    OK = "ok"
    FAILED = "failed"
    INDEFINITE = "indefinite"

    @property
    def jepsen(self) -> str:
        """Jepsen's name for it (a history's :type)."""
        return JEPSEN_TYPES[self]


JEPSEN_TYPES: Mapping[Answer, str] = {Answer.OK: ":ok", Answer.FAILED: ":fail",
                                      Answer.INDEFINITE: ":info"}
ANSWER_MEANS: Mapping[Answer, str] = {
    Answer.OK: "acknowledged: written, as far as the producer's acks setting promises; missing "
               "from the log, it is acknowledged-and-lost (`acked_lost`)",
    Answer.FAILED: "a definite error: refused before it was written; found in the log anyway, "
                   "it is named (`failed_present`)",
    Answer.INDEFINITE: "timed out, cut off, or never answered: it may have been written; in the "
                       "log or not, no anomaly (`indefinite`, `indefinite_present`)",
}

# librdkafka's error names after which the message may have been written, and why.
INDEFINITE_ERRORS: Mapping[str, str] = {
    "_MSG_TIMED_OUT": "no answer within message.timeout.ms; it may have been sent and written",
    "_TIMED_OUT": "the request timed out in flight",
    "_TRANSPORT": "the connection broke with the request in flight",
    "NETWORK_EXCEPTION": "the connection broke with the request in flight",
    "REQUEST_TIMED_OUT": "the leader wrote it, and the followers did not confirm in time",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "the leader wrote it, then the ISR fell below "
                                        "min.insync.replicas",
    "_PURGE_INFLIGHT": "purged while in flight",
}

# The ledger's status words (load/ack_ledger.py) that are not a failure with an error name.
ACKED_STATUS, FAILED_STATUS, UNANSWERED_STATUS = "acked", "failed", "unknown"


def answer(status: str, error: str | None) -> Answer:
    """The outcome of one ledger row: its status, and for a failure its error's name."""
    if status == ACKED_STATUS:
        return Answer.OK
    if status == FAILED_STATUS and error not in INDEFINITE_ERRORS:
        return Answer.FAILED
    return Answer.INDEFINITE
