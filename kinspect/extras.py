"""What the light install leaves out, and the one line that says which extra a command needs.

`pip install kinspect` is the inspector (snapshot, health, watch, replay, the TUI); the lab's
Docker SDK, the load's Arrow ledger and the post-mortem's Spark are extras (pyproject.toml), so
an import of a missing one must name the extra to install, not end in a traceback. Like
errors.py it imports no layer: the CLI and the TUI's toasts both say it.
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Sequence

EXTRAS: dict[str, frozenset[str]] = {  # extra -> the top-level modules it installs
    "lab": frozenset({"docker", "cryptography", "jwt", "mfusepy"}),
    "load": frozenset({"numpy", "pyarrow"}),
    "postmortem": frozenset({"pyspark", "pyarrow", "numpy", "matplotlib"}),
}
ALL = "all"  # every extra: what make demo and make test install

# The extra each command needs; a module it does not cover is named by MODULE_EXTRAS.
COMMAND_EXTRAS: dict[str, str] = {
    "lab": "lab", "demo": "lab", "load": "load", "consume": "load", "verify": "load",
    "postmortem": "postmortem", "scenario": ALL,
}
# Outside a command (the TUI's keys): numpy and pyarrow are the post-mortem's there (m, e).
MODULE_EXTRAS: dict[str, str] = {
    "docker": "lab", "cryptography": "lab", "jwt": "lab", "mfusepy": "lab",
    "numpy": "postmortem", "pyarrow": "postmortem", "pyspark": "postmortem",
    "matplotlib": "postmortem",
}


def extra_for(module: str, command: str = "") -> str | None:
    """The extra that installs `module` (top-level name): the command's own when it does;
    None for a module no extra provides (then it is a bug, not the light install)."""
    if module not in MODULE_EXTRAS:
        return None
    own = COMMAND_EXTRAS.get(command, "")
    if own == ALL or module in EXTRAS.get(own, frozenset()):
        return own
    return MODULE_EXTRAS[module]


def missing_extra(exc: BaseException, words: Sequence[str] = ()) -> str | None:
    """One line for an optional package this install lacks (`words`: the command, e.g.
    ["lab", "up"]); None when `exc` is anything else."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    module = exc.name.partition(".")[0]
    extra = extra_for(module, words[0] if words else "")
    if extra is None:
        return None
    install = f"pip install 'kinspect[{extra}]'"
    if words:
        return f"'kinspect {' '.join(words)}' needs the {extra} extra: {install}"
    return f"{module} is not installed (the {extra} extra): {install}"


def command_words(args: argparse.Namespace) -> list[str]:
    """The command and its actions as typed, e.g. ["lab", "user", "add"] (each sub-parser's
    dest is `<command>_command`)."""
    words: list[str] = []
    name = getattr(args, "command", None)
    while isinstance(name, str):
        words.append(name)
        name = getattr(args, f"{name}_command", None)
    return words


def installed(extra: str) -> bool:
    """Whether every module of `extra` can be imported (not imported here: Spark is slow)."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra])
