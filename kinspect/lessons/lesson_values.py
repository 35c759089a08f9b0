"""A lesson, as values: what a lesson file says once it has been checked whole.

A lesson runs one scenario of the catalogue on the live screen: a story, predictions asked
before the run, narrated steps each pointing at a part of the screen, the reveal (the
prediction beside what was measured), a fix chosen and rerun, and what was learned. Every
text is given in each language (`Text`); the answers are never written in the file: a
choice is right when its condition holds on the measured result row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kinspect.scenarios.spec import Condition


class Lang(StrEnum):
    """The languages lesson texts are written in (the source material is Chinese)."""

    EN = "en"
    ZH = "zh"


@dataclass(frozen=True)
class Text:
    """One text in every language; a lesson file gives each (checked on load)."""

    en: str
    zh: str

    def __call__(self, lang: Lang) -> str:
        return self.zh if lang is Lang.ZH else self.en


class Panel(StrEnum):
    """The parts of the live screen a step points at (the widgets' ids)."""

    HEADER = "header"
    BROKERS = "brokers"
    PARTITIONS = "partitions"
    EVENTS = "events"
    LOAD = "load"
    WARNINGS = "warnings"
    GROUPS = "consumer-groups"


class Trigger(StrEnum):
    """What makes a narrated step current: the run starting, a fault carried out (a journal
    entry of the lab), a change the observer saw (an event kind of the model), the live loss
    figure becoming non-zero, or the run ending."""

    START = "start"
    FAULT = "fault"
    HEAL = "heal"
    LEADER_CHANGED = "leader_changed"
    ISR_SHRANK = "isr_shrank"
    ISR_EXPANDED = "isr_expanded"
    CONTROLLER_CHANGED = "controller_changed"
    VIEWS_DISAGREE = "views_disagree_started"
    BROKER_GONE = "broker_gone"
    LIVE_LOST = "live_lost"
    END = "end"


@dataclass(frozen=True)
class Choice:
    """One answer offered; right when `when` holds on the measured row (None: never right,
    e.g. a fix that would not have helped, with `why` saying why not)."""

    text: Text
    when: Condition | None = None
    why: Text | None = None

    def right(self, row: Mapping[str, Any]) -> bool:
        return self.when is not None and self.when.holds(row)


@dataclass(frozen=True)
class Question:
    """A prediction asked before the run; its answer is what the run measures."""

    ask: Text
    choices: tuple[Choice, ...]


@dataclass(frozen=True)
class Step:
    """A narrated moment of the run: shown when `on` happens (a fault step may name which
    fault, `do`), pointing at `point`; `pause` holds the narration there until a key."""

    on: Trigger
    text: Text
    point: Panel | None = None
    do: str | None = None  # Trigger.FAULT only: the fault's kind ("isolate", "kill", ...)
    pause: bool = False


@dataclass(frozen=True)
class FixChoice:
    """A setting offered as the fix: the right ones name the catalogue scenario that reruns
    the lesson with it; the others say why they would not have helped."""

    text: Text
    scenario: str | None = None
    why: Text | None = None


@dataclass(frozen=True)
class Fix:
    ask: Text
    choices: tuple[FixChoice, ...]
    expect: Text  # what the rerun shows: 0 lost, or the price paid


@dataclass(frozen=True)
class Lesson:
    """One lesson file, checked whole."""

    name: str
    title: Text
    scenario: str  # the catalogue scenario the run replays
    story: Text
    questions: tuple[Question, ...]
    steps: tuple[Step, ...]
    explain: Text  # the reveal's why, beside the post-mortem's own paragraph
    fix: Fix | None
    learned: tuple[Text, ...]
    hints: tuple[Text, ...] = ()
    mode: str | None = None  # "kraft": the lab this lesson needs (None: either)
    path: Path | None = field(default=None, compare=False)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics its questions' choices name, in order: what progress keeps measured."""
        named = (c.when.metric for q in self.questions for c in q.choices if c.when is not None)
        return tuple(dict.fromkeys(named))



class Status(StrEnum):
    """Where a learner is with a lesson (kept in KINSPECT_HOME)."""

    NEW = "new"
    CURRENT = "current"
    DONE = "done"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Prediction:
    """An answer given before the run, and whether the run bore it out (None: not run yet)."""

    question: str  # the question's English text: a facilitator's script keys on it
    chosen: str  # the choice's English text
    right: bool | None = None


@dataclass(frozen=True)
class LessonRecord:
    """One lesson's progress: the predictions, what the run measured (the metrics its
    questions and fix name), the last run that finished (stage mode's safety net), the fix."""

    name: str
    status: Status = Status.NEW
    predictions: tuple[Prediction, ...] = ()
    measured: dict[str, object] = field(default_factory=dict)  # metric -> its JSON value
    run_dir: str | None = None
    fix_scenario: str | None = None
    fix_held: bool | None = None
    fix_run_dir: str | None = None
    updated_at: str | None = None  # ISO 8601, UTC
