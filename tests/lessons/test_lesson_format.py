"""The lesson format is strict: each mistake a facilitator can make is one line naming the file
and the key, from the loader and from `kinspect learn --check`, before any lab is touched."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from kinspect.errors import KinspectError
from kinspect.lessons.lesson_catalog import CATALOG_DIR, parse_when, read
from tests.helpers import kinspect
from tests.helpers.errors import one_line_error

BASE = (CATALOG_DIR / "02-isolated-leader.toml").read_text(encoding="utf-8")
CLIENT_SIDE = (CATALOG_DIR / "09-client-buffer.toml").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Bad:
    id: str
    old: str  # replaced once in the base lesson (a regex)
    new: str
    says: str  # a fragment of the one error line
    base: str = BASE
    count: int = 1  # how many places `old` is replaced in


CASES = [
    Bad("unknown top key", r'^name = ', 'colour = "red"\nname = ', "unknown key 'colour' in the top level"),
    Bad("missing language", r'title = \{ en = "([^"]*)", zh = "[^"]*" \}', r'title = { en = "\1" }',
        "title.zh is missing"),
    Bad("empty language", r'(?s)story\.zh = """.*?"""', 'story.zh = "  "',
        "story.zh must be a non-empty string"),
    Bad("unknown scenario", r'scenario = "acks1-isolate-leader"', 'scenario = "acks9"',
        "scenario = 'acks9' is not a catalogue scenario"),
    Bad("no scenario", r'scenario = "acks1-isolate-leader"\n', "", "scenario is required"),
    Bad("unknown metric", r'when = "acked_lost == 0"', 'when = "lost == 0"',
        "question 1, choice 1: unknown metric 'lost'"),
    Bad("bad condition", r'when = "acked_lost == 0"', 'when = "acked_lost about 5"',
        "question 1, choice 1: when = 'acked_lost about 5'"),
    Bad("no right choice", r', when = "lost_blamed_on_target [^"]*"', "",
        "question 2.choices: no choice could be right", count=2),
    Bad("overlapping choices", r'when = "acked_lost 1\.\.999"', 'when = "acked_lost 0..999"',
        "question 1: choices 1 and 2 can both be right"),
    Bad("unknown choice key", r'when = "acked_lost == 0"', 'when = "acked_lost == 0", right = true',
        "unknown key 'right' in question 1, choice 1"),
    Bad("unknown trigger", r'on = "start"', 'on = "boom"', "step 1: on = 'boom' is not one of"),
    Bad("unknown panel", r'point = "load"', 'point = "nowhere"',
        "step 1: point = 'nowhere' is not one of"),
    Bad("do without fault", r'on = "start"', 'on = "start"\ndo = "kill"',
        "step 1: do names a fault, so it goes with on = \"fault\" only"),
    Bad("unknown do", r'do = "isolate"', 'do = "explode"', "step 2: do = 'explode' is not one of"),
    Bad("do never carried out", r'do = "isolate"', 'do = "kill"', "step 2: do = 'kill' never comes"),
    Bad("event before the fault", r'on = "start"', 'on = "leader_changed"',
        "step 1: on = 'leader_changed' before any on = 'fault' step"),
    Bad("pause not a bool", r'pause = true', 'pause = "yes"', "step 2: pause must be true or false"),
    Bad("live loss that never comes", r'scenario = "acks1-isolate-leader"',
        'scenario = "acksall-isolate-leader"', "step 5: on = 'live_lost' never comes"),
    Bad("lab event without a lab fault", r'on = "end"', 'on = "leader_changed"',
        "step 2: on = 'leader_changed' never comes", base=CLIENT_SIDE),
    Bad("fix without a right choice", r'scenario = "acksall-isolate-leader"\n',
        'why = { en = "no", zh = "不" }\n', "fix.choices: no choice is right"),
    Bad("fix choice both", r'scenario = "acksall-isolate-leader"\n',
        'scenario = "acksall-isolate-leader"\nwhy = { en = "no", zh = "不" }\n',
        "fix, choice 1: give exactly one of scenario"),
    Bad("fix scenario unknown", r'scenario = "acksall-isolate-leader"', 'scenario = "nope"',
        "fix, choice 1.scenario = 'nope' is not a catalogue scenario"),
    Bad("fix missing expect", r'^expect = .*\n', "", "fix.expect is required"),
    Bad("bad mode", r'^name = ', 'mode = "zk"\nname = ', "mode = 'zk' is not one of"),
    Bad("no questions", r'\[\[question\]\]', "[[quiz]]", "unknown key 'quiz' in the top level"),
    Bad("not toml", r'^name = ', 'name = = ', "not valid TOML"),
]


def write(tmp_path: Path, case: Bad) -> Path:
    text, count = re.subn(case.old, case.new, case.base, count=case.count, flags=re.M)
    assert count == case.count, case.old
    path = tmp_path / f"{case.id.replace(' ', '-')}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_lesson_is_one_line_naming_file_and_key(tmp_path: Path, case: Bad) -> None:
    path = write(tmp_path, case)
    with pytest.raises(KinspectError) as caught:
        read(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path.name}: "), message
    assert case.says in message, message


@pytest.mark.parametrize("case", CASES[:: 4], ids=[c.id for c in CASES[:: 4]])
def test_check_says_it_in_one_line_and_exits_2(tmp_path: Path, case: Bad) -> None:
    path = write(tmp_path, case)
    line = one_line_error(kinspect("learn", "--check", str(path), check=False))
    assert path.name in line and case.says in line


def test_check_passes_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(BASE.replace('name = "isolated-leader"', 'name = "mine"'), encoding="utf-8")
    proc = kinspect("learn", "--check", str(path))
    assert proc.stdout.startswith(f"{path}: OK (lesson mine: scenario acks1-isolate-leader")
    assert not proc.stderr


def test_check_of_a_missing_file(tmp_path: Path) -> None:
    line = one_line_error(kinspect("learn", "--check", str(tmp_path / "none.toml"), check=False))
    assert "cannot read" in line and "none.toml" in line


@pytest.mark.parametrize(("text", "shown"), [
    ("acked_lost == 0", "acked_lost == 0"), ("acked_lost 0", "acked_lost == 0"),
    ("acked_lost >= 1000", "acked_lost >= 1000"), ("acked_lost 1..999", "acked_lost in 1..999"),
    ("lost_blamed_on_target < 0.5", "lost_blamed_on_target < 0.5")])
def test_when_reads_the_scenario_files_conditions(text: str, shown: str) -> None:
    assert str(parse_when(text, "choice", Path("x.toml"))) == shown
