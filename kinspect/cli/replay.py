"""`kinspect replay DIR`: a recorded session or run, played back on the live screen."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kinspect.validation import option

SPEED = option(0.25, 16)


def register(commands: Any) -> None:
    replay = commands.add_parser(
        "replay", help="play a recorded session or run back: pause, step, seek, speed",
        description="Keys: space pause/resume, . and , step one change while paused, ] and [ "
                    "seek 10 s, + and - speed (0.25x to 16x), q quit.")
    replay.add_argument("dir", type=Path, metavar="DIR",
                        help="a run dir, a session dir ($KINSPECT_HOME/sessions/...) or a "
                             "recording/ folder")
    replay.add_argument("--at", metavar="TIME",
                        help="start here: seconds from the start (90, 12.5s), a clock time "
                             "(14:03:07[.250]) or epoch ms (a timeline entry's ts)")
    replay.add_argument("--speed", type=SPEED, default=1.0,
                        help="playback speed, 0.25 to 16 (default 1)")
    replay.add_argument("--paused", action="store_true", help="open paused")
    replay.set_defaults(handler=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from kinspect.sources.playback import open_recording, parse_at

    recording = open_recording(args.dir)
    at = None  # from the start
    if args.at is not None:
        at = parse_at(args.at, recording)
    from kinspect.tui.replay_app import run_replay

    return run_replay(recording, at, float(args.speed), f"replay of {args.dir}", args.paused)
