"""The built-in lessons, checked whole without a lab: each loads, speaks both languages, runs a
catalogue scenario, asks questions a typical run answers in exactly one way, and the course
covers the source material in a sensible order."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kinspect.lab.faults import UNDO
from kinspect.lessons.lesson_catalog import CATALOG_DIR, builtin, carried_out
from kinspect.lessons.lesson_values import Lesson, Text, Trigger
from kinspect.scenarios.catalog import builtin as scenario_builtin
from kinspect.scenarios.spec import STEP_FAULTS, Condition, Scenario

LESSONS = builtin()
SCENARIOS = {s.name: s for s in scenario_builtin()}
SHARES = {"lost_blamed_on_target"}  # metrics that are a share, 0.0-1.0
# The topics of the source material, and the catalogue scenarios that teach each (as the
# lesson's run or its fix's rerun).
TOPICS: dict[str, set[str]] = {
    "acks 0/1/all under a leader kill": {"acks0-kill-leader", "acks1-kill-leader",
                                          "acksall-kill-leader-10p"},
    "the leader isolated": {"acks1-isolate-leader"},
    "the leader cut from ZooKeeper only": {"acks1-isolate-leader-zk"},
    "unclean leader election": {"unclean-election"},
    "min.insync.replicas=2 refuses writes": {"min-isr-two-down"},
    "slow followers, slow network": {"slow-network-unclean", "slow-network", "slow-follower"},
    "producer retries": {"short-retries"},
    "the client's buffer": {"producer-crash-buffer", "producer-buffer-full"},
    "consumer commits": {"consumer-commit-before-process", "consumer-autocommit-crash"},
    "producer duplicates and idempotence": {"duplicates"},
    "transactions and exactly once": {"transactions-offsets-outside",
                                      "exactly-once-leader-kill"},
    "__consumer_offsets with replication factor 1": {"offsets-rf1"},
}


def typical(condition: Condition) -> float:
    """A value the condition holds on, well inside it: a range's midpoint, twice a lower
    bound (a share: halfway to 1), half an upper bound."""
    v = float(condition.value)
    if condition.upper is not None:
        return (v + float(condition.upper)) / 2
    if condition.op in (">=", ">"):
        if condition.metric in SHARES:
            return (v + 1.0) / 2
        return v * 2 if v >= 1 else v + 1
    if condition.op in ("<=", "<"):
        return v / 2
    return v + 1 if condition.op == "!=" else v


def typical_row(scenario: Scenario) -> dict[str, float]:
    row = {c.metric: typical(c) for c in scenario.expect}
    assert all(c.holds(row) for c in scenario.expect), scenario.name
    return row


def texts(value: Any, where: str = "") -> Iterator[tuple[str, Text]]:
    """Every Text inside a lesson, with where it is."""
    if isinstance(value, Text):
        yield where, value
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from texts(item, f"{where}[{i}]")
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            yield from texts(getattr(value, name), f"{where}.{name}")


def width(text: str) -> int:
    """Terminal columns: a CJK character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def ids(lessons: list[Lesson]) -> list[str]:
    return [lesson.name for lesson in lessons]


def test_every_file_is_a_lesson_in_order() -> None:
    files = sorted(p.name for p in CATALOG_DIR.glob("*.toml"))
    assert 10 <= len(LESSONS) <= 15
    assert files == [f"{i:02d}-{lesson.name}.toml" for i, lesson in enumerate(LESSONS, start=1)]
    assert len(set(ids(LESSONS))) == len(LESSONS)


@pytest.mark.parametrize("lesson", LESSONS, ids=ids(LESSONS))
def test_every_text_in_both_languages(lesson: Lesson) -> None:
    found = list(texts(lesson))
    assert len(found) > 10
    for where, text in found:
        assert text.en.strip() and text.zh.strip(), where
        assert not re.search(r"[\u4e00-\u9fff]", text.en), where
    prose = [text for where, text in found if not where.startswith((".fix.choices", ".title"))]
    for text in prose:  # settings such as "acks=all" may read the same; sentences may not
        assert re.search(r"[\u4e00-\u9fff]", text.zh), text.zh


@pytest.mark.parametrize("lesson", LESSONS, ids=ids(LESSONS))
def test_scenarios_are_in_the_catalogue_the_matrix_runs(lesson: Lesson) -> None:
    assert lesson.scenario in SCENARIOS
    for choice in lesson.fix.choices if lesson.fix else ():
        assert choice.scenario is None or choice.scenario in SCENARIOS


@pytest.mark.parametrize("lesson", LESSONS, ids=ids(LESSONS))
def test_a_typical_run_makes_exactly_one_choice_right(lesson: Lesson) -> None:
    """On a row of the scenario's own [expect] midpoints, each question has one right answer."""
    scenario = SCENARIOS[lesson.scenario]
    row = typical_row(scenario)
    for question in lesson.questions:
        right = [c.text.en for c in question.choices if c.right(row)]
        assert len(right) == 1, (question.ask.en, row, right)
        assert all(c.when is None or c.when.metric in row for c in question.choices), \
            "a question must ask about what the scenario's [expect] measures"


@pytest.mark.parametrize("lesson", [x for x in LESSONS if x.fix], ids=ids([x for x in LESSONS
                                                                             if x.fix]))
def test_a_right_fix_changes_an_outcome_the_lesson_asked_about(lesson: Lesson) -> None:
    """The fix's rerun pins, on a metric the questions name, an outcome the lesson's own
    typical run does not have (0 lost where thousands were, no copies where there were)."""
    assert lesson.fix is not None
    lesson_row = typical_row(SCENARIOS[lesson.scenario])
    for choice in lesson.fix.choices:
        if choice.scenario is None:
            assert choice.why is not None
            continue
        pinned = [c for c in SCENARIOS[choice.scenario].expect if c.metric in lesson.metrics]
        assert any(not c.holds(lesson_row) for c in pinned), (choice.scenario, pinned)


@pytest.mark.parametrize("lesson", LESSONS, ids=ids(LESSONS))
def test_steps_wait_for_what_the_run_does(lesson: Lesson) -> None:
    scenario = SCENARIOS[lesson.scenario]
    done = carried_out(scenario)
    pauses = sum(step.pause for step in lesson.steps)
    assert 1 <= pauses <= 3, pauses
    for step in lesson.steps:
        assert step.do is None or step.do in done
        if not scenario.steps:  # the client's own fault: no lab event comes
            assert step.on in (Trigger.START, Trigger.END), step
    faults = [step.do for step in lesson.steps if step.on is Trigger.FAULT and step.do]
    assert is_subsequence(faults, planned_actions(scenario)), "fault steps in the plan's order"


def planned_actions(scenario: Scenario) -> list[str]:
    """The plan's actions in order, each held step followed by its undo (kill, then start)."""
    out = []
    for step in scenario.steps:
        out.append(step.do)
        if step.for_s is not None:
            out.append(UNDO[STEP_FAULTS[step.do][0]].value)
    return out


def is_subsequence(wanted: list[str], actions: list[str]) -> bool:
    rest = iter(actions)
    return all(any(do == action for action in rest) for do in wanted)


def test_the_course_covers_the_source_material_in_order() -> None:
    taught = [{lesson.scenario, *(c.scenario for c in (lesson.fix.choices if lesson.fix else ())
                                  if c.scenario)} for lesson in LESSONS]
    for topic, scenarios in TOPICS.items():
        assert any(scenarios & names for names in taught), topic
    assert LESSONS[0].scenario == "acks0-kill-leader"  # acks first: everything builds on it
    kraft = [lesson for lesson in LESSONS if lesson.mode == "kraft"]
    assert len(kraft) == 1 and kraft[0] is LESSONS[-1]
    assert kraft[0].scenario == "acks1-isolate-leader"
    order = [lesson.scenario for lesson in LESSONS]
    assert order.index("acks1-isolate-leader") < order.index("acks1-isolate-leader-zk") \
        < order.index("unclean-election") < order.index("min-isr-two-down")


LIMITS: Mapping[str, int] = {"story": 320, "explain": 320, "step": 160, "ask": 120,
                             "choice": 36, "fix choice": 48, "why": 120, "learned": 120,
                             "hints": 120, "expect": 160, "title": 40}


def limit_of(where: str) -> int:
    """The width a text may take, by where it sits (".questions[0].choices[1].text")."""
    words = re.findall(r"[a-z]+", where)
    last = words[-1]
    if last == "text":
        last = {"steps": "step", "choices": "choice"}[words[-2]]
        if last == "choice" and words[0] == "fix":
            last = "fix choice"
    return LIMITS[last]


@pytest.mark.parametrize("lesson", LESSONS, ids=ids(LESSONS))
def test_texts_fit_the_lesson_panel(lesson: Lesson) -> None:
    """The panel is ~38 columns at 80x24: a step a few lines, a choice about one, the story
    at most six short sentences."""
    for where, text in texts(lesson):
        for value in (text.en, text.zh):
            assert width(value) <= limit_of(where), (where, value)
    sentences = len(re.findall(r"[.?!](\s|$)", lesson.story.en))
    assert sentences <= 6, lesson.story.en
