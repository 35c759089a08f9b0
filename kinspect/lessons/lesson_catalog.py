"""The lessons (one TOML file each, beside the scenario catalogue) and lookup by name or path.

A lesson file is validated whole on load, as a scenario file is: an unknown key, a missing
language, a scenario not in the catalogue, a step waiting on a fault its scenario never
carries out, or a question no run could bear out is one line naming the file and the key,
before any lab is touched. The format is in kinspect/lessons/catalog/README.md.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.lab.backend import MODES
from kinspect.lab.faults import UNDO
from kinspect.lessons.lesson_values import (
    Choice,
    Fix,
    FixChoice,
    Lang,
    Lesson,
    Panel,
    Question,
    Step,
    Text,
    Trigger,
)
from kinspect.scenarios import catalog as scenario_catalog
from kinspect.scenarios.spec import METRICS, STEP_FAULTS, Condition, Scenario, parse_condition

CATALOG_DIR = Path(__file__).parent / "catalog"
_TOP_KEYS = {"name", "title", "scenario", "mode", "story", "question", "step", "explain", "fix",
             "learned", "hints"}
_LANGS = tuple(lang.value for lang in Lang)
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_WHEN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(.*?)\s*$")
_BARE_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
# Triggers that come without a fault of the lab: a scenario without one (the client's own
# faults) is narrated by these only, and only these may come before a lesson's first fault.
_QUIET = frozenset({Trigger.START, Trigger.END, Trigger.LIVE_LOST})
_REPAIRS = frozenset(kind.value for kind in UNDO.values())


def builtin() -> list[Lesson]:
    """Every built-in lesson, in teaching order (the files' NN- prefix)."""
    return [read(path) for path in sorted(CATALOG_DIR.glob("*.toml"))]


def find(name_or_path: str) -> Lesson:
    """A built-in lesson by name, or a facilitator's lesson file by path."""
    return scenario_catalog.find_in(name_or_path, read, builtin, lambda lesson: lesson.name,
                                    "lesson", "kinspect learn --list")


def read(path: Path) -> Lesson:
    """One lesson file, parsed and validated whole."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KinspectError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise KinspectError(f"{path.name}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise KinspectError(f"{path.name}: not valid TOML: {exc}") from None
    return parse(data, path)


def carried_out(scenario: Scenario) -> frozenset[str]:
    """The faults a scenario's plan carries out, in `do`'s words: each step's own, and the
    undo of each step held for a while (a kill for 15 s is followed by a start)."""
    done = {step.do for step in scenario.steps}
    for step in scenario.steps:
        if step.for_s is not None:
            done.add(UNDO[STEP_FAULTS[step.do][0]].value)
    return frozenset(done)


@cache
def _scenarios() -> dict[str, Scenario]:
    return {s.name: s for s in scenario_catalog.builtin()}


def _fail(path: Path, message: str) -> KinspectError:
    return KinspectError(f"{path.name}: {message}")


def _only(table: Mapping[str, Any], allowed: set[str], where: str, path: Path) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r} in {where} "
                          f"(allowed: {', '.join(sorted(allowed))})")


def _flow(text: str) -> str:
    """A multi-line string as one paragraph: lines joined by a space, but not between CJK
    characters (Chinese has no spaces between words)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    out = lines[0] if lines else ""
    for line in lines[1:]:
        glue = "" if _cjk(out[-1]) or _cjk(line[0]) else " "
        out += glue + line
    return out


def _cjk(char: str) -> bool:
    return "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef" or "\u3000" <= char <= "\u303f"


def _text(raw: Any, where: str, path: Path, alone: bool = True) -> Text:
    """A text in every language: a table with en and zh (`alone`: and nothing else; a choice
    or a step gives its texts beside its other keys)."""
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table of texts {{ en = \"...\", zh = \"...\" }}")
    if alone:
        _only(raw, set(_LANGS), where, path)
    texts = {}
    for lang in _LANGS:
        value = raw.get(lang)
        if not isinstance(value, str) or not value.strip():
            what = "is missing" if value is None else "must be a non-empty string"
            raise _fail(path, f"{where}.{lang} {what} (every text is given in "
                              f"{' and '.join(_LANGS)})")
        texts[lang] = _flow(value)
    return Text(en=texts["en"], zh=texts["zh"])


def _array(data: Mapping[str, Any], key: str, where: str, path: Path,
           required: bool) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _fail(path, f"{where} must be an array ([[{key}]] or {key} = [...])")
    if required and not value:
        raise _fail(path, f"{where} is required: give at least one")
    return value


def _texts(data: Mapping[str, Any], key: str, path: Path, required: bool) -> tuple[Text, ...]:
    items = _array(data, key, key, path, required)
    return tuple(_text(raw, f"{key} {i + 1}", path) for i, raw in enumerate(items))


def parse_when(raw: Any, where: str, path: Path) -> Condition:
    """A choice's `when`: "METRIC OP VALUE" ("acked_lost >= 1000"), "METRIC A..B" (both ends
    included), or "METRIC VALUE" for equality; the metric one of the scenario result's."""
    match = _WHEN.match(raw) if isinstance(raw, str) else None
    if match is None or not match.group(2):
        raise _fail(path, f"{where}: when = {raw!r}: write e.g. \"acked_lost == 0\", "
                          "\"acked_lost >= 1000\" or \"acked_lost 1..999\"")
    metric, rest = match.group(1), match.group(2)
    if metric not in METRICS:
        raise _fail(path, f"{where}: unknown metric {metric!r} in when "
                          f"(known: {', '.join(METRICS)})")
    try:
        return parse_condition(metric, f"== {rest}" if _BARE_NUMBER.match(rest) else rest, path)
    except KinspectError:
        raise _fail(path, f"{where}: when = {raw!r}: write e.g. \"{metric} == 0\", "
                          f"\"{metric} >= 1000\" or \"{metric} 1..999\" (a range, both ends "
                          "included)") from None


def _choice(raw: Any, where: str, path: Path) -> Choice:
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table")
    _only(raw, {*_LANGS, "when", "why"}, where, path)
    when = parse_when(raw["when"], where, path) if "when" in raw else None
    why = _text(raw["why"], f"{where}.why", path) if "why" in raw else None
    return Choice(text=_text(raw, where, path, alone=False), when=when, why=why)


def _question(raw: Any, index: int, path: Path) -> Question:
    where = f"question {index + 1}"
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table ([[question]])")
    _only(raw, {"ask", "choices"}, where, path)
    if "ask" not in raw:
        raise _fail(path, f"{where}.ask is required (the prediction asked before the run)")
    items = _array(raw, "choices", f"{where}.choices", path, required=True)
    choices = tuple(_choice(c, f"{where}, choice {i + 1}", path) for i, c in enumerate(items))
    if len(choices) < 2:
        raise _fail(path, f"{where}.choices: give at least two choices")
    if all(c.when is None for c in choices):
        raise _fail(path, f"{where}.choices: no choice could be right (give one a when = "
                          "\"METRIC OP VALUE\" that the run measures)")
    _validate_disjoint(choices, where, path)
    return Question(ask=_text(raw["ask"], f"{where}.ask", path), choices=choices)


Span = tuple[float, bool, float, bool]  # low, low included, high, high included


def _span(condition: Condition) -> Span | None:
    """The values a condition holds on, as an interval (None: "!=", not one interval)."""
    inf, v = float("inf"), float(condition.value)
    spans: dict[str, Span] = {"==": (v, True, v, True), ">=": (v, True, inf, False),
                              ">": (v, False, inf, False), "<=": (-inf, False, v, True),
                              "<": (-inf, False, v, False)}
    if condition.upper is not None:
        return v, True, float(condition.upper), True
    return spans.get(condition.op)


def _overlap(a: Span, b: Span) -> bool:
    low = max((a[0], not a[1]), (b[0], not b[1]))  # the tighter lower bound
    high = min((a[2], a[3]), (b[2], b[3]))  # the tighter upper bound
    return low[0] < high[0] or (low[0] == high[0] and not low[1] and high[1])


def _validate_disjoint(choices: Sequence[Choice], where: str, path: Path) -> None:
    """No two choices on one metric may both be right: one outcome, one right answer."""
    for i, first in enumerate(choices):
        for j in range(i + 1, len(choices)):
            a, b = first.when, choices[j].when
            if a is None or b is None or a.metric != b.metric:
                continue
            span_a, span_b = _span(a), _span(b)
            if span_a is not None and span_b is not None and _overlap(span_a, span_b):
                raise _fail(path, f"{where}: choices {i + 1} and {j + 1} can both be right "
                                  f"({a} and {b}); make their when ranges not overlap")


def _enum(raw: Any, kind: type[Trigger] | type[Panel], key: str, where: str,
          path: Path) -> Any:
    try:
        return kind(raw)
    except ValueError:
        known = ", ".join(member.value for member in kind)
        raise _fail(path, f"{where}: {key} = {raw!r} is not one of {known}") from None


def _step(raw: Any, index: int, path: Path) -> Step:
    where = f"step {index + 1}"
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table ([[step]])")
    _only(raw, {*_LANGS, "on", "do", "point", "pause"}, where, path)
    if "on" not in raw:
        raise _fail(path, f"{where}.on is required (what shows this step: "
                          f"{', '.join(t.value for t in Trigger)})")
    on = _enum(raw["on"], Trigger, "on", where, path)
    do = raw.get("do")
    if do is not None and on is not Trigger.FAULT:
        raise _fail(path, f"{where}: do names a fault, so it goes with on = \"fault\" only")
    if do is not None and do not in STEP_FAULTS:
        raise _fail(path, f"{where}: do = {do!r} is not one of {', '.join(STEP_FAULTS)}")
    point = _enum(raw["point"], Panel, "point", where, path) if "point" in raw else None
    pause = raw.get("pause", False)
    if not isinstance(pause, bool):
        raise _fail(path, f"{where}: pause must be true or false")
    return Step(on=on, text=_text(raw, where, path, alone=False), point=point, do=do,
                pause=pause)


def _fix_choice(raw: Any, where: str, path: Path) -> FixChoice:
    if not isinstance(raw, dict):
        raise _fail(path, f"{where} must be a table")
    _only(raw, {*_LANGS, "scenario", "why"}, where, path)
    scenario, why = raw.get("scenario"), raw.get("why")
    if (scenario is None) == (why is None):
        raise _fail(path, f"{where}: give exactly one of scenario (a right fix: the catalogue "
                          "scenario that reruns the lesson with it) or why (why it would not help)")
    if scenario is not None:
        _known_scenario(scenario, f"{where}.scenario", path)
    return FixChoice(text=_text(raw, where, path, alone=False), scenario=scenario,
                     why=_text(why, f"{where}.why", path) if why is not None else None)


def _fix(data: Mapping[str, Any], path: Path) -> Fix | None:
    if "fix" not in data:
        return None
    raw = data["fix"]
    if not isinstance(raw, dict):
        raise _fail(path, "[fix] must be a table")
    _only(raw, {"ask", "choices", "expect"}, "[fix]", path)
    for key in ("ask", "expect"):
        if key not in raw:
            raise _fail(path, f"fix.{key} is required")
    items = _array(raw, "choices", "fix.choices", path, required=True)
    choices = tuple(_fix_choice(c, f"fix, choice {i + 1}", path) for i, c in enumerate(items))
    if all(c.scenario is None for c in choices):
        raise _fail(path, "fix.choices: no choice is right (give one a scenario = \"...\" "
                          "from the catalogue)")
    return Fix(ask=_text(raw["ask"], "fix.ask", path), choices=choices,
               expect=_text(raw["expect"], "fix.expect", path))


def _known_scenario(name: Any, where: str, path: Path) -> Scenario:
    scenarios = _scenarios()
    if not isinstance(name, str) or name not in scenarios:
        raise _fail(path, f"{where} = {name!r} is not a catalogue scenario "
                          "(see: kinspect scenario list)")
    return scenarios[name]


def _validate_required(data: Mapping[str, Any], path: Path) -> None:
    for key in ("name", "scenario"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _fail(path, f"{key} is required (a string)")
    if not _NAME.fullmatch(data["name"]):
        raise _fail(path, f"name {data['name']!r} must be lower-case letters, digits, '.', '_' "
                          "and '-'")
    for key in ("title", "story", "explain"):
        if key not in data:
            raise _fail(path, f"{key} is required (a table of texts: {key}.en, {key}.zh)")
    mode = data.get("mode")
    if mode is not None and mode not in MODES:
        raise _fail(path, f"mode = {mode!r} is not one of {', '.join(MODES)} (leave it out: "
                          "either lab)")


def parse(data: Mapping[str, Any], path: Path) -> Lesson:
    """A validated Lesson from a parsed TOML document."""
    _only(data, _TOP_KEYS, "the top level", path)
    _validate_required(data, path)
    scenario = _known_scenario(data["scenario"], "scenario", path)
    questions = _array(data, "question", "question", path, required=True)
    steps = _array(data, "step", "step", path, required=True)
    lesson = Lesson(
        name=data["name"], title=_text(data["title"], "title", path),
        scenario=scenario.name, story=_text(data["story"], "story", path),
        questions=tuple(_question(q, i, path) for i, q in enumerate(questions)),
        steps=tuple(_step(s, i, path) for i, s in enumerate(steps)),
        explain=_text(data["explain"], "explain", path), fix=_fix(data, path),
        learned=_texts(data, "learned", path, required=True),
        hints=_texts(data, "hints", path, required=False), mode=data.get("mode"), path=path)
    _validate_steps(lesson.steps, scenario, path)
    return lesson


def _validate_steps(steps: Sequence[Step], scenario: Scenario, path: Path) -> None:
    """Each step's moment must come in this scenario's run: a lesson never waits on a fault
    (or what a fault sets off) that its scenario does not carry out."""
    done = carried_out(scenario)
    faulted = False
    for index, step in enumerate(steps):
        where = f"step {index + 1}"
        if not done and step.on not in _QUIET:
            raise _fail(path, f"{where}: on = {step.on.value!r} never comes: scenario "
                              f"{scenario.name} has no lab fault (use start, live_lost or end)")
        if not faulted and step.on not in _QUIET and step.on is not Trigger.FAULT:
            raise _fail(path, f"{where}: on = {step.on.value!r} before any on = 'fault' step "
                              "would match the lab's own reset; narrate the fault first")
        faulted = faulted or step.on is Trigger.FAULT
        if step.do is not None and step.do not in done:
            raise _fail(path, f"{where}: do = {step.do!r} never comes: scenario "
                              f"{scenario.name} carries out {', '.join(sorted(done))}")
        if step.on is Trigger.HEAL and not done & _REPAIRS:
            raise _fail(path, f"{where}: on = 'heal' never comes: scenario {scenario.name} "
                              "repairs nothing")
        if step.on is Trigger.LIVE_LOST and _loses_nothing(scenario):
            raise _fail(path, f"{where}: on = 'live_lost' never comes: scenario "
                              f"{scenario.name} expects acked_lost == 0")


def _loses_nothing(scenario: Scenario) -> bool:
    """Its [expect] pins acked_lost to 0: the live loss figure stays at 0."""
    return any(c.metric == "acked_lost" and c.op in ("==", "..") and c.value == 0
               and (c.upper is None or c.upper == 0) for c in scenario.expect)
