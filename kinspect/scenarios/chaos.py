"""A seeded random nemesis: faults that come and go on a schedule drawn from a seed, for as long
as asked, under load and a consumer group, then one exact accounting (Jepsen's way).

The schedule is a scenario's fault plan: each fault is a step held for a while and then undone
(kill -> start, isolate -> heal, power-off -> power-on), a quiet gap before the next. The same
seed, duration and faults give the same schedule, step for step, on any machine. The run is
an ordinary scenario run (lab, load, group, verify, post-mortem); what only a nemesis needs is
its invariants and the loss by fault window.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kinspect.errors import KinspectError
from kinspect.lab.faults import FaultKind
from kinspect.lab.shaping import LinkShape
from kinspect.load.rundir import POSTMORTEM_DIR
from kinspect.postmortem.lost_set import read_lost
from kinspect.scenarios.spec import (
    DISRUPTIVE,
    HALVES,
    STEP_FAULTS,
    Condition,
    FaultStep,
    Scenario,
    halves_seed,
    parse_condition,
)

WARMUP_S = 10.0  # load and group settle before the first fault
COOLDOWN_S = 10.0  # the last fault is repaired this long before the load ends
GAP_S = (5.0, 20.0)  # quiet between one fault's repair and the next fault
HOLD_S = (5.0, 20.0)  # how long a fault lasts
RATE = 1000.0  # messages/s: an hour is 3.6 million, the post-mortem's comfortable size
SLOW = LinkShape(rate_kbit=256)
POWER = "power"  # the option's word for power-off (its repair is power-on)
# What each fault may hit: a role resolved when it fires (plan.resolve)
TARGETS: dict[str, tuple[str, ...]] = {
    "kill": ("leader", "follower", "controller"), "stop": ("leader", "follower"),
    "pause": ("leader", "follower"), "isolate": ("leader", "follower"),
    "isolate-zk": ("leader", "follower"), "isolate-brokers": ("leader", "follower"),
    "slow": ("leader", "follower"), "power-off": ("leader", "all"),
    "partition": (HALVES,),  # drawn as halves-N: which half, from the seed too
}
DEFAULT_FAULTS = ("kill", "pause", "isolate", "slow")


@dataclass(frozen=True)
class ChaosPlan:
    """What `scenario chaos` was asked for: the schedule follows from it alone."""

    seed: int
    duration_s: float
    faults: tuple[str, ...] = DEFAULT_FAULTS
    rate: float = RATE

    @property
    def power(self) -> bool:
        return FaultKind.POWER_OFF.value in self.faults

    @property
    def name(self) -> str:
        return f"chaos-seed{self.seed}"


def fault_words(text: str) -> tuple[str, ...]:
    """--faults kill,pause,power,…: the step words (power: power-off), each known."""
    words = []
    for given in (w.strip() for w in text.split(",") if w.strip()):
        word = given
        if given == POWER:
            word = FaultKind.POWER_OFF.value
        if word not in TARGETS:
            known = ", ".join(sorted({*TARGETS} - {FaultKind.POWER_OFF.value} | {POWER}))
            raise KinspectError(f"--faults: {word!r} is not a fault the nemesis knows "
                                f"({known})")
        words.append(word)
    if not words:
        raise KinspectError("--faults names no fault")
    return tuple(dict.fromkeys(words))


def schedule(plan: ChaosPlan) -> tuple[FaultStep, ...]:
    """The faults, in order: drawn from the seed alone (random.Random is stable across
    platforms and Python versions for these calls)."""
    draw = random.Random(plan.seed)
    steps: list[FaultStep] = []
    elapsed = 0.0
    while True:
        gap, hold = draw.uniform(*GAP_S), draw.uniform(*HOLD_S)
        if not steps:  # the first fault comes after the warm-up at least
            gap += WARMUP_S - GAP_S[0]
        if elapsed + gap + hold > plan.duration_s - COOLDOWN_S:
            return tuple(steps)
        word = draw.choice(plan.faults)
        target = draw.choice(TARGETS[word])
        if target == HALVES:
            target = f"{HALVES}-{draw.randrange(1 << 30)}"
        step = _step(word, target, round(gap, 1), round(hold, 1), steps)
        steps.append(step)
        elapsed += gap + hold


def _step(word: str, target: str, gap: float, hold: float,
          before: Sequence[FaultStep]) -> FaultStep:
    """The fault `gap` s after the last one's repair, anchored on the schedule's clock: a
    repair that waits for its broker (a power-on, a start) does not push every later fault
    past the load's end (an hour's schedule had run 40 % late)."""
    shape = None
    if STEP_FAULTS[word][0] is FaultKind.SLOW:
        shape = SLOW
    at = gap
    if before:
        last = before[-1]
        at = (last.at_s or 0.0) + (last.for_s or 0.0) + gap
    return FaultStep(do=word, target=target, after_s=gap, at_s=round(at, 1), for_s=hold,
                     shape=shape)


def schedule_lines(steps: Sequence[FaultStep]) -> list[str]:
    """`+12.3 s  kill leader for 8.1 s` per step, its time from the load's start."""
    return [f"+{step.at_s or 0.0:7.1f} s  {step.do} {_target_words(step.target)} for "
            f"{step.for_s:.1f} s" for step in steps]


def _target_words(target: str) -> str:
    """A drawn half said as one (`half the nodes, drawn: halves-N`), a role as itself."""
    if halves_seed(target) is None:
        return target
    return f"half the nodes, drawn: {target}"


def invariants(plan: ChaosPlan, steps: Sequence[FaultStep]) -> list[str]:
    """What must hold whatever the schedule: the group processes everything it committed
    past; every fault happened; acks=all, min.insync.replicas=2 and unclean election off lose
    nothing acknowledged. Once any broker lost power that last one weakens to: nothing lost
    outside the batches the power filesystem dropped. A single broker's cut loses writes too,
    when a partition left it the last in-sync replica (the hour's run met it); such loss is
    measured and attributed, and whatever the cuts did not drop must still be there."""
    held = [f"faults_applied >= {len(steps)}", "never_processed == 0"]
    if any(s.do == FaultKind.POWER_OFF for s in steps):
        return [*held, "lost_outside_power_cuts == 0"]
    return [*held, "acked_lost == 0"]


def chaos_scenario(plan: ChaosPlan) -> Scenario:
    """The nemesis as a scenario the runner knows: the demo preset (min ISR 2, unclean off),
    acks=all, a consumer group committing after it processes, the drawn schedule."""
    if plan.duration_s < WARMUP_S + COOLDOWN_S + GAP_S[0] + HOLD_S[0]:
        raise KinspectError(f"--duration must be at least "
                            f"{WARMUP_S + COOLDOWN_S + GAP_S[0] + HOLD_S[0]:.0f} s: room for "
                            "the warm-up, one fault and the cool-down")
    steps = schedule(plan)
    where = Path(f"{plan.name}.toml")
    return Scenario(
        name=plan.name, title=f"seeded nemesis: {len(steps)} faults over "
                              f"{plan.duration_s:.0f} s (seed {plan.seed})",
        why="Random faults on a schedule drawn from the seed, under load and a consumer group; "
            "then one accounting: loss per fault window, attribution, duplicates, "
            "unavailability, and the invariants.",
        source="Jepsen's nemesis", topic="chaos", partitions=3,
        load={"acks": "all", "count": int(plan.rate * plan.duration_s), "rate": plan.rate},
        group={"commit": "after"}, steps=steps,
        expect=tuple(_condition(line, where) for line in invariants(plan, steps)),
        power=plan.power, path=where)


def _condition(line: str, where: Path) -> Condition:
    metric, text = line.split(" ", 1)
    return parse_condition(metric, text, where)


@dataclass(frozen=True)
class Window:
    """A stretch of the run: one fault from its start to its repair, or the quiet between."""

    label: str  # `kill kafka2` or `quiet`
    start_ms: int
    end_ms: int
    lost: int  # acknowledged in this stretch, and not in the final log


def windows(faults: Sequence[dict[str, object]], start_ms: int,
            end_ms: int) -> list[tuple[str, int, int]]:
    """The row's faults (applied, repaired, applied, ...) as labelled stretches, quiet ones
    between, from the load's start to its end (or the last repair, if later)."""
    stretches: list[tuple[str, int, int]] = []
    start, label = start_ms, "quiet"
    for entry in faults:
        ts = int(str(entry["ts"]))
        stretches.append((label, start, ts))
        nodes = entry.get("nodes")
        named = ", ".join(str(n) for n in nodes) if isinstance(nodes, list) else ""
        label = f"{entry['do']} {named}".strip()
        if str(entry["do"]) not in DISRUPTIVE:  # a repair: quiet from here
            label = "quiet"
        start = ts
    stretches.append((label, start, max(start, end_ms)))
    return stretches


def loss_by_window(run_dir: Path, faults: Sequence[dict[str, object]],
                   acked_lost: int) -> list[Window] | None:
    """How many acknowledged-and-lost messages were acknowledged in each stretch, by their ack
    times in the post-mortem's lost set (None: unknown, the set is not there)."""
    lost = read_lost(run_dir / POSTMORTEM_DIR, acked_lost)
    if lost is None:
        return None
    times = sorted(int(ts) for ts in lost.column("ack_ts").to_pylist())
    summary = json.loads((run_dir / "summary.json").read_text())
    begun = min([int(summary["started_at_ms"]), *times])
    end = max([int(summary["ended_at_ms"]), *times]) + 1  # a late ack still counted
    return [Window(label, start, stop, sum(start <= t < stop for t in times))
            for label, start, stop in windows(faults, begun, end)]
