"""--lang wins; else the locale that decides (LC_ALL, LC_MESSAGES, LANG) picks Chinese or
English."""

from __future__ import annotations

import pytest

from kinspect.errors import KinspectError
from kinspect.lessons.lang import pick_lang
from kinspect.lessons.lesson_values import Lang


@pytest.mark.parametrize(("arg", "env", "lang"), [
    (None, {}, Lang.EN),
    (None, {"LANG": "zh_CN.UTF-8"}, Lang.ZH),
    (None, {"LANG": "zh_TW.UTF-8"}, Lang.ZH),
    (None, {"LANG": "en_US.UTF-8"}, Lang.EN),
    (None, {"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, Lang.ZH),
    (None, {"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, Lang.EN),  # LC_ALL decides when set
    (None, {"LC_ALL": "", "LC_MESSAGES": "zh_CN", "LANG": "en_US"}, Lang.ZH),
    ("en", {"LANG": "zh_CN.UTF-8"}, Lang.EN),
    ("zh", {}, Lang.ZH),
    ("ZH", {}, Lang.ZH),
])
def test_pick_lang(arg: str | None, env: dict[str, str], lang: Lang) -> None:
    assert pick_lang(arg, env) is lang


def test_a_bad_lang_is_one_line() -> None:
    with pytest.raises(KinspectError, match=r"^--lang must be one of en, zh, not 'fr'$"):
        pick_lang("fr", {})
