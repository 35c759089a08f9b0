"""`kinspect scenario list|run|matrix`: the classic data-loss experiments, replayed."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kinspect.checks import option, writable_dir
from kinspect.cli.common import progress
from kinspect.cli.lab import stop_loads_on_lab
from kinspect.cli.progress import Display
from kinspect.errors import KinspectError
from kinspect.lab.backend import MODES
from kinspect.paths import kinspect_home

MARK_START, MARK_END = "<!-- scenario-matrix -->", "<!-- /scenario-matrix -->"


def check_table_file(path: Path) -> str:
    """The text of --out as it is now ("" when new); refused when the table could not go there:
    a directory, an unwritable place, or a document without the markers (never overwritten)."""
    if path.is_dir():
        raise KinspectError(f"--out {path} is a directory; give a file")
    writable_dir(path.parent, "--out's folder")
    try:
        text = path.read_text() if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise KinspectError(f"--out {path} cannot be read: {getattr(exc, 'strerror', exc)}") from None
    if text.strip() and not (MARK_START in text and MARK_END in text):
        raise KinspectError(f"{path} has no {MARK_START} … {MARK_END} block to replace; "
                            "not overwriting it")
    return text


def write_table(path: Path, table: str) -> None:
    """Replace the marked block of a document, or write a new (or empty) file whole; a document
    without the markers is refused rather than overwritten."""
    text = check_table_file(path)
    if MARK_START in text and MARK_END in text:
        head, rest = text.split(MARK_START, 1)
        _, tail = rest.split(MARK_END, 1)
        path.write_text(f"{head}{MARK_START}\n{table}\n{MARK_END}{tail}")
    else:
        path.write_text(table + "\n")



def register(commands: Any) -> None:
    scenario = commands.add_parser("scenario", help="replay the classic data-loss experiments")
    sub = scenario.add_subparsers(dest="scenario_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="the built-in scenarios and what each should show")
    listing.add_argument("--json", action="store_true", help="one JSON array on stdout")
    listing.set_defaults(handler=cmd_list)

    run = sub.add_parser("run", help="reset the lab, load, break, heal, verify, post-mortem")
    run.add_argument("name", metavar="NAME", help="a scenario name, or the path of a .toml file")
    run.add_argument("--json", action="store_true", help="one JSON result object on stdout")
    run.add_argument("--keep-lab", action="store_true", help="leave the lab running afterwards")
    run.add_argument("--run-dir", type=Path, help="where the evidence goes "
                     "(default $KINSPECT_HOME/runs/scenario-NAME-TIME)")
    run.add_argument("--mode", choices=MODES, default="zookeeper",
                     help="the lab's mode: zookeeper (default) or kraft, where isolation from "
                          "the controller quorum stands for isolation from ZooKeeper")
    run.set_defaults(handler=cmd_run)

    matrix = sub.add_parser("matrix", help="run many scenarios, one table")
    matrix.add_argument("--names", nargs="+", metavar="NAME", help="default: every scenario")
    matrix.add_argument("--repeat", type=option(1, 100, integer=True), default=1,
                        help="runs of each, 1-100 (default 1)")
    matrix.add_argument("--modes", type=_modes, default=("zookeeper",), metavar="MODE[,MODE]",
                        help="zookeeper (default), kraft, or zookeeper,kraft: each scenario "
                             "on each, the modes side by side")
    matrix.add_argument("--markdown", action="store_true", help="print a Markdown table")
    matrix.add_argument("--out", type=Path, help="also write the table to this file; in a file "
                        f"holding the lines {MARK_START} and {MARK_END} (the README), only "
                        "the block between them is replaced")
    matrix.set_defaults(handler=cmd_matrix)


def cmd_list(args: argparse.Namespace) -> int:
    from kinspect.scenarios.catalog import builtin

    scenarios = builtin()
    if args.json:
        print(json.dumps([{"name": s.name, "title": s.title, "source": s.source,
                           "expectation": s.expectation_text(), "needs": list(s.needs)}
                          for s in scenarios]))
        return 0
    width = max(len(s.name) for s in scenarios)
    for s in scenarios:
        print(f"{s.name.ljust(width)}  {s.title}")
        print(f"{'':{width}}  expect {s.expectation_text()}"
              + (f"   [{s.source}]" if s.source else ""))
    return 0


def _run_dir(name: str, given: Path | None) -> Path:
    from kinspect.scenarios.scenario_run import default_run_dir

    if given is None:
        return default_run_dir(name)
    writable_dir(given, "--run-dir")
    if given.exists() and any(given.iterdir()):
        raise KinspectError(f"{given} is not empty; give a new --run-dir")
    return given


def check_load(scenario: Any) -> None:
    """The scenario's producer settings as librdkafka sees them, before any lab is touched."""
    from kinspect.load.producer_run import check_producer_config

    try:
        check_producer_config(scenario.load_settings("127.0.0.1:1"))
    except KinspectError as exc:
        raise KinspectError(f"{scenario.name}: [load] {exc}") from None


def cmd_run(args: argparse.Namespace) -> int:
    from kinspect.scenarios.catalog import find
    from kinspect.scenarios.scenario_run import run_scenario
    from kinspect.scenarios.table import text_table

    scenario = find(args.name)
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    run_dir = _run_dir(scenario.name, args.run_dir)
    check_load(scenario)
    stop_loads_on_lab()  # the scenario resets the lab
    with Display() as display:
        display.say(f"{scenario.name}: {scenario.title}"
                    f"{' (KRaft)' if args.mode == 'kraft' else ''}\nrun dir: {run_dir}")
        row = run_scenario(scenario, run_dir, display.line, keep_lab=args.keep_lab,
                           mode=args.mode)
    if args.json:
        print(json.dumps(row))
    else:
        print(text_table([row]))
        print(f"\nexpected: {row['expectation']}")
        if row.get("explanation"):
            print(row["explanation"])
        print(f"why: {scenario.why}")
        print(f"evidence: {run_dir} (report: {run_dir / 'postmortem' / 'report.md'})")
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    from kinspect.scenarios.catalog import builtin, find
    from kinspect.scenarios.scenario_run import run_scenario, skipped_row
    from kinspect.scenarios.table import markdown_table, side_by_side, text_table

    scenarios = [find(n) for n in args.names] if args.names else builtin()
    for scenario in scenarios:
        check_load(scenario)
    if args.out:
        check_table_file(args.out)
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    stop_loads_on_lab()  # every scenario resets the lab
    root = kinspect_home() / "runs" / f"matrix-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True)
    results = root / "results.jsonl"
    runs = len(scenarios) * args.repeat * len(args.modes)
    progress(f"{runs} runs; results go to {results} as they finish")
    rows: list[dict[str, Any]] = []
    spark = None
    # Spark warms up while the first scenario resets the lab and loads it; its post-mortem
    # and every later one then start at once.
    warming = _WarmSpark()
    display = Display().start()  # a bar over the runs; each run's steps as stages
    try:
        for n, scenario, mode in _runs(scenarios, args.repeat, args.modes):
            display.bar("matrix", len(rows), runs, "runs", scenario.name)
            display.say(f"--- {scenario.name} on {mode} (run {n + 1} of {args.repeat})")
            if spark is None and "netem" not in scenario.needs:
                spark = warming.session()
            try:
                row = run_scenario(scenario, root / f"{scenario.name}-{mode}-{n + 1}",
                                   display.line, spark=spark, mode=mode)
            except KinspectError as exc:  # one broken run does not lose the others
                row = {**skipped_row(scenario, str(exc)), "status": "error",
                       "expectation_met": False, "mode": mode}
                display.say(f"{scenario.name} on {mode}: {exc}")
            rows.append(row)
            with open(results, "a") as handle:
                handle.write(json.dumps(row) + "\n")
        display.bar("matrix", len(rows), len(rows), "runs")
    finally:
        display.stop()
        warming.stop()
    if len(args.modes) > 1:
        table = side_by_side(rows, args.modes, markdown=args.markdown)
    else:
        table = markdown_table(rows) if args.markdown else text_table(rows)
    print(table)
    if args.out:
        write_table(args.out, table)
    return 0


def _modes(text: str) -> tuple[str, ...]:
    """`zookeeper,kraft` → ("zookeeper", "kraft"), each checked, none twice."""
    modes = tuple(m.strip() for m in text.split(","))
    bad = [m for m in modes if m not in MODES]
    if bad or len(set(modes)) != len(modes):
        raise argparse.ArgumentTypeError(f"expected modes from {', '.join(MODES)}, each once, "
                                         f"not {text!r}")
    return modes


def _runs(scenarios: list[Any], repeat: int, modes: tuple[str, ...]
          ) -> Iterator[tuple[int, Any, str]]:
    """Each repeat, each scenario, each mode: a scenario's modes run one after the other."""
    for n in range(repeat):
        for scenario in scenarios:
            for mode in modes:
                yield n, scenario, mode


class _WarmSpark:
    """A Spark session started in a thread of its own (the matrix's first scenario meanwhile)."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from kinspect.postmortem.spark.job import start_spark

        self._pool = ThreadPoolExecutor(1, thread_name_prefix="spark-start")
        self._future = self._pool.submit(start_spark)

    def session(self) -> Any:
        """The session, once started; a failure to start is one line, as a cold start says it."""
        try:
            return self._future.result()
        except Exception as exc:
            raise KinspectError(f"cannot start Spark: {str(exc).strip()[:300]}") from None

    def stop(self) -> None:
        self._pool.shutdown(wait=True)
        if self._future.exception() is None:
            self._future.result().stop()
