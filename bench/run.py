"""`make bench`: every benchmark, each side by side with its peer, on one lab (one at a time)."""

from __future__ import annotations

import argparse
import importlib
import sys

SUITES = ("bench.observer", "bench.producer", "bench.tui", "bench.lag", "bench.postmortem", "bench.lists",
          "bench.backends", "bench.attribution", "bench.snapshot", "bench.recording")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("suites", nargs="*", default=list(SUITES),
                        help=f"which (default all: {', '.join(s[6:] for s in SUITES)})")
    chosen = parser.parse_args(argv).suites
    failed = []
    for name in chosen:
        module_name = name if name.startswith("bench.") else f"bench.{name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            print(f"bench: skipping {module_name}: {exc}", file=sys.stderr)
            continue
        print(f"bench: running {module_name}", file=sys.stderr)
        if module.main([]) != 0:
            failed.append(module_name)
    if failed:
        print(f"bench: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
