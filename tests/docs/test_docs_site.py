"""The docs cannot lie: the README is a front door that reaches every guide, every `kinspect …`
line in the README and the site parses with today's CLI, and every picture on a page is one a
script in the repo draws from a real run. The strict build (`make docs`) checks the links and
anchors between pages; these check what it cannot."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from docs.generate import subcommands
from kinspect.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", *PAGES]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`(kinspect [^`]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
# Who draws each kind of picture: the screen and the post-mortem's chart from a real lab run,
# the site's front page from the built site.
DRAWN_BY = (ROOT / "screenshots" / "take.py",)


@dataclass(frozen=True)
class CommandLine:
    """One `kinspect …` line shown to a reader, and where."""

    where: str
    text: str


def _commands(line: str) -> list[str]:
    """The kinspect commands of one shell line (`a && b; c &` holds three)."""
    parts = re.split(r"&&|\|\||;|&|\|", " ".join(line.split()))
    return [part.strip() for part in parts if part.strip().startswith("kinspect ")]


def _command_lines(path: Path) -> list[CommandLine]:
    """Commands in fenced blocks (a trailing backslash continues a line) and in inline code."""
    text = path.read_text()
    found = [c for m in INLINE.finditer(FENCE.sub("", text)) for c in _commands(m.group(1))]
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            found += _commands(line.split(" #")[0])
    where = str(path.relative_to(ROOT))
    return [CommandLine(where, line) for line in found]


def _names_a_command(argv: list[str]) -> bool:
    """`kinspect scenario run` in prose names a command; it is not an invocation."""
    parser = build_parser()
    for word in argv:
        parser = subcommands(parser).get(word)  # type: ignore[assignment]
        if parser is None:
            return False
    return True


ALL_LINES = [line for path in DOCUMENTS for line in _command_lines(path)]


def test_the_docs_show_command_lines() -> None:
    """The test below would pass on pages that show none."""
    assert len(ALL_LINES) > 100


@pytest.mark.parametrize("line", ALL_LINES, ids=lambda c: f"{c.where}: {c.text}")
def test_every_command_line_shown_parses(line: CommandLine) -> None:
    """A reader copies these: each is a concrete invocation today's parser accepts."""
    argv = shlex.split(line.text, comments=True)[1:]
    if _names_a_command(argv):
        return
    try:
        build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help and --version exit 0 once they have printed
        assert exit_.code == 0, f"{line.where}: `{line.text}` does not parse"


def test_the_readme_is_a_front_door() -> None:
    """At most 200 lines, and a link to every guide of the site."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    guides = {f"docs/{p.relative_to(ROOT / 'docs')}" for p in (ROOT / "docs/guides").glob("*.md")}
    assert guides <= set(LINK.findall(text))


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_reaches_a_file(path: Path) -> None:
    """The strict build checks the site's links; this checks the README's and CONTRIBUTING's too,
    as GitHub shows them."""
    targets = [t for t in LINK.findall(path.read_text()) if "://" not in t]
    missing = [t for t in targets if not (path.parent / t).exists()]
    assert missing == []


def test_every_picture_shown_is_drawn_by_a_script() -> None:
    """No hand-made picture: each one a page shows is written by a script in the repo."""
    scripts = "".join(script.read_text() for script in DRAWN_BY)
    shown = {Path(src).name for path in DOCUMENTS for src in IMAGE.findall(path.read_text())}
    charts = {p.name for p in (ROOT / "docs").rglob("*.svg") if "screenshots" not in p.parts}
    assert shown, "no picture found: the pattern is wrong"
    assert {name for name in shown - charts if name not in scripts} == set()
