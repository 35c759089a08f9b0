"""Regenerate the README's screenshots from a real lab during a failover (SVG, via Pilot).

    kinspect demo --no-ui && .venv/bin/python screenshots/take.py
    .venv/bin/python screenshots/take.py --chart [RUN_DIR]    # only the post-mortem chart
    kinspect lab up --mode kraft && .venv/bin/python screenshots/take.py --kraft

Keys are pressed as a person would: start load with `l`, isolate test1's leader with `i`,
watch the followers fall behind and the zombie leader's log run ahead of the new leader's,
with the acknowledgements it will lose counted live in the load panel; heal with `h`, start a
slow consumer group with `g` and watch its lag grow. Then the acks1-isolate-leader scenario
runs (it resets the lab and takes it down, about 2 min) and its post-mortem's timeline.png is
drawn again as postmortem-timeline.png (with RUN_DIR, that run's instead).
With --kraft, on a KRaft lab: the leader cut off from the controller quorum, fenced by it, and
the header naming the quorum's real leader (6-kraft-fenced-leader.svg).
With --oncall, on a `lab up --tls --authorizer` lab: a throttled reassignment as the lab sees
it (7-reassignment.svg), then orders' ISR down to one replica as an on-call user allowed only
Describe sees it over SASL_SSL: `?` where a flag was not told, and why (8-oncall-describe-only.svg).
With --disk, on a `lab up --log-dirs 2` lab: kafka2's second log dir filled under load until
Kafka takes it offline (12-full-disk.svg), then kafka2's broker view sorted by health
(13-broker-view.svg).
With --lesson, on the lab: lesson 2 (acks=1, the leader cut off) asked, narrated in Chinese at
80x24 and revealed (9-, 10-, 11-lesson-*.svg); its scenario resets the lab (about 2 min).
With --site, no lab: the docs site built (`mkdocs build --strict`) and its front page as
headless Chromium draws it (site-front-page.png; Debian's `chromium` package).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets import Input

from kinspect.lab import running_lab
from kinspect.lab.topics import DEMO_TOPICS, create_topics
from kinspect.postmortem.story.chart import redraw
from kinspect.tui.app import KinspectApp
from kinspect.tui.console import LabConsole
from kinspect.tui.feed import LiveFeed

HERE = Path(__file__).parent
SIZE = (160, 45)


async def until(pilot: Any, probe: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        await pilot.pause(0.2)
    raise SystemExit(f"screenshots: timed out waiting for {what}")



def load_acked(app: Any) -> bool:
    """The load panel has counted an acknowledgement."""
    if app.load is None or app.load.stats is None:
        return False
    return bool(app.load.stats.acked > 0)

def test1(app: KinspectApp) -> Any:
    return app.snapshot.partition("test1", 0) if app.snapshot else None


def behind(app: KinspectApp) -> bool:
    """The leader is cut off and its followers' own log ends trail its log on screen by more
    than a moment's replication (they no longer fetch from it)."""
    p = test1(app)
    cut_off = bool(app.lab and app.lab.groups)
    return cut_off and p is not None and any((r.lag or 0) > 5_000 for r in p.replica_logs)


def doomed(app: KinspectApp) -> bool:
    """The cut-off leader's log runs ahead of the new one's, and the load panel counts the
    acknowledgements that will vanish (a couple of seconds of them, so the figure is big)."""
    p, live = test1(app), app.load.live if app.load else None
    return bool(p and p.diverged and live and live.doomed_total > 20_000)


def lagging(app: KinspectApp) -> bool:
    """The group's lag is on screen and its trend is measured (growing)."""
    groups = app.snapshot.groups if app.snapshot else ()
    return any(g.group_id == "kinspect-tui" and (app.lag_trend.per_second(g.group_id) or 0) > 0
               for g in groups)


async def take() -> None:
    lab = running_lab()
    if lab is None:
        raise SystemExit("screenshots: no lab is running (kinspect demo --no-ui first)")
    app = lab_app(lab)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: test1(app) is not None and app.lab is not None, 30, "test1")
        await pilot.press("l")
        await pilot.pause(0.5)
        app.screen.query_one("#count", Input).value = "2000000"  # outlast the failover
        await pilot.press("enter")  # otherwise the form's defaults: test1, acks=1, 10,000 msg/s
        await until(pilot, lambda: load_acked(app), 30, "load")
        await pilot.pause(3)
        app.save_screenshot(str(HERE / "1-healthy-under-load.svg"))
        leader = test1(app).leader
        await pilot.press(str(leader), "i")
        await pilot.pause(0.5)
        await pilot.press("down", "down", "enter")  # from everything (clients still reach it)
        await until(pilot, lambda: behind(app), 30, "the followers falling behind the cut-off "
                    "leader")
        app.save_screenshot(str(HERE / "2-leader-cut-off.svg"))
        await until(pilot, lambda: test1(app).leader not in (None, leader), 60, "a new leader")
        await until(pilot, lambda: doomed(app), 60, "the live loss figure")
        app.save_screenshot(str(HERE / "3-new-leader.svg"))
        await pilot.press("h")
        await until(pilot, lambda: not test1(app).missing, 90, "the ISR to heal")
        await pilot.press("g")  # a consumer group on the load's topic, slower than the load
        await pilot.pause(0.5)
        app.screen.query_one("#process_ms", Input).value = "1"
        await pilot.press("enter")
        await until(pilot, lambda: lagging(app), 60, "the group's lag, growing")
        await pilot.pause(1)
        app.save_screenshot(str(HERE / "5-consumer-lag.svg"))
        await pilot.press("g")  # stop the group
        await pilot.pause(1)
        await pilot.press("l")  # stop the load
        await pilot.pause(2)
        await pilot.press("question_mark")
        await pilot.pause(0.5)
        app.save_screenshot(str(HERE / "4-help.svg"))
    print(f"screenshots written to {HERE}", file=sys.stderr)


def lab_app(lab: Any) -> KinspectApp:
    expected = {n.broker_id: n.address for n in lab.brokers if n.broker_id is not None}
    feed = LiveFeed(lab.bootstrap, lab.zookeeper_address, True, expected,
                    title=f"lab ({lab.preset} preset, {lab.backend})",
                    controllers=lab.controller_addresses or None)
    return KinspectApp(feed, LabConsole(), no_confirm=True)


def fenced(app: KinspectApp, broker: int) -> bool:
    """The quorum fenced the cut-off broker and test1 has another leader, both on screen."""
    snapshot, p = app.snapshot, test1(app)
    gone = any(b.id == broker and b.fenced for b in snapshot.brokers) if snapshot else False
    return gone and p is not None and p.leader not in (None, broker)


async def take_kraft() -> None:
    lab = running_lab()
    if lab is None or not lab.kraft:
        raise SystemExit("screenshots: no KRaft lab is running (kinspect lab up --mode kraft)")
    subprocess.run([sys.executable, "-m", "kinspect", "lab", "heal"], check=False)
    create_topics(lab.bootstrap, DEMO_TOPICS)  # as `kinspect demo` makes them
    app = lab_app(lab)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.lab is not None and app.snapshot is not None
                    and app.snapshot.quorum is not None, 30, "the quorum")
        await pilot.press("l")
        await pilot.pause(0.5)
        app.screen.query_one("#count", Input).value = "2000000"
        await pilot.press("enter")
        await until(pilot, lambda: load_acked(app), 60, "load")
        await until(pilot, lambda: test1(app) is not None, 30, "test1")
        leader = test1(app).leader
        await pilot.press(str(leader), "i")
        await pilot.pause(0.5)
        await pilot.press("enter")  # the first choice: from the controller quorum
        await until(pilot, lambda: fenced(app, leader), 60, "the quorum fencing the leader")
        await pilot.pause(2)
        app.save_screenshot(str(HERE / "6-kraft-fenced-leader.svg"))
        await pilot.press("h")
        await pilot.pause(1)
        await pilot.press("l")  # stop the load
        await pilot.pause(2)
    print(f"KRaft screenshot written to {HERE}", file=sys.stderr)


def dir_offline(app: KinspectApp, broker: int) -> bool:
    snapshot = app.snapshot
    return snapshot is not None and any(b.id == broker and b.offline_log_dirs
                                        for b in snapshot.brokers)


async def take_disk() -> None:
    lab = running_lab()
    if lab is None or int(lab.extra.get("log_dirs", 1)) < 2:
        raise SystemExit("screenshots: no lab with two log dirs (kinspect lab up --log-dirs 2)")
    create_topics(lab.bootstrap, DEMO_TOPICS)
    app = lab_app(lab)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: test1(app) is not None and app.lab is not None, 30, "test1")
        await pilot.press("l")
        await pilot.pause(0.5)
        app.screen.query_one("#topic", Input).value = "orders"  # its 6 partitions span both dirs
        app.screen.query_one("#count", Input).value = "2000000"
        await pilot.press("enter")
        await until(pilot, lambda: load_acked(app), 30, "load")
        subprocess.run([sys.executable, "-m", "kinspect", "lab", "fill-disk", "kafka2"],
                       check=True)
        await until(pilot, lambda: dir_offline(app, 2), 60, "kafka2's log dir offline")
        await pilot.pause(3)
        app.save_screenshot(str(HERE / "12-full-disk.svg"))
        await pilot.press("2", "b", "s")
        await pilot.pause(1)
        app.save_screenshot(str(HERE / "13-broker-view.svg"))
        await pilot.press("escape", "l")  # stop the load
        await pilot.pause(2)
    subprocess.run([sys.executable, "-m", "kinspect", "lab", "free-disk", "kafka2"], check=False)
    print(f"disk screenshots written to {HERE}", file=sys.stderr)


def kafka_tool(lab: Any, main_class: str, *args: str) -> str:
    from kinspect.lab import dist

    return subprocess.run(dist.ensure().tool_command(main_class, "--bootstrap-server",
                                                      lab.bootstrap, *args),
                          check=True, capture_output=True, text=True).stdout


def moving(app: KinspectApp, topic: str) -> bool:
    p = app.snapshot.partition(topic, 0) if app.snapshot else None
    return p is not None and p.moving and any(r.broker in p.adding and (r.lag or 0) > 0
                                              for r in p.replica_logs)


async def take_reassignment(lab: Any) -> None:
    """A throttled `kafka-reassign-partitions` on screen: moving, not under-replicated."""
    topic, plan = "moving", Path(tempfile.mkdtemp()) / "plan.json"
    kafka_tool(lab, "org.apache.kafka.tools.TopicCommand", "--create", "--if-not-exists",
               "--topic", topic, "--replica-assignment", "1:2")
    subprocess.run(["kcat", "-b", lab.bootstrap, "-P", "-t", topic, "-p", "0"],
                   input=(b"x" * 1000 + b"\n") * 8000, check=True)
    plan.write_text('{"version": 1, "partitions": [{"topic": "moving", "partition": 0, '
                    '"replicas": [1, 3]}]}')
    reassign = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    kafka_tool(lab, reassign, "--reassignment-json-file", str(plan), "--execute",
               "--throttle", "100000")
    app = lab_app(lab)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: moving(app, topic), 60, "the reassignment on screen")
        await pilot.pause(3)
        app.save_screenshot(str(HERE / "7-reassignment.svg"))
    while "in progress" in kafka_tool(lab, reassign, "--reassignment-json-file", str(plan),
                                      "--verify"):
        time.sleep(2)


def oncall_app(lab: Any, user: dict[str, Any]) -> KinspectApp:
    from kinspect.tui.console import ReadOnlyConsole

    config = {**user["kafka"], "sasl.password": Path(user["password_file"]).read_text().strip()}
    feed = LiveFeed(user["bootstrap"], None, False, title=f"prod ({user['name']})",
                    admin_config=config, record=False)
    return KinspectApp(feed, ReadOnlyConsole("not a kinspect lab: read-only"))


def lab_users() -> dict[str, dict[str, Any]]:
    import json

    listed = subprocess.run([sys.executable, "-m", "kinspect", "lab", "user", "list", "--json"],
                            capture_output=True, text=True, check=True).stdout
    return {u["name"]: u for u in json.loads(listed)["users"]}


async def take_oncall() -> None:
    lab = running_lab()
    if lab is None or "tls" not in lab.extra or "authorizer" not in lab.extra:
        raise SystemExit("screenshots: run `kinspect lab up --tls --authorizer` first")
    await take_reassignment(lab)
    create_topics(lab.bootstrap, {"orders": 6})
    kinspect = [sys.executable, "-m", "kinspect"]
    if "oncall" not in lab_users():
        subprocess.run([*kinspect, "lab", "user", "add", "oncall", "--allow", "describe:cluster",
                        "--allow", "describe:topic", "--allow", "describe:group"], check=True)
    user = lab_users()["oncall"]
    for node in ("kafka3", "kafka2"):
        subprocess.run([*kinspect, "lab", "stop", node], check=True)
    try:
        app = oncall_app(lab, user)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "under min ISR unknown" in str(
                app.query_one("#warnings").render()), 90, "the on-call user's '?'")
            await pilot.pause(3)
            app.save_screenshot(str(HERE / "8-oncall-describe-only.svg"))
    finally:
        for node in ("kafka2", "kafka3"):
            subprocess.run([*kinspect, "lab", "start", node], check=False)
    print(f"on-call screenshots written to {HERE}", file=sys.stderr)


async def take_lesson() -> None:
    """A lesson as an attendee meets it, on the running lab: the prediction asked
    (9-lesson-predict.svg), a narrated step pointing at its panel, in Chinese at 80x24
    (10-lesson-narrated-zh.svg), the reveal beside the predictions (11-lesson-reveal.svg)."""
    from kinspect.lessons.flow import Phase
    from kinspect.lessons.lesson_catalog import builtin
    from kinspect.lessons.lesson_values import Lang
    from kinspect.tui.lesson_app import LessonApp

    lab = running_lab()
    assert lab is not None, "no lab: kinspect lab up"
    lessons = builtin()
    index = next(i for i, lesson in enumerate(lessons) if lesson.name == "isolated-leader")

    def lesson_app(lang: Lang) -> LessonApp:
        feed = LiveFeed(lab.bootstrap, lab.zookeeper_address, lab_backed=True,
                        expected={n.broker_id: n.address for n in lab.brokers
                                  if n.broker_id is not None}, title="lab (demo preset)")
        return LessonApp(feed, LabConsole(), lessons, index, lang, stage=False)

    en = lesson_app(Lang.EN)
    async with en.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: en.snapshot is not None, 30, "the lab on screen")
        await pilot.pause(2)
        en.save_screenshot(str(HERE / "9-lesson-predict.svg"))
    zh = lesson_app(Lang.ZH)
    async with zh.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: zh.snapshot is not None, 30, "the lab on screen")
        await pilot.press("3", "1", "space")
        await until(pilot, lambda: zh.flow.held, 180, "the isolation narrated")
        await pilot.pause(2)
        zh.save_screenshot(str(HERE / "10-lesson-narrated-zh.svg"))
        for _ in range(1500):
            if zh.flow.phase is Phase.REVEAL:
                break
            if zh.flow.held or zh.flow.result is not None:
                await pilot.press("space")
            await pilot.pause(0.2)
    reveal = lesson_app(Lang.EN)  # the same run, its reveal in English at full size
    reveal.flow, reveal.lesson_report = zh.flow, zh.lesson_report
    async with reveal.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: reveal.snapshot is not None, 30, "the lab on screen")
        reveal.flow = zh.flow
        reveal._show_lesson()
        await pilot.pause(1)
        reveal.save_screenshot(str(HERE / "11-lesson-reveal.svg"))
    print(f"lesson screenshots written to {HERE}", file=sys.stderr)


def chart(run_dir: Path | None) -> None:
    """postmortem-timeline.png from a real acks1-isolate-leader run (run now unless given)."""
    if run_dir is None:
        run_dir = Path(tempfile.mkdtemp(prefix="kinspect-chart-")) / "run"
        subprocess.run([sys.executable, "-m", "kinspect", "scenario", "run",
                        "acks1-isolate-leader", "--run-dir", str(run_dir)], check=True)
    print(f"chart written: {redraw(run_dir, HERE / 'postmortem-timeline.png')}", file=sys.stderr)


def site_front_page() -> None:
    """site-front-page.png: the built site's home page in a real browser, 1280x1000."""
    root = HERE.parent
    subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--quiet"],
                   cwd=root, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    shot = HERE / "site-front-page.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1280,1000", f"--screenshot={shot}",
                    (root / "site" / "index.html").as_uri()], check=True, capture_output=True)
    print(f"site front page written: {shot}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--chart"]:
        chart(Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    elif sys.argv[1:2] == ["--kraft"]:
        asyncio.run(take_kraft())
    elif sys.argv[1:2] == ["--oncall"]:
        asyncio.run(take_oncall())
    elif sys.argv[1:2] == ["--disk"]:
        asyncio.run(take_disk())
    elif sys.argv[1:2] == ["--lesson"]:
        asyncio.run(take_lesson())
    elif sys.argv[1:2] == ["--site"]:
        site_front_page()
    else:
        asyncio.run(take())
        chart(None)
