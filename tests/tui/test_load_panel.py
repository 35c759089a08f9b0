"""The load panel's text: the live loss line and the per-second sparklines."""

from __future__ import annotations

from pathlib import Path

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
    from kinspect.load.counts import ProducerCounts
    from kinspect.load.runsettings import LoadSettings

    text = load_panel_text(ProducerCounts(acked=10, rate=1.0), LoadSettings("t", "b", acks="0"),
                           True, live=LiveLoss(10)).plain
    assert "acks=0: no broker acknowledged anything" in text
    assert "former leader" not in text


def test_the_live_figure_and_trend_survive_a_recording() -> None:
    """A replay shows the load panel as it was: the figure and the sparklines round-trip."""
    from kinspect.load.trend import RateSample, trend_from_json, trend_to_json

    live = LiveLoss(120_000, (DoomedAcks("test1", 0, 39_895, (2,)),), pending=3)
    assert LiveLoss.from_json(live.to_json()) == live
    trend = (RateSample(T0, 5_000.0, 0.0, False), RateSample(T0 + 1_000, 10.0, 3.0, True))
    assert trend_from_json(trend_to_json(trend)) == trend


def test_a_recorded_load_status_reads_back_as_it_was_and_an_older_one_as_far_as_it_goes() -> None:
    """The recording keeps the typed status as the same keys it always had; a status an older
    kinspect recorded (fewer keys, settings not written yet) reads back with its defaults."""
    from pathlib import Path

    from kinspect.load.counts import ConsumerCounts, ProducerCounts
    from kinspect.load.load_process import LoadStatus
    from kinspect.load.runsettings import LoadSettings
    from kinspect.load.trend import RateSample

    status = LoadStatus(Path("/run"), True, LoadSettings("t", "b:9092", acks="all"),
                        ProducerCounts(2, 10, 8, 1, 1, 3.0, {"_MSG_TIMED_OUT": 1}, 2.0, 9.0,
                                       False, T0),
                        ConsumerCounts(received=8, processed=7, crashes=1, running=True),
                        LiveLoss(8), (RateSample(T0, 5.0, 0.0, True),))
    data = status.to_json()
    assert list(data["stats"]) == ["producers", "sent", "acked", "failed", "in_flight", "rate",
                                   "failed_by_error", "latency_p50_ms", "latency_p99_ms",
                                   "done", "ts"]  # aggregate's keys, in its order
    assert LoadStatus.from_json(data) == status
    old = LoadStatus.from_json({"run_dir": "/old", "running": False,
                                "settings": {"topic": "t", "acks": "1", "secrets_note": "x"},
                                "stats": {"acked": 5}, "consumers": None})
    assert old.topic() == "t" and old.settings is not None and old.settings.bootstrap == ""
    assert old.stats == ProducerCounts(acked=5) and not old.consumers_running()
    starting = LoadStatus.from_json({"run_dir": "/new", "running": True, "settings": {},
                                     "stats": {}, "consumers": None})
    assert starting.settings is None and starting.topic() == ""
    assert load_panel_text(starting.stats, starting.settings, True).plain.startswith(
        "no load running")


def test_the_panel_reads_the_consumer_group_and_the_commonest_error() -> None:
    from kinspect.load.counts import ConsumerCounts, ProducerCounts
    from kinspect.load.runsettings import LoadSettings

    settings = LoadSettings("orders", "b:9092")
    failing = ProducerCounts(acked=3, failed=7, failed_by_error={"A": 2, "B": 5})
    lines = load_panel_text(failing, settings, False, live=LiveLoss(3)).plain.splitlines()
    assert lines[0] == "load orders acks=1 finished"
    assert lines[1] == "acked 3 · failed 7 · 0/s" and lines[-1] == "B 5"
    group = ConsumerCounts(received=9, processed=5, failed=1, aborted=2, crashes=1)
    assert load_panel_text(failing, settings, True, group).plain.splitlines()[-1] == (
        "processed 5 of 9 failed 3 crashed 1")
    assert load_panel_text(None, settings, True).plain.endswith("starting…")


def test_counts_no_producer_published_yet_are_not_shown_as_zeros(tmp_path: Path) -> None:
    """Between the runner's start and its producers' first publish the panel says the load
    is starting, not "acked 0 · p50 0 ms" as if the producers had counted nothing."""
    import os

    from kinspect.load.load_process import load_status
    from kinspect.load.rundir import PID_FILE
    from kinspect.load.runsettings import LoadSettings
    from kinspect.load.runstats import StatsPublisher

    LoadSettings("orders", "b:9092").save(tmp_path)
    (tmp_path / PID_FILE).write_text(str(os.getpid()))
    status = load_status(tmp_path)
    assert status is not None and status.running and status.stats is None
    text = load_panel_text(status.stats, status.settings, status.running).plain
    assert text == "load orders acks=1 running\nstarting…"
    assert load_panel_text(None, status.settings, False).plain.endswith("no counts published")
    publisher = StatsPublisher(tmp_path, 0)
    publisher.acked(2.0)
    publisher.maybe_publish(T0, sent=1, in_flight=0, force=True)
    status = load_status(tmp_path)
    assert status is not None and status.stats is not None
    assert (status.stats.producers, status.stats.acked) == (1, 1)


OLD_SETTINGS = {"topic": "orders", "bootstrap": "localhost:9092", "acks": "all",
                "count": 100000, "duration_s": None, "rate": 10000.0, "producers": 2,
                "size": 100, "idempotent": True, "retries": None, "delivery_timeout_ms": None,
                "max_in_flight": None, "linger_ms": None, "extra": {"sasl.password": "***"},
                "crash_at_s": None, "buffer_full": "wait", "run_id": "r1",
                "secrets_note": "sasl.password given as a literal value"}
OLD_STATS = {"producers": 2, "sent": 12000, "acked": 11000, "failed": 40, "in_flight": 960,
             "rate": 4980.5, "failed_by_error": {"_MSG_TIMED_OUT": 30, "NOT_ENOUGH_REPLICAS": 10},
             "latency_p50_ms": 3.1, "latency_p99_ms": 41.0, "done": False, "ts": T0}
OLD_CONSUMERS = {"received": 10500, "processed": 10400, "failed": 20, "aborted": 5,
                 "commits": 30, "crashes": 1, "incarnations": 3, "running": True}


def test_a_recording_made_before_the_status_was_typed_still_plays() -> None:
    """A load as the recorder kept it before the typed status (settings.json as read, the
    producers' summed dict, the group's dict with `running`): the replay reads it, the panel
    says what it said then (the texts are the old load_panel_text's), and recording it again
    keeps every key but the settings' secrets note, which the panel never showed."""
    from kinspect.tui.replay_feed import load_from

    recorded = {"run_dir": "/old/run", "running": True, "settings": OLD_SETTINGS,
                "stats": OLD_STATS, "consumers": OLD_CONSUMERS,
                "live": {"acked": 11000, "doomed": 0, "pending": 0, "writers": [],
                         "partitions": []},
                "trend": [[T0, 5000.0, 0.0, 0], [T0 + 1000, 4000.0, 40.0, 1]]}
    load = load_from(recorded)
    assert load is not None and load.consumers_running() and load.topic() == "orders"
    text = load_panel_text(load.stats, load.settings, load.running, load.consumers, load.live,
                           load.trend, width=30).plain
    assert text == ("load orders acks=all running\nacked 11,000 · failed 40 · 4,980/s\n"
                    "acked by a former leader: 0\nacked/s  █▇\nfailed/s ▁✕\n"
                    "processed 10,400 of 10,500 failed 25 crashed 1")
    again = load.to_json()
    assert again["stats"] == OLD_STATS and list(again["stats"]) == list(OLD_STATS)
    assert again["consumers"] == OLD_CONSUMERS and list(again["consumers"]) == list(OLD_CONSUMERS)
    assert again["settings"] == {k: v for k, v in OLD_SETTINGS.items() if k != "secrets_note"}
    assert (again["live"], again["trend"]) == (recorded["live"], recorded["trend"])
    no_group = load_from({**recorded, "consumers": None})
    assert no_group is not None and not no_group.consumers_running()
    assert load_panel_text(no_group.stats, no_group.settings, True, None, no_group.live,
                           no_group.trend, width=30).plain.endswith("\n_MSG_TIMED_OUT 30")
    not_written = load_from({**recorded, "settings": {}, "stats": {}, "consumers": None})
    assert not_written is not None and not_written.settings is None
    assert load_panel_text(not_written.stats, not_written.settings, True).plain == (
        "no load running — press l to start one")


def test_a_run_dir_without_its_settings_yet_is_not_said_to_be_no_load(tmp_path: Path) -> None:
    """Just after l the run dir is there but its load still checks the topic: the panel says
    the settings are not written yet, not "no load running — press l" (l would start another)."""
    from kinspect.load.load_process import load_status
    from kinspect.tui.load_panel import LoadPanel

    status = load_status(tmp_path)
    assert status is not None and status.settings is None and not status.running
    panel = LoadPanel()
    panel.show(status)
    text = panel.render().plain
    assert text.startswith(f"load {tmp_path.name}: no settings.json yet") and "load.out" in text
    assert "no load running" not in text


def test_an_older_recording_of_counts_no_producer_published_reads_as_not_known() -> None:
    """An older kinspect recorded the sum over no producer (producers 0, every count 0)
    before they published: the replay says starting…, as the live screen now does."""
    from kinspect.tui.replay_feed import load_from

    zeros = {**dict.fromkeys(OLD_STATS, 0), "failed_by_error": {}, "done": False}
    load = load_from({"run_dir": "/old/run", "running": True, "settings": OLD_SETTINGS,
                      "stats": zeros, "consumers": None})
    assert load is not None and load.stats is None
    assert load_panel_text(load.stats, load.settings, load.running).plain.endswith("starting…")


def test_no_latency_is_shown_before_a_message_was_acknowledged() -> None:
    """Nothing acked yet (the start, or a cluster that answers nothing): the producers'
    percentiles over no acknowledgement are 0, which the panel does not show as 0 ms."""
    from kinspect.load.counts import ProducerCounts
    from kinspect.load.runsettings import LoadSettings

    settings = LoadSettings("orders", "b:9092")
    waiting = ProducerCounts(producers=1, sent=500, in_flight=500)
    last = load_panel_text(waiting, settings, True).plain.splitlines()[-1]
    assert last == "in flight 500 · no acknowledgement yet"
    acked = ProducerCounts(producers=1, sent=500, acked=400, in_flight=100, latency_p50_ms=3.2,
                           latency_p99_ms=40.0)
    last = load_panel_text(acked, settings, True).plain.splitlines()[-1]
    assert last == "in flight 100 · p50 3 ms · p99 40 ms"
