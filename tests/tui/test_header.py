"""The header says what is failing, after the facts it must never hide."""

from __future__ import annotations

import asyncio
import threading

import pytest
from rich.text import Text
from textual.widgets import Static

from kinspect.model import (
    ClusterSnapshot,
    HealthReport,
    Severity,
    Unchecked,
    Unknown,
    Verdict,
    assess,
    build_snapshot,
)
from kinspect.tui.app import KinspectApp
from kinspect.tui.feed import RecordedFeed
from kinspect.tui.messages import Arrival, SnapshotArrived
from kinspect.tui.render import header_text
from tests.helpers.model_fixtures import T0, broker_view, demo_snapshot, zk_view
from tests.helpers.waiting import first_snapshot, until


def test_failing_is_said_last_with_a_count_of_the_rest() -> None:
    snapshot = demo_snapshot()
    text = header_text(snapshot, snapshot.taken_at + 100, "lab",
                       ("no new snapshot: building one failed (RuntimeError: x)",
                        "AdminClient: timed out"))
    plain = text.plain
    assert plain.index("controller") < plain.index("FAILING")
    assert plain.endswith("FAILING: no new snapshot: building one failed (RuntimeError: x) "
                          "(+1 more)")


def test_no_problem_no_failing_and_connecting_still_says_it() -> None:
    snapshot = demo_snapshot()
    assert "FAILING" not in header_text(snapshot, snapshot.taken_at, "lab").plain
    assert header_text(None, 0, "lab", ("reading the lab: DockerException: gone",)).plain == (
        "kinspect lab  connecting…  FAILING: reading the lab: DockerException: gone")


def test_the_header_gives_kinspect_healths_verdict_from_the_same_assessment() -> None:
    """The header and `kinspect health` read one HealthReport: the screen never judges by rules
    of its own. The demo cluster's __consumer_offsets-0 has one replica and
    min.insync.replicas 2, under min ISR by Kafka's own definition (TopicCommand: ISR size <
    min.insync.replicas, worked out here from the ISR and the topic's config): critical for both."""
    from kinspect.cli.health import health_json

    snapshot = demo_snapshot()
    kafka_under_min = [p.name for t in snapshot.topics if not isinstance(t.config, Unknown)
                       for p in t.partitions
                       if len(p.isr) < int(dict(t.config)["min.insync.replicas"].value)]
    assert kafka_under_min == ["__consumer_offsets-0"]
    report = assess(snapshot)
    assert report.under_min_isr == tuple(kafka_under_min) and report.offline == ()
    assert report.verdict is Verdict.CRITICAL and health_json(snapshot)["verdict"] == "critical"
    plain = header_text(snapshot, snapshot.taken_at, "lab", health=report.verdict).plain
    assert "admin ok │ health critical │" in plain
    assert "health" not in header_text(snapshot, snapshot.taken_at, "lab").plain


def warned_snapshot() -> ClusterSnapshot:
    """min.insync.replicas 3 on a topic of replication factor 3: a warning, nothing worse."""
    zk = zk_view()
    return build_snapshot(zk, broker_view(zk, min_isr="3"), [1, 2, 3], T0)


def header_and_warnings(app: KinspectApp) -> tuple[str, str]:
    def plain(widget_id: str) -> str:
        content = app.query_one(widget_id, Static).content
        return content.plain if isinstance(content, Text) else str(content)
    return plain("#header"), plain("#warnings")


def test_the_screen_shows_the_verdict_assessed_in_the_feeds_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot `kinspect health` calls a warning is one on screen, and it was assessed in
    the feed's thread: never on the event loop (~16 ms a snapshot at 10,000 partitions)."""
    assessed_in: list[threading.Thread] = []
    real = assess

    def spy(snapshot: ClusterSnapshot) -> HealthReport:
        assessed_in.append(threading.current_thread())
        return real(snapshot)

    monkeypatch.setattr("kinspect.tui.messages.assess", spy)
    snapshot = warned_snapshot()
    assert real(snapshot).verdict is Verdict.WARNING

    async def scenario() -> None:
        app = KinspectApp(RecordedFeed(snapshot), clock=lambda: (T0 + 400) / 1000)
        async with app.run_test(size=(140, 40)) as pilot:
            await first_snapshot(pilot, app)
            header, _ = header_and_warnings(app)
            assert "│ health warning │" in header

    asyncio.run(scenario())
    assert len(assessed_in) == 1 and assessed_in[0] is not threading.main_thread()


def test_the_header_and_warnings_draw_the_messages_assessment_not_their_own() -> None:
    """What the message carries is drawn as is: a report saying warning, with one check it
    could not make, over a snapshot that alone would be critical with no check unmade."""
    snapshot = demo_snapshot()
    assert assess(snapshot).verdict is Verdict.CRITICAL and assess(snapshot).unchecked == ()
    carried = HealthReport(warnings=("told by the feed",), unchecked=(
        Unchecked("under_min_isr", Severity.INFO, "refused to this user", ("orders-1",)),))

    async def scenario() -> None:
        app = KinspectApp(RecordedFeed(warned_snapshot()), clock=lambda: (T0 + 400) / 1000)
        async with app.run_test(size=(140, 40)) as pilot:
            await first_snapshot(pilot, app)
            app.post_message(SnapshotArrived(Arrival(snapshot, carried)))
            await until(pilot, lambda: app.snapshot is snapshot, "the carried report drawn")
            header, warnings = header_and_warnings(app)
            assert "│ health warning │" in header
            assert "? under min ISR unknown for 1: orders-1 (refused to this user)" in warnings

    asyncio.run(scenario())
