"""Where kinspect keeps things: the lab under KINSPECT_HOME, Kafka jars under the cache."""

from __future__ import annotations

import os
from pathlib import Path


def kinspect_home() -> Path:
    """KINSPECT_HOME, default ~/.kinspect: every command finds the running lab here."""
    return Path(os.environ.get("KINSPECT_HOME", Path.home() / ".kinspect")).expanduser()


def lab_dir() -> Path:
    return kinspect_home() / "lab"


def cache_dir() -> Path:
    """Downloaded Kafka jars live outside the repo so they survive clones and resets."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("KINSPECT_CACHE", Path(base) / "kinspect")).expanduser()
