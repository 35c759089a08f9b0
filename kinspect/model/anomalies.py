"""What the post-mortem names, beside the name Jepsen's Kafka checker gives it, and whether
Kafka's guarantees allow it: the one place the docs' glossary, the report's words and the
lessons' reveal take these names from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Anomaly:
    """One thing the report counts: its key in report.json, Jepsen's name, what it is, and when
    Kafka's guarantees allow it (empty: never, under the settings that promise otherwise)."""

    key: str
    jepsen: str
    means: str
    allowed: str


ANOMALIES: tuple[Anomaly, ...] = (
    Anomaly("acked_lost", "lost-write (below what was read) and unseen (above)",
            "acknowledged, and not in the final log",
            "with acks=0 or 1, unclean leader election, or a power loss of every replica that "
            "held it; never with acks=all, min.insync.replicas >= 2 and unclean election off, "
            "while the replicas keep their disks"),
    Anomaly("offsets_rewritten", "inconsistent-offsets",
            "an acknowledged offset that holds another record in the final log: the log was "
            "truncated there and written again",
            "whenever an acknowledged write is lost and the partition is written past it"),
    Anomaly("duplicates", "duplicate",
            "a message written more than once",
            "with retries and idempotence off; never with enable.idempotence=true"),
    Anomaly("reordered", "nonmonotonic-send",
            "a message behind a later message of the same producer",
            "with retries and max.in.flight.requests.per.connection > 1 without idempotence"),
    Anomaly("failed_present", "a :fail write read back",
            "a send the client was told failed with a definite error, in the log anyway",
            "after a retry whose earlier attempt was written (a definite last error hides it)"),
    Anomaly("indefinite_present", "an :info write read back (no anomaly)",
            "a send with no definite answer, in the log", "always: it may or may not be written"),
    Anomaly("aborted_visible", "G1a (aborted read)",
            "an aborted transaction's record seen by a read_uncommitted reader of the output",
            "to read_uncommitted readers; never to read_committed ones"),
)
