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
