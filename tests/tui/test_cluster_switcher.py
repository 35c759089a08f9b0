"""The cluster switcher (`c`), under Pilot: the profiles file's clusters offered, one chosen,
and the screen looks at it read-only from then on (its feed, its title, fault keys refused).
The chosen cluster refuses connections (127.0.0.1:1): what is checked is the switch."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import OptionList

from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole
from kinspect.tui.feed import LiveFeed, RecordedFeed
from kinspect.tui.modals import ClusterPicker
from tests.helpers.kraft_fixtures import T0
from tests.helpers.model_fixtures import demo_snapshot
from tests.helpers.waiting import first_snapshot, until


def test_c_switches_to_a_profile_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[clusters.staging]\nbootstrap = "127.0.0.1:1"\n\n'
                      '[clusters.prod]\nbootstrap = "127.0.0.1:2"\n')
    monkeypatch.setenv("KINSPECT_CONFIG", str(config))
    monkeypatch.setenv("KINSPECT_HOME", str(tmp_path / "home"))  # no lab runs there

    async def scenario() -> None:
        app = KinspectApp(RecordedFeed(demo_snapshot(taken_at=T0), title="lab"), LabConsole(),
                          clock=lambda: (T0 + 400) / 1000)
        async with app.run_test(size=(140, 40)) as pilot:
            await first_snapshot(pilot, app)
            assert app.read_only_reason is None
            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, ClusterPicker), "the picker")
            picker = app.screen
            assert isinstance(picker, ClusterPicker)
            options = picker.query_one(OptionList)
            assert [options.get_option_at_index(i).id for i in range(options.option_count)] \
                == ["staging", "prod"]
            await pilot.press("down", "enter")  # prod
            await until(pilot, lambda: isinstance(app.feed, LiveFeed), "the profile's feed")
            assert isinstance(app.feed, LiveFeed) and app.feed.title == "prod"
            assert app.feed.bootstrap == "127.0.0.1:2"
            assert app.read_only_reason is not None and "prod is not one" in app.read_only_reason
            assert app.snapshot is None or app.snapshot.admin_state != "ok"
            assert not app.check_action("kill", ())

    asyncio.run(scenario())
