# ruff: noqa: RUF001  (Chinese is written with full-width punctuation)
"""The lesson panel's text (pure): TOML line breaks undone, Chinese wrapped between characters
and never before its closing punctuation, every line within the panel's width in cells."""

from __future__ import annotations

from itertools import pairwise

import pytest
from rich.cells import cell_len
from rich.text import Text

from kinspect.tui.lesson_panel import NO_BREAK_BEFORE, prose, wrapped

MIXED = ("acks=1：写入落到领导者自己的日志后就确认。发到 30% 时，领导者与 ZooKeeper 和其他 broker "
         "断开，但生产者仍能连上它。The producer writes 5,000 messages/s with acks=1.")


def test_a_paragraphs_line_breaks_are_undone_with_or_without_a_space() -> None:
    assert prose("the leader\nacknowledges\n\nnext") == "the leader acknowledges\n\nnext"
    assert prose("领导者与\n其他副本") == "领导者与其他副本"
    assert prose("与 ZooKeeper\n断开") == "与 ZooKeeper 断开"


@pytest.mark.parametrize("width", [12, 20, 36, 38, 76])
def test_every_line_fits_and_none_starts_with_closing_punctuation(width: int) -> None:
    lines = wrapped(Text(MIXED), width).plain.split("\n")
    assert all(cell_len(line) <= width for line in lines), lines
    assert not any(line[:1] in NO_BREAK_BEFORE for line in lines[1:]), lines
    assert "".join(lines).replace(" ", "") == MIXED.replace(" ", "")  # nothing lost
    # English words are never cut in two
    assert all(not (a[-1:].isalpha() and b[:1].isalpha() and a[-1:].isascii())
               for a, b in pairwise(lines)), lines


def test_styles_survive_the_wrap() -> None:
    text = Text("▶ ", "bold").append("领导者与 ZooKeeper 和其他 broker 断开", "magenta")
    out = wrapped(text, 12)
    assert any(span.style == "magenta" for span in out.spans)
