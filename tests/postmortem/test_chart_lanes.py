"""The chart's lanes: fault bands, who led, the lost window, labels that never overlap.

The events are shaped like a real acks1-isolate-leader run's (kinspect/postmortem/story/timeline.py
`merge`): kafka2 led test1-0 at epoch 0, was cut off, broker 1 was elected at epoch 1, and
kafka2 kept acknowledging until it rejoined and truncated its log.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kinspect.postmortem.story import lanes as ln
from tests.helpers.isolation import ATTRIBUTION, F, isolation_events, isolation_report, per_second


def isolation_lanes() -> ln.Lanes:
    return ln.build(per_second(), isolation_events(), ATTRIBUTION)


def test_the_fault_is_a_band_from_the_partition_to_the_heal() -> None:
    lanes = isolation_lanes()
    assert lanes.bands == [ln.Band(F, F + 15_069, "kafka2 cut off", "partition", True)]
    assert lanes.zero == F and lanes.origin == "the fault (kafka2 cut off)"
    # the window holds the run, the heal and the truncation after it
    assert lanes.lo < (F // 1000 - 8) * 1000 and lanes.hi > F + 15_945


def test_leadership_per_broker_with_the_cut_off_leaders_belief() -> None:
    lanes = isolation_lanes()
    assert lanes.brokers == [1, 2]
    assert sorted(lanes.bars, key=lambda b: (b.broker, b.start)) == [
        ln.Bar(1, 0, 1, F + 6_031, lanes.hi),
        # before the election: the 'was broker 2' of epoch 1, its epoch from the attribution
        ln.Bar(2, 0, 0, lanes.lo, F + 6_031),
        # after it: still acting as leader until its own log says it follows
        ln.Bar(2, 0, 0, F + 6_031, F + 15_873, believed=True),
    ]
    assert lanes.marks == [ln.Mark(2, F + 15_945, "truncated to 35,857")]


def test_the_lost_window_and_the_dense_series() -> None:
    lanes = isolation_lanes()
    assert lanes.lost == [ln.Lost(F - 32, F + 12_789, 64_143, 2, 0)]
    assert len(lanes.seconds) == 22 and lanes.seconds == list(range(lanes.seconds[0],
                                                                      lanes.seconds[0] + 22))
    assert lanes.acked[3] == 0 and lanes.acked[-1] == 0 and lanes.failed[6] == 120


def test_the_reports_timeline_entries_give_the_same_lanes() -> None:
    """The TUI has only report.json: its capped, trimmed entries must draw the same picture."""
    report = isolation_report()
    from_report = ln.build([s.to_json() for s in report.per_second], list(report.timeline),
                           [a.to_json() for a in report.attribution])
    assert (from_report.bands, from_report.bars, from_report.marks, from_report.lost) == (
        isolation_lanes().bands, isolation_lanes().bars, isolation_lanes().marks,
        isolation_lanes().lost)


def fault(dt: int, action: str, node: str | None = None) -> dict[str, Any]:
    return {"ts": F + dt, "kind": "fault", "action": action, "node": node,
            "detail": f"fault: {action} {node or ''}".strip()}


def test_bands_end_at_their_undo_and_a_restart_is_short() -> None:
    faults = [fault(0, "kill", "kafka1"), fault(1_000, "pause", "kafka3"),
              fault(2_000, "slow", "kafka2"), fault(3_000, "resume", "kafka3"),
              fault(4_000, "restart", "kafka2"), fault(5_000, "start", "kafka1"),
              fault(6_000, "unslow"), fault(7_000, "up"), fault(8_000, "stop", "kafka3")]
    got = [(b.label, b.start - F, b.end - F, b.undone)
           for b in ln.bands(ln.timeline_events(faults), F + 20_000, 500)]
    assert got == [("kill kafka1", 0, 5_000, True), ("pause kafka3", 1_000, 3_000, True),
                   ("slow kafka2", 2_000, 6_000, True), ("restart kafka2", 4_000, 4_500, True),
                   ("stop kafka3", 8_000, 20_000, False)]


def test_a_new_partition_replaces_the_old_one() -> None:
    first = {**fault(0, "partition"), "groups": [["kafka1"], ["zk1", "kafka2", "kafka3"]]}
    second = {**fault(4_000, "partition"),
              "groups": [["kafka1", "kafka2", "kafka3"], ["zk1", "kafka2", "kafka3"]]}
    got = ln.bands(ln.timeline_events([first, second, fault(9_000, "heal")]), F + 20_000)
    assert [(b.label, b.start - F, b.end - F) for b in got] == [
        ("kafka1 cut off", 0, 4_000), ("kafka1 cut from zk1", 4_000, 9_000)]


def test_a_killed_leader_does_not_act_as_one_and_a_clean_handover_is_no_cut_off() -> None:
    killed = [fault(0, "kill", "kafka3"),
              {"ts": F + 6_000, "kind": "leader_changed", "partition": "t-0", "old": 3, "new": 1,
               "epoch": 5},
              fault(20_000, "start", "kafka3"),
              {"ts": F + 23_000, "kind": "log_follower_start", "partition": "t-0", "broker": 3,
               "epoch": 5}]
    bars = ln.bars(ln.timeline_events(killed), [], F - 5_000, F + 30_000)
    assert [(b.broker, b.believed) for b in bars] == [(3, False), (1, False)]
    handover = [{"ts": F, "kind": "log_leader_start", "partition": "t-0", "broker": 1, "epoch": 2,
                 "old": 2},
                {"ts": F + 40, "kind": "log_follower_start", "partition": "t-0", "broker": 2,
                 "epoch": 2}]
    assert not any(b.believed for b in ln.bars(ln.timeline_events(handover), [], F - 5_000,
                                               F + 5_000))


def test_no_leader_ends_the_bar_and_several_partitions_each_have_theirs() -> None:
    events = [{"ts": F, "kind": "partition_offline", "partition": "t-0", "old": 2,
               "source": "observer"},
              {"ts": F + 9_000, "kind": "log_leader_start", "partition": "t-0", "broker": 2,
               "epoch": 4},
              {"ts": F + 1_000, "kind": "leader_changed", "partition": "t-3", "old": 2, "new": 3,
               "epoch": 7}]
    bars = ln.bars(ln.timeline_events(sorted(events, key=lambda e: int(str(e["ts"])))), [],
                   F - 2_000, F + 10_000)
    assert [(b.partition, b.broker, b.start - F, b.end - F) for b in bars] == [
        (0, 2, -2_000, 0), (0, 2, 9_000, 10_000), (3, 2, -2_000, 1_000), (3, 3, 1_000, 10_000)]


def overlaps(placed: list[ln.Placed], gap: int) -> list[tuple[ln.Placed, ln.Placed]]:
    return [(a, b) for i, a in enumerate(placed) for b in placed[i + 1:]
            if a.text and b.text and a.row == b.row
            and not (a.col + len(a.text) + gap <= b.col or b.col + len(b.text) + gap <= a.col)]


@pytest.mark.parametrize("seed", range(30))
def test_packed_labels_never_overlap(seed: int) -> None:
    rng = random.Random(seed)
    width = rng.choice([40, 72, 120])
    items = []
    for _ in range(rng.randint(1, 14)):
        start = rng.randrange(width)
        items.append((start, rng.choice(["kill kafka1", "kafka2 cut off", "restart kafka3",
                                         "partition kafka1,kafka2 | zk1,kafka3", "heal"]),
                      min(width, start + rng.randint(1, 30))))
    placed = ln.pack(items, width, rows=3)
    assert len(placed) == len(items)
    assert not overlaps(placed, gap=2)
    assert all(0 <= p.row < 3 and p.col >= 0 and p.col + len(p.text) <= width for p in placed)


def test_pack_prefers_free_rows_then_cuts_short() -> None:
    # concurrent bands go to separate rows; a third label at the same spot cuts one short
    placed = ln.pack([(0, "kill kafka3", 30), (1, "kill kafka2", 30)], 60, rows=2)
    assert [(p.row, p.text) for p in placed] == [(0, "kill kafka3"), (1, "kill kafka2")]
    placed = ln.pack([(0, "kafka1 cut off", 5), (0, "slow kafka2", 5), (8, "restart kafka3", 9)],
                     60, rows=2)
    assert [(p.row, p.col, p.text) for p in placed] == [
        (0, 0, "kafka…"), (1, 0, "slow kafka2"), (0, 8, "restart kafka3")]
    # at the right edge a label moves left rather than off the lane
    assert ln.pack([(58, "heal", 59)], 60) == [ln.Placed(0, 56, "heal")]


def test_fit_takes_the_first_candidate_that_is_free() -> None:
    placed = ln.fit([[(10, "truncated to 35,857")], [(12, "epoch 0"), (0, "e0")],
                     [(55, "too long for the row")]], 60, taken=[(7, 9)])
    assert placed == [ln.Placed(0, 10, "truncated to 35,857"), ln.Placed(0, 0, "e0"), None]


def test_ticks_are_round_and_include_zero() -> None:
    assert ln.ticks(-8.7, 16.5, most=6) == [-5, 0, 5, 10, 15]
    assert ln.ticks(-3.4, 44.2, most=5) == [0, 10, 20, 30, 40]


def test_draw_writes_a_readable_png(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.text import Text as MplText

    from kinspect.postmortem.story import chart

    png = tmp_path / "timeline.png"
    chart.draw(per_second(), isolation_events(), ATTRIBUTION, png, "test1, acks=1")
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(header[16:20], "big")
    assert 900 <= width <= 1100
    fig = chart.figure(isolation_lanes(), "test1, acks=1")
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        for ax in fig.axes[:2]:  # the faults and the leaders lanes: their words never collide
            boxes = [t.get_window_extent(renderer) for t in ax.findobj(MplText)
                     if t.get_text() and t.axes is ax and t is not ax.title]
            assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                        if a.overlaps(b)]
        words = {t.get_text() for ax in fig.axes for t in ax.texts}
        assert {"kafka2 cut off", "truncated to 35,857", "epoch 0", "epoch 1"} <= words
        assert words & {"still acting as leader", "cut off"}  # the longer one where it fits
        legend = {t.get_text() for t in fig.legends[0].get_texts()}
        assert "acknowledged, then lost (64,143)" in legend
    finally:
        plt.close(fig)


def test_the_tui_lanes_fit_the_dialog() -> None:
    from kinspect.tui.report_screen import lanes_text

    text = lanes_text(isolation_lanes(), 80)
    lines = text.plain.split("\n")
    assert all(len(line) <= 80 for line in lines)
    rows = {line[:10].strip(): line[10:] for line in lines}
    assert "kafka2 cut off" in rows["faults"]
    assert rows["broker 2"].startswith("█") and "▒" in rows["broker 2"] and "✕" in rows["broker 2"]
    assert rows["broker 1"].rstrip().endswith("█") and "▒" not in rows["broker 1"]
    # broker 1 takes over where broker 2's own bar ends
    assert rows["broker 1"].index("█") == rows["broker 2"].index("▒")
    assert "64,143" in rows["lost"] and " 0 " in lines[-2]


def test_the_chart_is_drawn_again_from_a_run_dir_without_spark(tmp_path: Path,
                                                                capsys: Any) -> None:
    import json

    from kinspect.postmortem.story import chart
    from tests.helpers.rundirs import scenario_a

    run = scenario_a(tmp_path / "run")
    assert chart.main([str(run)]) == 1 and "kinspect postmortem" in capsys.readouterr().err
    (run / "postmortem").mkdir()
    (run / "postmortem" / "report.json").write_text(json.dumps(
        {"topic": "t", "acks": "1", "per_second": per_second(), "attribution": []}))
    assert chart.main([str(run), str(tmp_path / "again.png")]) == 0
    assert (tmp_path / "again.png").read_bytes()[:4] == b"\x89PNG"
