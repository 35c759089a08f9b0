"""`kinspect scenario list|run|matrix`: the classic data-loss experiments, replayed."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kinspect.cli.common import progress
from kinspect.cli.lab import stop_loads_on_lab
from kinspect.cli.progress import Display
from kinspect.errors import KinspectError
from kinspect.lab.backend import MODES
from kinspect.lab.dist import parse_version, resolve_version
from kinspect.paths import kinspect_home
from kinspect.scenarios.platform import Platform, platforms
from kinspect.validation import option, writable_dir

MARK_START, MARK_END = "<!-- scenario-matrix -->", "<!-- /scenario-matrix -->"
# The side-by-side table (one column group per platform) has a block of its own.
PLATFORM_MARKS = ("<!-- platform-matrix -->", "<!-- /platform-matrix -->")
Row = dict[str, Any]  # one scenario's result, as scenario.json and results.jsonl hold it


def check_table_file(path: Path, marks: tuple[str, str] = (MARK_START, MARK_END)) -> str:
    """The text of --out as it is now ("" when new); refused when the table could not go there:
    a directory, an unwritable place, or a document without the markers (never overwritten)."""
    start, end = marks
    if path.is_dir():
        raise KinspectError(f"--out {path} is a directory; give a file")
    writable_dir(path.parent, "--out's folder")
    if not path.exists():
        return ""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise KinspectError(f"--out {path} cannot be read: {getattr(exc, 'strerror', exc)}") from None
    if text.strip() and not (start in text and end in text):
        raise KinspectError(f"{path} has no {start} … {end} block to replace; not overwriting it")
    return text


def write_table(path: Path, table: str, marks: tuple[str, str] = (MARK_START, MARK_END)) -> None:
    """Replace the marked block of a document, or write a new (or empty) file whole; a document
    without the markers is refused rather than overwritten."""
    start, end = marks
    text = check_table_file(path, marks)
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        path.write_text(f"{head}{start}\n{table}\n{end}{tail}")
    else:
        path.write_text(table + "\n")


def write_tables(path: Path | None, rows: list[Row], columns: list[Platform],
                 markdown: bool, first_in_full: bool = False) -> str:
    """The table printed and written to --out: one platform's rows in full (the scenario-matrix
    block); several side by side (the platform-matrix block), and with `first_in_full` (a
    matrix, which ran every row) the first platform's rows in full too."""
    from kinspect.scenarios.table import markdown_table, platform_of, side_by_side, text_table

    def full(chosen: list[Row]) -> str:
        if markdown:
            return markdown_table(chosen)
        return text_table(chosen)

    if len(columns) == 1:
        table = full(rows)
        if path is not None:
            write_table(path, table)
        return table
    table = side_by_side(rows, columns, markdown=markdown)
    if path is not None:
        write_table(path, table, PLATFORM_MARKS)
        if first_in_full:
            write_table(path, full([r for r in rows if platform_of(r) == columns[0]]))
    return table


def register(commands: Any) -> None:
    scenario = commands.add_parser("scenario", help="replay the classic data-loss experiments "
                                   "and today's Kafka failures (3.9 or 4.x, ZooKeeper or KRaft)")
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
    run.add_argument("--mode", choices=MODES, default=None,
                     help="the lab's mode: zookeeper (default; kraft on Kafka 4.x) or kraft, "
                          "where isolation from the controller quorum stands for isolation "
                          "from ZooKeeper")
    run.add_argument("--kafka", metavar="VERSION", default=None,
                     help="the Kafka release to run it on: the pinned 3.9.x (default), 4.x "
                          "(the tested 4.x release, KRaft only) or any 3.9.x / 4.x release")
    run.set_defaults(handler=cmd_run)

    _chaos_parser(sub)

    matrix = sub.add_parser("matrix", help="run many scenarios, one table")
    matrix.add_argument("--names", nargs="+", metavar="NAME", help="default: every scenario")
    matrix.add_argument("--repeat", type=option(1, 100, integer=True), default=1,
                        help="runs of each, 1-100 (default 1)")
    matrix.add_argument("--modes", type=_modes, default=None, metavar="MODE[,MODE]",
                        help="zookeeper, kraft, or zookeeper,kraft: each scenario on each, "
                             "side by side (default: zookeeper, and kraft on 4.x)")
    matrix.add_argument("--kafka", type=_versions, default=(None,), metavar="VERSION[,VERSION]",
                        help="releases to run on, e.g. 3.9.2,4.x: every mode on every release, "
                             "one column each (ZooKeeper is left out on 4.x); default the "
                             "pinned 3.9.x")
    matrix.add_argument("--markdown", action="store_true", help="print a Markdown table")
    matrix.add_argument("--out", type=Path, help="also write the table to this file; in a file "
                        f"holding the lines {MARK_START} and {MARK_END} (docs/reference/scenarios.md), only "
                        "the block between them is replaced")
    matrix.set_defaults(handler=cmd_matrix)

    table = sub.add_parser("table", help="one table from results recorded earlier")
    table.add_argument("results", nargs="+", type=Path, metavar="RESULTS",
                       help="a matrix's results.jsonl or a run's scenario.json (several: the "
                            "last run of each scenario on each platform)")
    table.add_argument("--markdown", action="store_true", help="a Markdown table")
    table.add_argument("--out", type=Path, help="also write it to this file: the marked block "
                       "of the table printed (platform-matrix for several platforms)")
    table.set_defaults(handler=cmd_table)


def cmd_list(args: argparse.Namespace) -> int:
    from kinspect.scenarios.catalog import builtin

    scenarios = builtin()
    if args.json:
        print(json.dumps([{"name": s.name, "title": s.title, "source": s.source,
                           "expectation": s.expectation_text(), "needs": list(s.needs),
                           **{f"expectation_{scope}": " and ".join(map(str, conditions))
                              for scope, conditions in s.expect_on.items()}}
                          for s in scenarios]))
        return 0
    width = max(len(s.name) for s in scenarios)
    for s in scenarios:
        print(f"{s.name.ljust(width)}  {s.title}")
        source = ""
        if s.source:
            source = f"   [{s.source}]"
        print(f"{'':{width}}  expect {s.expectation_text()}{source}")
        for scope, words in (("kraft", "in KRaft"), ("kafka4", "on Kafka 4.x")):
            if scope in s.expect_on:
                told = " and ".join(map(str, s.expect_on[scope]))
                print(f"{'':{width}}  {words}: {told}")
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
    platform = _platform(args.mode, args.kafka)
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    run_dir = _run_dir(scenario.name, args.run_dir)
    check_load(scenario)
    stop_loads_on_lab()  # the scenario resets the lab
    with Display() as display:
        display.say(f"{scenario.name}: {scenario.title} ({platform.label})\nrun dir: {run_dir}")
        row = run_scenario(scenario, run_dir, display.line, keep_lab=args.keep_lab,
                           platform=platform)
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
    scenarios = _chosen(args.names)
    for scenario in scenarios:
        check_load(scenario)
    columns, dropped = platforms(args.modes, args.kafka)
    if not columns:
        raise KinspectError("no platform left to run on: " + "; ".join(dropped))
    if args.out:
        check_table_file(args.out)
        if len(columns) > 1:
            check_table_file(args.out, PLATFORM_MARKS)
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    stop_loads_on_lab()  # every scenario resets the lab
    root = kinspect_home() / "runs" / f"matrix-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True)
    results = root / "results.jsonl"
    runs = len(scenarios) * args.repeat * len(columns)
    for line in dropped:
        progress(line)
    progress(f"{runs} runs on {', '.join(p.label for p in columns)}; results go to {results} "
             "as they finish")
    rows = _run_matrix(scenarios, args.repeat, columns, results)
    print(write_tables(args.out, rows, columns, args.markdown, first_in_full=True))
    return 0


def _chosen(names: list[str]) -> list[Any]:
    """The scenarios named, else the whole catalogue."""
    from kinspect.scenarios.catalog import builtin, find

    if not names:
        return builtin()
    return [find(n) for n in names]


def _run_matrix(scenarios: list[Any], repeat: int, columns: list[Platform],
                results: Path) -> list[Row]:
    """Every run in turn, each row appended to `results` as it finishes. Spark warms up while
    the first scenario resets the lab and loads it; its post-mortem and every later one then
    start at once."""
    runs = len(scenarios) * repeat * len(columns)
    rows: list[Row] = []
    spark = None
    warming = _WarmSpark()
    display = Display().start()  # a bar over the runs; each run's steps as stages
    try:
        for n, scenario, platform in _runs(scenarios, repeat, columns):
            display.bar("matrix", len(rows), runs, "runs", scenario.name)
            display.say(f"--- {scenario.name} on {platform.label} (run {n + 1} of {repeat})")
            if spark is None and "netem" not in scenario.needs:
                spark = warming.session()
            name = f"{scenario.name}-{platform.mode}-{platform.kafka}-{n + 1}"
            row = _matrix_run(scenario, platform, results.parent / name, display, spark)
            rows.append(row)
            with open(results, "a") as handle:
                handle.write(json.dumps(row) + "\n")
        display.bar("matrix", len(rows), len(rows), "runs")
    finally:
        display.stop()
        warming.stop()
    return rows


def _matrix_run(scenario: Any, platform: Platform, run_dir: Path, display: Display,
                spark: Any) -> Row:
    """One run of the matrix; a broken one is an error row (it does not lose the others)."""
    from kinspect.scenarios.scenario_run import run_scenario, skipped_row

    try:
        return run_scenario(scenario, run_dir, display.line, spark=spark, platform=platform)
    except KinspectError as exc:
        display.say(f"{scenario.name} on {platform.label}: {exc}")
        return {**skipped_row(scenario, str(exc), platform), "status": "error",
                "expectation_met": False}


def cmd_table(args: argparse.Namespace) -> int:
    """Rows recorded by earlier runs (a matrix's results.jsonl, a run's scenario.json), as one
    table: the last run of each scenario on each platform, scenarios in the order met, the
    platforms ZooKeeper first, then by release."""
    from kinspect.scenarios.table import platform_of

    rows = [row for path in args.results for row in _recorded_rows(path)]
    if not rows:
        raise KinspectError("the results hold no rows")
    columns = sorted(dict.fromkeys(platform_of(r) for r in rows),  # ZooKeeper, then by release
                     key=lambda p: (p.kraft, parse_version(p.kafka)))
    if args.out:  # only the block of the table printed: recorded rows may be a partial set
        check_table_file(args.out, _marks(columns))
    print(write_tables(args.out, rows, columns, args.markdown))
    return 0


def _marks(columns: list[Platform]) -> tuple[str, str]:
    """The block of the document a table of these platforms goes in."""
    if len(columns) > 1:
        return PLATFORM_MARKS
    return MARK_START, MARK_END


def _recorded_rows(path: Path) -> list[Row]:
    """The rows of one results file: JSON lines, or one JSON object (scenario.json)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise KinspectError(f"cannot read {path}: {exc.strerror}") from None
    lines = [text]  # scenario.json: one object
    if path.suffix == ".jsonl":
        lines = text.splitlines()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KinspectError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "scenario" not in row:
            raise KinspectError(f"{path}:{number}: not a scenario result row")
        rows.append(row)
    return rows


def _modes(text: str) -> tuple[str, ...]:
    """`zookeeper,kraft` → ("zookeeper", "kraft"), each checked, none twice."""
    modes = tuple(m.strip() for m in text.split(","))
    bad = [m for m in modes if m not in MODES]
    if bad or len(set(modes)) != len(modes):
        raise argparse.ArgumentTypeError(f"expected modes from {', '.join(MODES)}, each once, "
                                         f"not {text!r}")
    return modes


def _versions(text: str) -> tuple[str, ...]:
    """`3.9.2,4.x` → ("3.9.2", "4.4.0"), each a release kinspect runs, none twice."""
    try:
        versions = tuple(dict.fromkeys(resolve_version(v) for v in text.split(",")))
    except KinspectError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return versions


def _platform(mode: str | None, kafka: str | None) -> Platform:
    """`scenario run`'s lab: --mode as given, else ZooKeeper on 3.x and KRaft on 4.x."""
    platform = Platform.of(mode, kafka)
    if platform.impossible:
        raise KinspectError(f"{platform.impossible}: use --mode kraft")
    return platform


def _runs(scenarios: list[Any], repeat: int, columns: list[Platform]
          ) -> Iterator[tuple[int, Any, Platform]]:
    """Each repeat, each scenario, each platform: a scenario's platforms one after the other."""
    for n in range(repeat):
        for scenario in scenarios:
            for platform in columns:
                yield n, scenario, platform


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


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600}


def duration(text: str) -> float:
    """--duration: seconds, or with a unit: 90s, 10m, 1h."""
    body, unit = text.strip(), "s"
    if body and body[-1] in DURATION_UNITS:
        body, unit = body[:-1], body[-1]
    try:
        seconds = float(body) * DURATION_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or 90s, 10m, 1h, not {text!r}") from None
    if not 0 < seconds <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 24h, not {text!r}")
    return seconds


def _chaos_parser(sub: Any) -> None:
    from kinspect.scenarios.chaos import DEFAULT_FAULTS, RATE, TARGETS

    chaos = sub.add_parser("chaos", help="a seeded random nemesis: faults come and go under "
                           "load and a consumer group, then one accounting")
    chaos.add_argument("--seed", type=option(0, 2**31 - 1, integer=True), required=True,
                       help="the schedule's seed: the same seed gives the same schedule")
    chaos.add_argument("--duration", type=duration, default=120.0,
                       help="how long the load runs: seconds or 90s, 10m, 1h (default 120 s)")
    words = sorted({*TARGETS} - {"power-off"} | {"power"})
    chaos.add_argument("--faults", default=",".join(DEFAULT_FAULTS), metavar="F[,F]",
                       help=f"the faults drawn from: {', '.join(words)} (default "
                            f"{','.join(DEFAULT_FAULTS)}; power needs FUSE: kinspect doctor)")
    chaos.add_argument("--rate", type=option(1, 100_000), default=RATE,
                       help=f"messages/s (default {RATE:.0f})")
    chaos.add_argument("--schedule", action="store_true",
                       help="print the schedule the seed draws, and run nothing")
    chaos.add_argument("--json", action="store_true", help="one JSON result object on stdout")
    chaos.add_argument("--keep-lab", action="store_true", help="leave the lab running afterwards")
    chaos.add_argument("--run-dir", type=Path, help="where the evidence goes "
                       "(default $KINSPECT_HOME/runs/scenario-chaos-seedN-TIME)")
    chaos.add_argument("--mode", choices=MODES, default=None, help="zookeeper or kraft")
    chaos.add_argument("--kafka", metavar="VERSION", default=None, help="the Kafka release")
    chaos.set_defaults(handler=cmd_chaos)


def cmd_chaos(args: argparse.Namespace) -> int:
    """Draw the schedule; print it (--schedule) or run it and account for every fault."""
    from kinspect.scenarios.chaos import ChaosPlan, chaos_scenario, fault_words, schedule_lines

    plan = ChaosPlan(args.seed, args.duration, fault_words(args.faults), args.rate)
    scenario = chaos_scenario(plan)
    if args.schedule:
        print(f"{scenario.title}; load {plan.rate:.0f}/s, acks=all")
        print("\n".join(schedule_lines(scenario.steps)))
        print(f"invariants: {scenario.expectation_text()}")
        return 0
    platform = _platform(args.mode, args.kafka)
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    run_dir = _run_dir(scenario.name, args.run_dir)
    check_load(scenario)
    stop_loads_on_lab()
    return _run_chaos(scenario, run_dir, platform, args)


def _run_chaos(scenario: Any, run_dir: Path, platform: Platform,
               args: argparse.Namespace) -> int:
    from kinspect.postmortem.story.values import Report
    from kinspect.scenarios.chaos import loss_by_window, schedule_lines
    from kinspect.scenarios.scenario_run import run_scenario

    with Display() as display:
        display.say(f"{scenario.title} ({platform.label})\nrun dir: {run_dir}\n"
                    + "\n".join(schedule_lines(scenario.steps)))
        row = run_scenario(scenario, run_dir, display.line, keep_lab=args.keep_lab,
                           platform=platform)
    report = Report.from_json(json.loads((run_dir / "postmortem" / "report.json").read_text()))
    faults = row.get("faults")
    entries = [e for e in faults if isinstance(e, dict)] if isinstance(faults, list) else []
    found = loss_by_window(run_dir, entries, report.acked_lost)
    row["loss_by_window"] = None
    if found is not None:
        row["loss_by_window"] = [{"window": w.label, "start_ms": w.start_ms,
                                  "end_ms": w.end_ms, "lost": w.lost} for w in found]
    (run_dir / "chaos.json").write_text(json.dumps(row, indent=2))
    if args.json:
        print(json.dumps(row))
    else:
        _print_chaos(row, run_dir)
    return 0 if row.get("expectation_met") else 1


def _print_chaos(row: Row, run_dir: Path) -> None:
    from kinspect.scenarios.table import text_table

    print(text_table([row]))
    windows = row.get("loss_by_window")
    if windows is None:
        print("\nloss by fault window: unknown (the post-mortem's lost set is not there)")
    else:
        print("\nloss by fault window:")
        for w in windows:
            seconds = (w["end_ms"] - w["start_ms"]) / 1000
            print(f"  {w['window']:<28} {seconds:8.1f} s  {w['lost']:>9,} acked lost")
    held = "held" if row.get("expectation_met") else "VIOLATED: " + "; ".join(
        row.get("expectation_failed", []))
    print(f"\ninvariants: {row['expectation']}: {held}")
    if row.get("explanation"):
        print(row["explanation"])
    print(f"evidence: {run_dir} (report: {run_dir / 'postmortem' / 'report.md'}, "
          f"{run_dir / 'chaos.json'})")
