"""The layers hold at run time too: the model, the clients, the sources and the lab load
without Textual or PySpark (a `kinspect snapshot`, a scenario's lab, a worker stay light)."""

from __future__ import annotations

import json
import subprocess
import sys

CHECK = """
import importlib, json, pkgutil, sys
import kinspect
for package in ("model", "clients", "sources", "lab", "load"):
    root = importlib.import_module("kinspect." + package)
    importlib.import_module(root.__name__)
    for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
        importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "pyspark"))))
"""


def test_model_sources_and_lab_import_neither_textual_nor_pyspark() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_check_would_see_textual() -> None:
    """The probe itself works: importing the TUI does load textual."""
    done = subprocess.run([sys.executable, "-c", "import sys, kinspect.tui.app; "
                           "print('textual' in sys.modules)"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "True"
