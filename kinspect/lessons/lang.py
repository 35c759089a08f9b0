"""Which language the lessons speak: --lang when given, else the user's locale."""

from __future__ import annotations

from collections.abc import Mapping

from kinspect.errors import KinspectError
from kinspect.lessons.lesson_values import Lang

LANGS = tuple(lang.value for lang in Lang)
# The locale variables in POSIX order of precedence: the first one set decides.
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")


def pick_lang(arg: str | None, environ: Mapping[str, str]) -> Lang:
    """--lang en|zh wins; else Chinese when the locale that decides is Chinese (zh_CN.UTF-8,
    zh_TW, zh); else English (C, POSIX and unset included)."""
    if arg is not None:
        try:
            return Lang(arg.strip().lower())
        except ValueError:
            raise KinspectError(f"--lang must be one of {', '.join(LANGS)}, not {arg!r}"
                                ) from None
    for name in LOCALE_VARS:
        value = environ.get(name, "").strip()
        if value:
            return Lang.ZH if value.lower().startswith("zh") else Lang.EN
    return Lang.EN
