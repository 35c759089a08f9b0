"""A lesson's flow as a value: predictions, narration that follows what the screen saw (in
the steps' order, past the lab's reset), pauses, the presenter's key on stage, the reveal
judged on the measured row, the fix. Pure: the lesson is built here."""

from __future__ import annotations

from dataclasses import replace

from kinspect.lessons.flow import Flow, Happening, Phase, RunResult
from kinspect.lessons.lesson_values import Step, Trigger
from tests.helpers.lesson_fixtures import LESSON, ROW, t


def predicted() -> Flow:
    return Flow(LESSON).answer(2).answer(0)


def test_predictions_are_asked_in_order_then_the_run_is_ready() -> None:
    flow = Flow(LESSON)
    assert flow.question == 0
    assert flow.answer(7) == flow  # no such choice
    flow = flow.answer(2)
    assert (flow.question, flow.phase) == (1, Phase.STORY)
    flow = flow.answer(0)
    assert (flow.question, flow.phase, flow.answers) == (None, Phase.READY, (2, 0))


def test_a_step_waits_for_its_trigger_after_the_previous_one() -> None:
    flow = predicted().started()
    assert flow.step is not None and flow.step.text.en == "load starts"
    # the reset's leader change comes before the fault: it is not the one step 3 waits for
    flow = flow.saw(Happening(Trigger.LEADER_CHANGED))
    assert flow.shown == 0 and flow.waiting_for is LESSON.steps[1]
    flow = flow.saw(Happening(Trigger.FAULT, "kill"))  # not the fault this step names
    assert flow.shown == 0
    flow = flow.saw(Happening(Trigger.FAULT, "isolate"))  # the journal's word for isolate-zk
    assert flow.shown == 1 and flow.held  # a pause: the narration holds
    flow = flow.saw(Happening(Trigger.LEADER_CHANGED))
    assert flow.shown == 1  # held even though the next step happened
    flow = flow.go_on()
    assert flow.shown == 2 and not flow.held


def test_the_reveal_comes_once_the_run_ended_and_judges_the_predictions() -> None:
    flow = predicted().started().saw(Happening(Trigger.FAULT, "isolate")).go_on()
    flow = flow.saw(Happening(Trigger.LEADER_CHANGED))
    flow = flow.finished(RunResult("acks1-isolate-leader", row=ROW, held=True))
    assert flow.step is LESSON.steps[3]  # END is a trigger like the others
    assert flow.go_on().phase is Phase.REVEAL
    assert flow.go_on().verdicts() == (True, True)
    wrong = Flow(LESSON).answer(0).answer(1).started().finished(RunResult("x", row=ROW))
    assert wrong.go_on().verdicts() == (False, False)


def test_a_failed_run_judges_nothing_and_holds_nothing_up() -> None:
    flow = predicted().started().finished(RunResult("x", failure="the lab is down"))
    flow = flow.go_on()  # the fault step never came: the reveal comes anyway
    assert flow.phase is Phase.REVEAL and flow.verdicts() == (None, None)


def test_on_stage_every_step_waits_for_the_presenter() -> None:
    flow = Flow(LESSON, stage=True).answer(2).answer(0).started()
    assert flow.shown == -1  # the start happened; the presenter shows it
    flow = flow.go_on()
    assert flow.shown == 0
    assert flow.go_on().shown == 0  # the fault has not happened: nothing to show yet
    flow = flow.saw(Happening(Trigger.FAULT, "isolate")).saw(Happening(Trigger.LEADER_CHANGED))
    assert flow.shown == 0
    assert flow.go_on().go_on().shown == 2


def test_the_fix_names_why_a_wrong_choice_would_not_help_and_runs_the_right_one() -> None:
    flow = predicted().started().finished(RunResult("x", row=ROW)).go_on()
    while flow.phase is Phase.RUN:
        flow = flow.go_on()
    flow = flow.go_on()
    assert flow.phase is Phase.FIX
    assert flow.choose_fix(0).chosen_fix is LESSON.fix.choices[0]  # type: ignore[union-attr]
    flow = flow.choose_fix(1).fix_started()
    assert flow.phase is Phase.FIX_RUN
    flow = flow.finished(RunResult("acksall-isolate-leader", row={"acked_lost": 0}, held=True))
    assert flow.phase is Phase.FIX_DONE and flow.fix_result is not None
    assert flow.go_on().phase is Phase.SUMMARY


def test_hints_run_out_and_a_restart_forgets_the_answers() -> None:
    flow = predicted().hint().hint().hint()
    assert flow.hints_shown == 2
    assert flow.restart() == Flow(LESSON)


def test_what_one_diff_shows_at_once_is_taken_in_the_steps_order() -> None:
    lesson = replace(LESSON, steps=(
        Step(Trigger.FAULT, t("cut off"), do="isolate"),
        Step(Trigger.LEADER_CHANGED, t("new leader")),
        Step(Trigger.VIEWS_DISAGREE, t("two leaders"))))
    flow = Flow(lesson).answer(0).answer(0).started().saw(Happening(Trigger.FAULT, "isolate"))
    flow = flow.saw_all([Happening(Trigger.VIEWS_DISAGREE), Happening(Trigger.LEADER_CHANGED)])
    assert flow.shown == 2
