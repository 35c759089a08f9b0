"""The reference pages are the code's: each one (and the README's exit codes) is what
`python -m docs.generate` writes today, so a key, command, check, code or metric added in the
code and not on its page fails here. `pytest --update-goldens` rewrites them."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs import generate

OUTPUTS = generate.outputs()


@pytest.mark.parametrize("path", sorted(OUTPUTS), ids=lambda p: p.name)
def test_the_generated_page_is_current(path: Path, update_goldens: bool) -> None:
    if update_goldens:
        path.write_text(OUTPUTS[path])
    stale = f"{path.name} is stale: run python -m docs.generate (or pytest --update-goldens)"
    assert path.read_text() == OUTPUTS[path], stale


def test_every_vocabulary_reaches_its_page() -> None:
    """Not an empty page: each names every member of what it is generated from."""
    pages = {p.name: text for p, text in OUTPUTS.items()}
    assert all(f"`{m.served}`" in pages["metrics.md"] for m in generate.METRICS)
    assert all(f"`{c.key}`" in pages["health-checks.md"] for c in generate.HEALTH_CHECKS)
    assert all(f"`{generate.display_key(a)}`" in pages["keys.md"] for a in generate.ACTIONS)
    assert all(f"| {e.code} | {e.scope} | {e.word} |" in pages["README.md"]
               for e in generate.EXITS)
    names = [s.name for s in generate.catalog.builtin()]
    assert all(f"\n### {name}\n" in pages["scenarios.md"] for name in names)
    assert "## kinspect lab up" in pages["commands.md"]


def test_the_matrix_survives_a_regeneration() -> None:
    """Results come from real runs, not from the code: the page keeps them as they are."""
    current = (generate.REFERENCE / "scenarios.md").read_text()
    page = next(p for p in generate.PAGES if p.name == "scenarios.md")
    again = page.render(current)
    for start, end in generate.KEPT_BLOCKS:
        assert current.split(start)[1].split(end)[0] == again.split(start)[1].split(end)[0]
