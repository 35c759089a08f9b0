"""The header says what is failing, after the facts it must never hide."""

from __future__ import annotations

from kinspect.tui.render import header_text
from tests.helpers.model_fixtures import demo_snapshot


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
    of its own. The demo cluster has a partition with no leader: critical for both."""
    from kinspect.cli.health import health_json
    from kinspect.model import Verdict, assess

    snapshot = demo_snapshot()
    verdict = assess(snapshot).verdict
    assert verdict is Verdict.CRITICAL
    assert health_json(snapshot)["verdict"] == verdict.value
    plain = header_text(snapshot, snapshot.taken_at, "lab", health=verdict).plain
    assert "admin ok │ health critical │" in plain
    assert "health" not in header_text(snapshot, snapshot.taken_at, "lab").plain
