"""The load panel's text: the live loss line and the per-second sparklines."""

from __future__ import annotations

from kinspect.load.liveloss import DoomedAcks, LiveLoss
from kinspect.load.trend import RateTrend
from kinspect.tui.load_panel import FAULT_MARK, doomed_text, load_panel_text, trend_text

T0 = 1_700_000_000_000


def test_rates_per_second_and_the_second_a_fault_was_applied_in() -> None:
    trend = RateTrend()
    trend.fault_at([T0 + 2_500])
    for second, (acked, failed) in enumerate([(0, 0), (5_000, 0), (10_000, 0), (10_000, 300)]):
        trend.observe(T0 + second * 1_000, acked, failed)
    samples = trend.frozen()
    assert [(s.acked_per_s, s.failed_per_s, s.fault) for s in samples] == [
        (5_000, 0, False), (5_000, 0, False), (0, 300, True)]
    text = trend_text(samples, width=40).plain
    assert text.splitlines()[0] == "acked/s  ██▁"
    assert FAULT_MARK in text.splitlines()[1]


def test_the_doomed_line_names_the_broker_that_holds_them() -> None:
    live = LiveLoss(120_000, (DoomedAcks("test1", 0, 39_895, (2,)),))
    assert doomed_text(live).plain == ("⚠ acked by a former leader: 39,895\n"
                                       "  broker 2 holds them; lost unless it leads again")
    assert doomed_text(LiveLoss(5, (), pending=5)).plain == (
        "acked by a former leader: 0 (5 waiting for the leader's answer)")


def test_acks0_has_nothing_to_judge() -> None:
    text = load_panel_text({"acked": 10, "rate": 1.0}, {"topic": "t", "acks": "0"}, True,
                           live=LiveLoss(10)).plain
    assert "acks=0: no broker acknowledged anything" in text
    assert "former leader" not in text


def test_the_live_figure_and_trend_survive_a_recording() -> None:
    """A replay shows the load panel as it was: the figure and the sparklines round-trip."""
    from kinspect.load.trend import RateSample, trend_from_json, trend_to_json

    live = LiveLoss(120_000, (DoomedAcks("test1", 0, 39_895, (2,)),), pending=3)
    assert LiveLoss.from_json(live.to_json()) == live
    trend = (RateSample(T0, 5_000.0, 0.0, False), RateSample(T0 + 1_000, 10.0, 3.0, True))
    assert trend_from_json(trend_to_json(trend)) == trend
