"""Every exit code kinspect returns, declared once (pure): the code, which command says it,
its word and what it means.

The health verdicts' codes (`Verdict.exit_code`, Nagios' OK, WARNING, CRITICAL, UNKNOWN),
doctor's (its `--help` epilog and `Diagnosis.exit_code`), bad input's (`KinspectError`, a usage
error) and an interrupted command's are read from here, and so is the reference page of exit
codes (docs.generate). The CLI's dispatcher and `KinspectError` keep literals of their own
(importing the model would slow every start): tests/cli/test_exit_codes.py holds them to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Scope(StrEnum):
    """Which commands return a code with this meaning."""

    EVERY = "every command"
    HEALTH = "health"  # `health`, `health --all` (the worst of its clusters) and the exporter's
    DOCTOR = "doctor"


@dataclass(frozen=True)
class ExitCode:
    """One exit code as one command (or every command) means it."""

    code: int
    scope: Scope
    word: str  # for health: the verdict (`health --json`'s "verdict")
    means: str


DONE = ExitCode(0, Scope.EVERY, "done", "the command did what it was asked")
HEALTHY = ExitCode(0, Scope.HEALTH, "healthy", "every check was made and passed")
WARNING = ExitCode(1, Scope.HEALTH, "warning",
                   "warnings only (under-replicated, at min ISR, risky settings, a stalled "
                   "reassignment), and nothing it could not check could be critical")
CRITICAL = ExitCode(2, Scope.HEALTH, "critical",
                    "offline or unavailable partitions, under min ISR, no controller, "
                    "ZooKeeper unreachable")
UNKNOWN = ExitCode(3, Scope.HEALTH, "unknown",
                   "not judged: a check that could have made the verdict worse than what was "
                   "seen could not be made (`unchecked` lists each with its reason, `seen` is "
                   "the verdict of what it could see)")
UNREACHABLE = ExitCode(3, Scope.HEALTH, "unreachable", "no broker answered at all")
READY = ExitCode(0, Scope.DOCTOR, "ready",
                 "a lab with network faults (partitions, slow links) can run here")
MISSING = ExitCode(1, Scope.DOCTOR, "missing",
                   "something it needs is missing (the summary names which, each check its fix)")
BAD_INPUT = ExitCode(2, Scope.EVERY, "bad input",
                     "a usage error: one `kinspect: error:` line on stderr with the reason, no "
                     "traceback, nothing started or written (a bad option or file, a missing "
                     "extra, a property librdkafka refused)")
INTERRUPTED = ExitCode(130, Scope.EVERY, "interrupted",
                       "interrupted (Ctrl-C): `kinspect: interrupted` on stderr")

EXITS: tuple[ExitCode, ...] = (DONE, HEALTHY, WARNING, CRITICAL, UNKNOWN, UNREACHABLE, READY,
                               MISSING, BAD_INPUT, INTERRUPTED)
# Each health verdict's code, by the verdict's word.
VERDICT_CODES: dict[str, int] = {e.word: e.code for e in EXITS if e.scope is Scope.HEALTH}
