"""The lesson panel: what a `Flow` says, in the learner's language, beside the live screen.

Pure rendering (a Flow in, rich Text out) plus the widget that holds it; the app decides
when. Wide characters are measured by rich (cell widths), so Chinese wraps at the panel's
edge like English does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from kinspect.lessons import words as w
from kinspect.lessons.flow import Flow, Phase
from kinspect.lessons.lesson_values import Lang, Lesson, Question, Step


@dataclass(frozen=True)
class PanelContext:
    """What the panel shows besides the flow: where in the course, the newest progress line."""

    lang: Lang
    number: int  # 1-based
    total: int
    progress: str = ""
    next_title: str | None = None
    backup: str | None = None  # stage mode plays a recording: when it was made
    needs_mode: str | None = None  # the lesson needs the lab in this mode first


def lesson_text(flow: Flow, ctx: PanelContext) -> Text:
    """The whole panel for this moment of the lesson."""
    lang, lesson = ctx.lang, flow.lesson
    text = Text()
    text.append(f"{w.LESSON(lang)} {ctx.number}/{ctx.total}\n", "dim")
    text.append(lesson.title(lang) + "\n\n", "bold")
    if ctx.backup:
        text.append(w.BACKUP(lang).format(when=ctx.backup) + "\n\n", "black on yellow")
    body = {Phase.STORY: _story, Phase.READY: _ready, Phase.RUN: _run, Phase.REVEAL: _reveal,
            Phase.FIX: _fix, Phase.FIX_RUN: _fix_run, Phase.FIX_DONE: _fix_done,
            Phase.SUMMARY: _summary}[flow.phase]
    body(flow, ctx, text)
    for hint in lesson.hints[:flow.hints_shown]:
        text.append(f"\n{w.HINT(lang)}: ", "bold cyan").append(prose(hint(lang)) + "\n")
    keys = w.KEYS
    if flow.stage:
        keys = w.STAGE_KEYS
    return text.append("\n" + keys(lang) + "\n", "dim")


def prose(text: str) -> str:
    """A TOML block's hard line breaks undone, so the panel wraps it at its own width: lines of
    a paragraph join with a space, or with nothing between Chinese characters."""
    paragraphs = [p for p in text.strip().split("\n\n") if p.strip()]
    return "\n\n".join(_joined([line.strip() for line in p.splitlines()]) for p in paragraphs)


def _joined(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if out:
            out += _separator(out[-1], line[:1])
        out += line
    return out


def _separator(before: str, after: str) -> str:
    """A space between two lines of a paragraph; none between two wide (Chinese) characters."""
    if cell_len(before) == 2 and cell_len(after) == 2:
        return ""
    return " "


def _story(flow: Flow, ctx: PanelContext, text: Text) -> None:
    lang, lesson = ctx.lang, flow.lesson
    text.append(prose(lesson.story(lang)) + "\n\n")
    _answers(flow, lang, text)
    q = flow.question
    if q is None:
        return
    question = lesson.questions[q]
    text.append(f"{w.PREDICT(lang)} ({q + 1}/{len(lesson.questions)})\n", "bold yellow")
    _choices(question, lang, text)
    text.append(w.CHOOSE(lang).format(n=len(question.choices)) + "\n", "dim")


def _choices(question: Question, lang: Lang, text: Text) -> None:
    text.append(question.ask(lang) + "\n")
    for i, choice in enumerate(question.choices, 1):
        text.append(f" {i} ", "bold reverse").append(f" {choice.text(lang)}\n")


def _answers(flow: Flow, lang: Lang, text: Text, verdicts: tuple[bool | None, ...] = ()
             ) -> None:
    """The predictions made so far, each with its verdict once the run measured it."""
    for i, (q, a) in enumerate(zip(flow.lesson.questions, flow.answers, strict=False)):
        text.append(f"{q.ask(lang)}\n", "dim")
        text.append(f"  {w.YOU_SAID(lang)}{w.COLON(lang)}").append(q.choices[a].text(lang), "bold")
        if verdicts:
            verdict = None
            if i < len(verdicts):
                verdict = verdicts[i]
            text.append("  ")
            text.append(*_verdict_words(verdict, lang))
        text.append("\n")


def _verdict_words(verdict: bool | None, lang: Lang) -> tuple[str, str]:
    """A prediction's verdict and its style: right, wrong, or not measured by the run."""
    if verdict is None:
        return "? " + w.NOT_MEASURED(lang), "yellow"
    if verdict:
        return "✓ " + w.RIGHT(lang), "bold green"
    return "✗ " + w.WRONG(lang), "bold red"


def _ready(flow: Flow, ctx: PanelContext, text: Text) -> None:
    _answers(flow, ctx.lang, text)
    if ctx.needs_mode:
        text.append("\n" + w.NEEDS_MODE(ctx.lang).format(mode=ctx.needs_mode) + "\n",
                    "bold yellow")
        return
    text.append("\n" + w.READY(ctx.lang) + "\n", "bold yellow")


def _run(flow: Flow, ctx: PanelContext, text: Text) -> None:
    lang = ctx.lang
    if ctx.progress:
        text.append(f"{w.RUNNING(lang)}{w.COLON(lang)}", "bold").append(ctx.progress + "\n\n", "dim")
    for i, step in enumerate(flow.lesson.steps[:flow.shown + 1]):
        _step(step, lang, text, current=i == flow.shown)
    waiting = flow.waiting_for
    if flow.held or (flow.stage and not waiting):
        text.append("\n" + w.GO_ON(lang) + "\n", "bold yellow")
    elif waiting is not None:
        what = w.TRIGGER_NAMES[waiting.on](lang)
        text.append("\n" + w.WAITING(lang).format(what=what) + "\n", "dim italic")
    elif flow.result is not None:
        text.append("\n" + w.GO_ON(lang) + "\n", "bold yellow")


def _step(step: Step, lang: Lang, text: Text, current: bool) -> None:
    if not current:
        text.append("· " + step.text(lang) + "\n", "dim")
        return
    text.append("▶ " + step.text(lang) + "\n", "bold")
    if step.point is not None:
        text.append(f"  {w.LOOK(lang)}: {w.PANEL_NAMES[step.point](lang)}\n", "bold magenta")


def _reveal(flow: Flow, ctx: PanelContext, text: Text) -> None:
    lang, result = ctx.lang, flow.result
    text.append(w.REVEAL(lang) + "\n", "bold yellow")
    if result is None:
        _failed("?", lang, text)
        return
    if result.failure is not None:
        _failed(result.failure, lang, text)
        return
    _answers(flow, lang, text, flow.verdicts())
    text.append(f"\n{w.MEASURED(lang)}{w.COLON(lang)}", "bold").append(
        measured_line(flow.lesson, result.row) + "\n")
    text.append(f"\n{w.WHY(lang)}\n", "bold").append(prose(flow.lesson.explain(lang)) + "\n")
    if result.story:
        text.append("\n" + prose(result.story) + "\n", "italic")
    text.append("\n" + w.REPORT_KEY(lang) + "\n" + w.GO_ON(lang) + "\n", "dim")


def _failed(why: str, lang: Lang, text: Text) -> None:
    text.append(w.FAILED(lang).format(why=why) + "\n", "bold red")


def metrics_of(lesson: Lesson) -> tuple[str, ...]:
    """The metrics the lesson's questions judge, in the order they are asked."""
    seen: dict[str, None] = {}
    for question in lesson.questions:
        for choice in question.choices:
            if choice.when is not None:
                seen[choice.when.metric] = None
    return tuple(seen)


def measured_line(lesson: Lesson, row: Mapping[str, Any], skip_unmeasured: bool = False) -> str:
    """`metric = value` for each metric the questions judge; a fix's rerun leaves out what it
    did not measure (the blame of a loss that did not happen)."""
    return ", ".join(f"{m} = {metric_value(row.get(m))}" for m in metrics_of(lesson)
                     if not (skip_unmeasured and row.get(m) is None))


def metric_value(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float) and 0 <= value <= 1:
        return f"{value:.0%}"
    if isinstance(value, int | float):
        return f"{value:,}"
    return str(value)


def _fix(flow: Flow, ctx: PanelContext, text: Text) -> None:
    lang, fix = ctx.lang, flow.lesson.fix
    if fix is None:
        return
    text.append(w.FIX_ASK(lang) + "\n", "bold yellow").append(fix.ask(lang) + "\n")
    for i, choice in enumerate(fix.choices, 1):
        style = ""
        if flow.fix_choice == i - 1:  # picked
            style = "bold underline"
        text.append(f" {i} ", "bold reverse").append(f" {choice.text(lang)}\n", style)
    chosen = flow.chosen_fix
    if chosen is None:
        text.append(w.CHOOSE(lang).format(n=len(fix.choices)) + "\n", "dim")
    elif chosen.scenario is None:
        why = ""
        if chosen.why:
            why = chosen.why(lang)
        text.append("\n" + w.FIX_WRONG(lang).format(why=why) + "\n", "bold red")
    else:
        text.append("\n" + w.FIX_RUN(lang) + "\n", "bold yellow")


def _fix_run(flow: Flow, ctx: PanelContext, text: Text) -> None:
    chosen = flow.chosen_fix
    if chosen is not None:
        text.append(chosen.text(ctx.lang) + "\n\n", "bold")
    if ctx.progress:
        text.append(f"{w.RUNNING(ctx.lang)}{w.COLON(ctx.lang)}", "bold").append(ctx.progress + "\n", "dim")


def _fix_done(flow: Flow, ctx: PanelContext, text: Text) -> None:
    lang, result, fix = ctx.lang, flow.fix_result, flow.lesson.fix
    if result is None or fix is None:
        return
    if result.failure is not None:
        _failed(result.failure, lang, text)
        return
    text.append(prose(fix.expect(lang)) + "\n\n")
    if result.held:
        text.append(w.FIX_HELD(lang) + "\n", "bold green")
    else:
        text.append(w.FIX_NOT_HELD(lang) + "\n", "bold red")
    text.append(f"{w.MEASURED(lang)}{w.COLON(lang)}", "bold").append(
        measured_line(flow.lesson, result.row, skip_unmeasured=True) + "\n")
    text.append("\n" + w.REPORT_KEY(lang) + "\n" + w.GO_ON(lang) + "\n", "dim")


def _summary(flow: Flow, ctx: PanelContext, text: Text) -> None:
    lang = ctx.lang
    text.append(w.LEARNED(lang) + "\n", "bold yellow")
    for point in flow.lesson.learned:
        text.append("• " + prose(point(lang)) + "\n")
    text.append("\n")
    if ctx.next_title:
        text.append(w.NEXT(lang).format(name=ctx.next_title) + "\n", "bold yellow")
    else:
        text.append(w.ALL_DONE(lang) + "\n", "bold")


NO_BREAK_BEFORE = frozenset("，。、：；！？）」』》,.:;!?)")  # noqa: RUF001  (never starts a line)


def wrapped(text: Text, width: int) -> Text:
    """Wrapped at `width` cells: between words, and between any two Chinese characters (rich
    breaks only at spaces, so a Chinese sentence with one English word in it wrapped raggedly,
    or was folded mid-word)."""
    lines = [part for line in text.split("\n", allow_blank=True)
             for part in line.divide(_cuts(line.plain, width))]
    return Text("\n").join(lines)


def _cuts(plain: str, width: int) -> list[int]:
    """Where each wrapped line of `plain` starts (after the first)."""
    cuts: list[int] = []
    start, col, last = 0, 0, -1
    for i, ch in enumerate(plain):
        cells = cell_len(ch)
        if i > start and ch not in NO_BREAK_BEFORE and (
                cells == 2 or cell_len(plain[i - 1]) == 2 or plain[i - 1] == " "):
            last = i  # a line may start here
        if col + cells > width and i > start:
            cut = i
            if last > start:
                cut = last
            cuts.append(cut)
            start, last, col = cut, -1, cell_len(plain[cut:i])
        col += cells
    return cuts


class LessonPanel(VerticalScroll):
    """The lesson's side of the screen; scrolls when a reveal is longer than the screen."""

    DEFAULT_CSS = """
    LessonPanel { dock: right; width: 40; border: thick $accent; padding: 0 1;
                  background: $surface; scrollbar-gutter: stable; }
    LessonPanel.stage { width: 50%; padding: 1 2; }
    """

    def compose(self) -> Any:
        yield Static(id="lesson-text")

    shown: tuple[Flow, PanelContext] | None = None

    def show(self, flow: Flow, ctx: PanelContext) -> None:
        self.shown = (flow, ctx)
        static = self.query_one("#lesson-text", Static)
        width = static.size.width
        if not width:  # not laid out yet: the panel's own, less its border and padding
            width = self.size.width - 4
        static.update(wrapped(lesson_text(flow, ctx), max(10, width)))
        # the narration grows at the bottom: the newest step stays in view on a short screen
        if flow.phase is Phase.RUN:
            self.call_after_refresh(self.scroll_end, animate=False)
        else:
            self.call_after_refresh(self.scroll_home, animate=False)

    def on_resize(self) -> None:
        if self.shown is not None:
            self.show(*self.shown)
