"""Where a lesson is, as a value: the screen renders a `Flow` and hands it what happened.

A lesson goes story → predictions → run (narrated) → reveal → fix → fix run → summary. The
narration follows what the live screen saw: a step becomes current once its trigger happened
(its fault was carried out, the observer saw its event, the run ended); a workshop's
narration moves on by itself except at a step that pauses, a speaker's (stage mode) only
when the presenter presses the key. Nothing here waits or reads: the TUI does, and asks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from kinspect.lessons.lesson_values import FixChoice, Lesson, Step, Trigger

MAX_SEEN = 500  # happenings remembered per run (a run has a few dozen)


class Phase(StrEnum):
    STORY = "story"  # the story, then the questions one by one
    READY = "ready"  # every prediction made: the run starts on a key
    RUN = "run"  # the scenario runs; the narration follows the screen
    REVEAL = "reveal"  # the predictions beside what was measured
    FIX = "fix"  # which setting would have prevented it
    FIX_RUN = "fix_run"
    FIX_DONE = "fix_done"  # the fix's rerun and whether its expectation held
    SUMMARY = "summary"


@dataclass(frozen=True)
class Happening:
    """Something the screen saw: a trigger, and for a fault which one (its kind's word)."""

    trigger: Trigger
    do: str | None = None

    def matches(self, step: Step) -> bool:
        """A step's `do` in the scenario files' words ("isolate-zk") is the lab journal's
        action ("isolate") with its scope."""
        if step.on is not self.trigger:
            return False
        return step.do is None or self.do in (step.do, step.do.split("-")[0])


@dataclass(frozen=True)
class RunResult:
    """A finished run as the lesson needs it: the judged row, the report's paragraph, where
    it lies; `failure` when the run did not finish (then nothing is revealed from it)."""

    scenario: str
    failure: str | None = None
    row: Mapping[str, Any] = field(default_factory=dict)
    story: str = ""  # the post-mortem's explanation paragraph
    run_dir: str | None = None
    held: bool = False  # the scenario's own [expect] held


@dataclass(frozen=True)
class Flow:
    lesson: Lesson
    stage: bool = False
    phase: Phase = Phase.STORY
    answers: tuple[int, ...] = ()  # the chosen choice per question, in order
    shown: int = -1  # the narrated step on screen (-1: none yet)
    held: bool = False  # narration waits for a key at a step that pauses
    seen: tuple[Happening, ...] = ()
    result: RunResult | None = None
    fix_choice: int | None = None
    fix_result: RunResult | None = None
    hints_shown: int = 0

    # ----- predictions -------------------------------------------------------------------

    @property
    def question(self) -> int | None:
        """The question being asked, or None once all are answered."""
        n = len(self.answers)
        return n if self.phase is Phase.STORY and n < len(self.lesson.questions) else None

    def answer(self, choice: int) -> Flow:
        """A choice (0-based) for the current question; out of range changes nothing."""
        q = self.question
        if q is None or not 0 <= choice < len(self.lesson.questions[q].choices):
            return self
        answers = (*self.answers, choice)
        ready = len(answers) == len(self.lesson.questions)
        return replace(self, answers=answers, phase=Phase.READY if ready else Phase.STORY)

    # ----- the run -------------------------------------------------------------------------

    def started(self) -> Flow:
        """The run began: the narration starts from the steps triggered by the start."""
        fresh = replace(self, phase=Phase.RUN, shown=-1, held=False, seen=(), result=None)
        return fresh.saw(Happening(Trigger.START))

    def saw(self, happening: Happening) -> Flow:
        """The screen saw it: remembered, and the narration moves on if it may."""
        if self.phase not in (Phase.RUN, Phase.FIX_RUN):
            return self
        if self.seen and self.seen[-1] == happening:
            return self  # a failover's burst of the same change: once
        flow = replace(self, seen=(*self.seen, happening)[-MAX_SEEN:])
        return flow if self.stage or self.phase is Phase.FIX_RUN else flow._follow()

    def saw_all(self, happenings: Sequence[Happening]) -> Flow:
        """What one snapshot's diff (or one journal read) showed at once: simultaneous, so
        taken in the order the steps expect them (a new leader and two brokers claiming the
        lead come in one diff, in the diff's own order)."""
        def order(h: Happening) -> int:
            later = self.lesson.steps[self.shown + 1:]
            return next((i for i, step in enumerate(later) if h.matches(step)), len(later))

        flow = self
        for happening in sorted(happenings, key=order):
            flow = flow.saw(happening)
        return flow

    def finished(self, result: RunResult) -> Flow:
        """The run ended (its verdict and report are in): END happened."""
        if self.phase is Phase.FIX_RUN:
            return replace(self, phase=Phase.FIX_DONE, fix_result=result)
        return replace(self, result=result).saw(Happening(Trigger.END))

    def _ready(self, index: int) -> bool:
        """Step `index` may be shown: its trigger happened after the previous step's did
        (a leader change while the run resets the lab is not the one the kill caused)."""
        return self._when(index) is not None

    def _when(self, index: int) -> int | None:
        """Where in `seen` step `index`'s trigger happened, in the order of the steps."""
        after = -1
        for i in range(index + 1):
            step = self.lesson.steps[i]
            after = next((j for j in range(after + 1, len(self.seen))
                          if self.seen[j].matches(step)), -2)
            if after == -2:
                return None
        return after

    def happened(self) -> tuple[bool, ...]:
        """Per step, whether its trigger came after the step before it's: what `--check-all`
        proves of a finished run, by the same reckoning the narration follows."""
        return tuple(self._ready(index) for index in range(len(self.lesson.steps)))

    def _follow(self) -> Flow:
        """Workshop narration: on to every step whose trigger happened, stopping at a pause."""
        flow = self
        while not flow.held and flow.shown + 1 < len(flow.lesson.steps) and \
                flow._ready(flow.shown + 1):
            nxt = flow.shown + 1
            flow = replace(flow, shown=nxt, held=flow.lesson.steps[nxt].pause)
        return flow

    @property
    def step(self) -> Step | None:
        return self.lesson.steps[self.shown] if self.shown >= 0 else None

    @property
    def waiting_for(self) -> Step | None:
        """The next step, when its trigger has not happened yet."""
        nxt = self.shown + 1
        if nxt < len(self.lesson.steps) and not self._ready(nxt):
            return self.lesson.steps[nxt]
        return None

    # ----- the key that goes on ----------------------------------------------------------

    def go_on(self) -> Flow:
        """Space: the next thing this phase allows (the TUI starts runs on READY/FIX)."""
        if self.phase is Phase.RUN:
            return self._next_step()
        if self.phase is Phase.REVEAL:
            fix = self.lesson.fix
            return replace(self, phase=Phase.FIX if fix else Phase.SUMMARY)
        if self.phase is Phase.FIX_DONE:
            return replace(self, phase=Phase.SUMMARY)
        return self

    def _next_step(self) -> Flow:
        """Past a pause (a workshop's narration then follows what happened meanwhile), or on
        stage the next step once it happened; when no step is ready and the run has ended,
        the reveal (a step whose trigger never came, say in a failed run, holds nothing up)."""
        if self.held and not self.stage:
            return replace(self, held=False)._follow()
        nxt = self.shown + 1
        if nxt < len(self.lesson.steps) and self._ready(nxt):
            return replace(self, shown=nxt, held=self.lesson.steps[nxt].pause)
        if self.result is not None:
            return replace(self, phase=Phase.REVEAL, held=False)
        return self

    # ----- the reveal and the fix -----------------------------------------------------------

    def verdicts(self) -> tuple[bool | None, ...]:
        """Each prediction right or wrong on the measured row (None: nothing measured)."""
        if self.result is None or self.result.failure is not None:
            return tuple(None for _ in self.answers)
        return tuple(q.choices[a].right(self.result.row)
                     for q, a in zip(self.lesson.questions, self.answers, strict=True))

    def choose_fix(self, choice: int) -> Flow:
        fix = self.lesson.fix
        if self.phase is not Phase.FIX or fix is None or not 0 <= choice < len(fix.choices):
            return self
        return replace(self, fix_choice=choice)

    @property
    def chosen_fix(self) -> FixChoice | None:
        fix = self.lesson.fix
        if fix is None or self.fix_choice is None:
            return None
        return fix.choices[self.fix_choice]

    def fix_started(self) -> Flow:
        return replace(self, phase=Phase.FIX_RUN, fix_result=None, seen=())

    def hint(self) -> Flow:
        return replace(self, hints_shown=min(self.hints_shown + 1, len(self.lesson.hints)))

    def restart(self) -> Flow:
        return Flow(self.lesson, self.stage)
