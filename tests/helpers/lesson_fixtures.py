"""A small lesson built in code, for the flow and screen tests (the catalogue's lessons are
checked in tests/lessons/test_lesson_files.py)."""

from __future__ import annotations

from pathlib import Path

from kinspect.lessons.lesson_values import (
    Choice,
    Fix,
    FixChoice,
    Lesson,
    Panel,
    Question,
    Step,
    Text,
    Trigger,
)
from kinspect.scenarios.spec import parse_condition

HERE = Path("test.toml")


def t(en: str) -> Text:
    return Text(en, en + " (zh)")


def when(metric: str, condition: str) -> Choice:
    return Choice(t(condition), parse_condition(metric, condition, HERE))


LESSON = Lesson(
    name="isolate", title=t("isolate"), scenario="acks1-isolate-leader", story=t("story"),
    questions=(Question(t("lost?"), (when("acked_lost", "== 0"), when("acked_lost", "1..99"),
                                     when("acked_lost", ">= 100"))),
               Question(t("blamed?"), (when("lost_blamed_on_target", ">= 0.5"),
                                       when("lost_blamed_on_target", "< 0.5")))),
    steps=(Step(Trigger.START, t("load starts"), Panel.LOAD),
           Step(Trigger.FAULT, t("cut off"), Panel.EVENTS, do="isolate-zk", pause=True),
           Step(Trigger.LEADER_CHANGED, t("new leader"), Panel.PARTITIONS),
           Step(Trigger.END, t("over"))),
    explain=t("why"),
    fix=Fix(t("fix?"), (FixChoice(t("retries"), why=t("they were acknowledged")),
                        FixChoice(t("acks=all"), scenario="acksall-isolate-leader")),
            t("0 lost")),
    learned=(t("acks=1 trusts one broker"),), hints=(t("h1"), t("h2")))

ROW = {"acked_lost": 62958, "lost_blamed_on_target": 1.0}
