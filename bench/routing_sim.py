"""A synthetic workload replayed through the real router.

    .venv/bin/python bench/routing_sim.py --skills review:0.95/0.99,debug:0.6/0.9 --calls 2000 \
        --drop-at 1000 --drop-to 0.5 --drop-skills review --seed 1
    .venv/bin/python bench/routing_sim.py --areas review:src/api:0.97/0.99,review:legacy/core:0.3/0.95 --calls 2000

(Formerly `manage.py routing_sim`; the options are the same.)

Each skill has a true pass probability per model (`review:0.95/0.99` means
the fast model passes 95% of review calls, the thinking model 99%). Calls
go through `supervisor.routing.route` exactly as tool calls do: the real
pass-rate query, the real decision, fail-open, and real RoutingEntry rows,
all inside a transaction that is rolled back at the end, so the user's
database keeps nothing. Skills are prefixed with `sim:` so the real
history of a skill never leaks into the simulation.

The comparison is on RouteLLM's two axes against "always thinking":
cost saved (the share of thinking-model calls avoided) at quality retained
(the router's pass rate as a share of the always-thinking pass rate).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.core.management.base import CommandError, CommandParser  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from tqdm import tqdm  # noqa: E402

from supervisor.models import Pathway, RoutingEntry  # noqa: E402
from supervisor.routing import Attempt, PathwayKey, RoutingFailed, route  # noqa: E402

T = TypeVar("T")

SIM_PREFIX = "sim:"
SIM_FAST = "sim-fast"
SIM_THINKING = "sim-thinking"
# Adaptation: the dropped skill counts as "moved off the fast model" once the
# fast model served fewer than half of its last ADAPT_WINDOW calls.
ADAPT_WINDOW = 20


class SimSpecError(ValueError):
    pass


@dataclass(frozen=True)
class SkillProfile:
    name: str
    fast: float
    thinking: float


def _pass_probabilities(part: str, fast_text: str, thinking_text: str) -> tuple[float, float]:
    """The fast and thinking models' pass probabilities written in `part` of a spec."""
    try:
        fast, thinking = float(fast_text), float(thinking_text)
    except ValueError:
        raise SimSpecError(f"{part!r}: the pass probabilities must be numbers") from None
    if not (0 <= fast <= 1 and 0 <= thinking <= 1):
        raise SimSpecError(f"{part!r}: pass probabilities lie between 0 and 1")
    return fast, thinking


def parse_skills(text: str) -> list[SkillProfile]:
    """`review:0.95/0.99,debug:0.6/0.9` → profiles (fast/thinking pass probabilities)."""
    profiles = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, probabilities = part.partition(":")
        fast_text, slash, thinking_text = probabilities.partition("/")
        if not sep or not slash or not name.strip():
            raise SimSpecError(f"{part!r}: write skill:fast/thinking, e.g. review:0.95/0.99")
        fast, thinking = _pass_probabilities(part, fast_text, thinking_text)
        profiles.append(SkillProfile(name.strip(), fast, thinking))
    if not profiles:
        raise SimSpecError("no skills given: e.g. --skills review:0.95/0.99,debug:0.6/0.9")
    if len({p.name for p in profiles}) != len(profiles):
        raise SimSpecError("a skill is given twice")
    return profiles


@dataclass
class SkillTally:
    calls: int = 0
    passes: int = 0
    first_passes: int = 0
    fast_first: int = 0
    thinking_calls: int = 0
    model_calls: int = 0
    baseline_expected: float = 0.0

    def count(self, passed: bool, models: list[str], results: list[bool], thinking_chance: float) -> None:
        """One routed call: did it pass, the models asked in order, whether each answer passed."""
        self.calls += 1
        self.passes += passed
        self.first_passes += results[0]
        self.model_calls += len(models)
        self.thinking_calls += models.count(SIM_THINKING)
        self.fast_first += models[0] == SIM_FAST
        self.baseline_expected += thinking_chance


@dataclass
class SimulatedModels:
    """An `attempt` for `route` (one per call): SIM_FAST passes with probability `fast`, SIM_THINKING with
    `thinking`; `asked` and `results` record the models asked, in order, and whether each passed."""

    outcomes: random.Random
    fast: float
    thinking: float
    asked: list[str] = field(default_factory=list)
    results: list[bool] = field(default_factory=list)

    def __call__(self, model: str) -> Attempt:
        self.asked.append(model)
        self.results.append(self.outcomes.random() < (self.fast if model == SIM_FAST else self.thinking))
        if self.results[-1]:
            return Attempt(RoutingEntry.Status.PASS, data={"ok": True})
        return Attempt(RoutingEntry.Status.FAIL, error="simulated failed check")


@dataclass
class SimReport:
    calls: int
    thinking_calls: int
    model_calls: int
    passes: int
    baseline_passes: float  # expected passes of "always thinking"
    first_passes: int
    per_skill: dict[str, SkillTally]
    drop_at: int | None
    dropped: list[str]
    # skill → calls of that skill after the drop until the router left the fast model (None: never)
    adaptation: dict[str, int | None] = field(default_factory=dict)
    # skill → share of that skill's calls that went to the fast model first, before / after the drop
    fast_share_before: dict[str, float] = field(default_factory=dict)
    fast_share_after: dict[str, float] = field(default_factory=dict)
    entries_written: int = 0
    entries_left: int = 0

    @property
    def thinking_saved(self) -> float:
        return 1 - self.thinking_calls / self.calls if self.calls else 0.0

    @property
    def pass_rate(self) -> float:
        return self.passes / self.calls if self.calls else 0.0

    @property
    def baseline_pass_rate(self) -> float:
        return self.baseline_passes / self.calls if self.calls else 0.0

    @property
    def quality_retained(self) -> float:
        return self.pass_rate / self.baseline_pass_rate if self.baseline_pass_rate else 0.0

    def lines(self) -> list[str]:
        out = [
            f"calls: {self.calls}; model calls: {self.model_calls} "
            f"({self.model_calls - self.calls} fail-open retries); thinking-model calls: {self.thinking_calls} "
            f"(always thinking: {self.calls})",
            f"thinking calls saved: {self.thinking_saved:.1%}",
            f"pass rate: router {self.pass_rate:.1%} vs always thinking {self.baseline_pass_rate:.1%} (expected)",
            f"first-answer pass rate (before fail-open): {self.first_passes / max(self.calls, 1):.1%}",
            f"pass rate lost: {(self.baseline_pass_rate - self.pass_rate) * 100:+.1f} points "
            f"({1 - self.quality_retained:.1%} of the always-thinking quality)",
            f"RouteLLM axes: {self.thinking_saved:.0%} cost saved at {self.quality_retained:.1%} quality retained "
            "(RouteLLM, MT Bench: 85% at 95%)",
        ]
        for name, tally in self.per_skill.items():
            out.append(
                f"  {name}: {tally.calls} calls, pass {tally.passes / max(tally.calls, 1):.1%}, "
                f"fast first {tally.fast_first / max(tally.calls, 1):.1%}, "
                f"thinking calls {tally.thinking_calls}"
            )
        for name in self.dropped:
            moved = self.adaptation.get(name)
            moved_text = f"after {moved} of its calls" if moved is not None else "never"
            out.append(
                f"adaptation ({name}, fast pass rate dropped at call {self.drop_at}): moved off the fast model "
                f"{moved_text} (fast share of its last {ADAPT_WINDOW} calls < 50%); fast-first share "
                f"{self.fast_share_before.get(name, 0):.1%} before the drop, {self.fast_share_after.get(name, 0):.1%} after"
            )
        out.append(f"RoutingEntry rows written: {self.entries_written}, left in the database: {self.entries_left}")
        return out


def sim_settings(*, ttl: int, window: int | None, min_samples: int | None) -> dict:
    """The routing settings a simulation runs under: the simulated models, and the caller's overrides."""
    overrides = {
        "HYPERGUILD_FAST_MODEL": SIM_FAST,
        "HYPERGUILD_THINKING_MODEL": SIM_THINKING,
        "HYPERGUILD_PASS_RATE_TTL_SECONDS": ttl,
    }
    if window is not None:
        overrides["HYPERGUILD_ROUTE_WINDOW"] = window
    if min_samples is not None:
        overrides["HYPERGUILD_ROUTE_MIN_SAMPLES"] = min_samples
    return overrides


def simulate(
    profiles: list[SkillProfile],
    *,
    calls: int,
    seed: int = 1,
    drop_at: int | None = None,
    drop_to: float | None = None,
    drop_skills: list[str] | None = None,
    ttl: int = 0,
    window: int | None = None,
    min_samples: int | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> SimReport:
    """Run `calls` routed calls through the real router and roll every row back."""
    overrides = sim_settings(ttl=ttl, window=window, min_samples=min_samples)
    known = {p.name for p in profiles}
    dropped = list(drop_skills) if drop_skills else ([p.name for p in profiles] if drop_to is not None else [])
    unknown = set(dropped) - known
    if unknown:
        raise SimSpecError(f"--drop-skills names skills not in --skills: {', '.join(sorted(unknown))}")
    if drop_to is None or drop_at is None:
        dropped = []

    outcomes = random.Random(seed)  # model answers pass or fail
    choices = random.Random(seed + 1)  # which skill each call is for
    router_rng = random.Random(seed + 2)  # the router's sampling
    tallies = {p.name: SkillTally() for p in profiles}
    first_models: dict[str, list[tuple[int, bool]]] = {p.name: [] for p in profiles}
    report = SimReport(0, 0, 0, 0, 0.0, 0, tallies, drop_at if dropped else None, dropped)

    with override_settings(**overrides), transaction.atomic():
        before = RoutingEntry.objects.count()
        for index in range(calls):
            profile = choices.choice(profiles)
            tally = tallies[profile.name]
            after_drop = drop_at is not None and index >= drop_at and profile.name in dropped
            attempt = SimulatedModels(outcomes, drop_to if after_drop else profile.fast, profile.thinking)
            try:
                route(SIM_PREFIX + profile.name, attempt, session_id="routing_sim", rng=router_rng)
                passed = True
            except RoutingFailed:
                passed = False
            tally.count(passed, attempt.asked, attempt.results, profile.thinking)
            first_models[profile.name].append((index, attempt.asked[0] == SIM_FAST))
            if on_progress:
                on_progress(index + 1)
        report.entries_written = RoutingEntry.objects.count() - before
        transaction.set_rollback(True)
    report.entries_left = RoutingEntry.objects.filter(skill__startswith=SIM_PREFIX, session_id="routing_sim").count()

    report.calls = sum(t.calls for t in tallies.values())
    report.passes = sum(t.passes for t in tallies.values())
    report.first_passes = sum(t.first_passes for t in tallies.values())
    report.thinking_calls = sum(t.thinking_calls for t in tallies.values())
    report.model_calls = sum(t.model_calls for t in tallies.values())
    report.baseline_passes = sum(t.baseline_expected for t in tallies.values())
    for name in dropped:
        history = first_models[name]
        before_drop = [fast for index, fast in history if index < drop_at]
        after = [fast for index, fast in history if index >= drop_at]
        report.fast_share_before[name] = sum(before_drop) / len(before_drop) if before_drop else 0.0
        report.fast_share_after[name] = sum(after) / len(after) if after else 0.0
        report.adaptation[name] = calls_until_moved_off(after)
    return report


def calls_until_moved_off(fast_flags: list[bool]) -> int | None:
    """How many calls until the fast model served fewer than half of the last ADAPT_WINDOW."""
    for end in range(ADAPT_WINDOW, len(fast_flags) + 1):
        recent = fast_flags[end - ADAPT_WINDOW : end]
        if sum(recent) * 2 < ADAPT_WINDOW:
            return end
    return None


# --- pathway memory: a workload whose quality differs per area ------------------------------------
#
# `--areas review:src/api:0.97/0.99,review:legacy/core:0.30/0.95` gives each (skill, area) its own
# pass probabilities. The same workload (same seeds) runs twice through the real router, once
# without pathway keys (the skill-wide pass rate alone) and once with them (pathway memory), and
# both are rolled back. The skill-wide rate averages the areas; the memory can send the good areas
# to the fast model and the bad ones straight to the thinking model.

SIM_SIGNAL = "sim"


@dataclass(frozen=True)
class AreaProfile:
    skill: str
    area: str
    fast: float
    thinking: float

    @property
    def label(self) -> str:
        return f"{self.skill}:{self.area}"


def parse_areas(text: str) -> list[AreaProfile]:
    """`review:src/api:0.97/0.99,review:legacy/core:0.3/0.95` → area profiles."""
    profiles = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        pieces = part.split(":")
        if len(pieces) != 3 or "/" not in pieces[2] or not pieces[0].strip() or not pieces[1].strip():
            raise SimSpecError(f"{part!r}: write skill:area:fast/thinking, e.g. review:src/api:0.97/0.99")
        fast_text, _, thinking_text = pieces[2].partition("/")
        fast, thinking = _pass_probabilities(part, fast_text, thinking_text)
        profiles.append(AreaProfile(pieces[0].strip(), pieces[1].strip(), fast, thinking))
    if not profiles:
        raise SimSpecError("no areas given: e.g. --areas review:src/api:0.97/0.99,review:legacy/core:0.3/0.95")
    if len({p.label for p in profiles}) != len(profiles):
        raise SimSpecError("an area is given twice")
    return profiles


@dataclass
class AreaRun:
    """One pass over the workload: with or without pathway memory."""

    memory: bool
    tallies: dict[str, SkillTally] = field(default_factory=dict)
    pathway_decisions: int = 0
    promoted: int = 0
    retired: int = 0

    def total(self, name: str) -> float:
        return sum(getattr(tally, name) for tally in self.tallies.values())

    @property
    def calls(self) -> int:
        return int(self.total("calls"))

    @property
    def thinking_saved(self) -> float:
        return 1 - self.total("thinking_calls") / self.calls if self.calls else 0.0

    @property
    def pass_rate(self) -> float:
        return self.total("passes") / self.calls if self.calls else 0.0

    @property
    def first_pass_rate(self) -> float:
        return self.total("first_passes") / self.calls if self.calls else 0.0

    @property
    def quality_retained(self) -> float:
        baseline = self.total("baseline_expected")
        return self.total("passes") / baseline if baseline else 0.0


@dataclass
class AreaReport:
    without: AreaRun
    with_memory: AreaRun

    def lines(self) -> list[str]:
        a, b = self.without, self.with_memory
        out = [
            f"areas workload: {a.calls} calls over {len(a.tallies)} areas; same calls with and without pathway memory",
            f"{'':34}{'pass rate only':>16}{'+ pathway memory':>18}",
            f"{'thinking calls saved':34}{a.thinking_saved:>16.1%}{b.thinking_saved:>18.1%}",
            f"{'model calls (incl. fail-open)':34}{int(a.total('model_calls')):>16}{int(b.total('model_calls')):>18}",
            f"{'pass rate':34}{a.pass_rate:>16.1%}{b.pass_rate:>18.1%}",
            f"{'first-answer pass rate':34}{a.first_pass_rate:>16.1%}{b.first_pass_rate:>18.1%}",
            f"{'quality retained (vs always thinking)':34}{a.quality_retained:>16.1%}{b.quality_retained:>18.1%}",
            f"pathway memory: {b.pathway_decisions} calls decided by a pathway; "
            f"{b.promoted} pathways promoted, {b.retired} retired",
        ]
        for label, tally in a.tallies.items():
            other = b.tallies[label]
            out.append(
                f"  {label}: fast first {tally.fast_first / max(tally.calls, 1):.0%} → {other.fast_first / max(other.calls, 1):.0%}, "
                f"first-answer pass {tally.first_passes / max(tally.calls, 1):.0%} → "
                f"{other.first_passes / max(other.calls, 1):.0%}, thinking calls {tally.thinking_calls} → {other.thinking_calls}"
            )
        return out


def _run_areas(
    profiles: list[AreaProfile], calls: int, seed: int, memory: bool, on_progress: Callable[[int], None] | None
) -> AreaRun:
    outcomes, choices, router_rng = random.Random(seed), random.Random(seed + 1), random.Random(seed + 2)
    run = AreaRun(memory, {p.label: SkillTally() for p in profiles})
    for index in range(calls):
        profile = choices.choice(profiles)
        tally = run.tallies[profile.label]
        attempt = SimulatedModels(outcomes, profile.fast, profile.thinking)
        key = PathwayKey(SIM_PREFIX + profile.skill, profile.area, SIM_SIGNAL) if memory else None
        try:
            routed = route(SIM_PREFIX + profile.skill, attempt, session_id="routing_sim", rng=router_rng, pathway=key)
            passed, first_reason = True, routed.entries[0].reason
        except RoutingFailed as exc:
            passed, first_reason = False, exc.entries[0].reason
        run.pathway_decisions += first_reason == RoutingEntry.Reason.PATHWAY
        tally.count(passed, attempt.asked, attempt.results, profile.thinking)
        if on_progress:
            on_progress(index + 1)
    if memory:
        pathways = Pathway.objects.filter(skill__startswith=SIM_PREFIX)
        run.promoted = pathways.filter(state=Pathway.State.PROMOTED).count()
        run.retired = pathways.filter(state=Pathway.State.RETIRED).count()
    return run


def simulate_areas(
    profiles: list[AreaProfile],
    *,
    calls: int,
    seed: int = 1,
    window: int | None = None,
    min_samples: int | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> AreaReport:
    """The same area workload without and with pathway memory, each in a transaction that is rolled back."""
    overrides = sim_settings(ttl=0, window=window, min_samples=min_samples)
    runs = []
    for memory in (False, True):
        with override_settings(**overrides), transaction.atomic():
            runs.append(_run_areas(profiles, calls, seed, memory, on_progress))
            transaction.set_rollback(True)
    return AreaReport(*runs)


class Command(BenchCommand):
    help = (
        "Replay a synthetic workload (per-skill pass probabilities of the fast and the thinking model) through the "
        "real router, in a transaction that is rolled back, and print thinking calls saved, pass rate lost and "
        "adaptation to a mid-run quality drop, against always using the thinking model."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--skills",
            default="",
            help="skill:fast/thinking pass probabilities, comma-separated, e.g. review:0.95/0.99,debug:0.6/0.9",
        )
        parser.add_argument(
            "--areas",
            default="",
            help=(
                "instead of --skills: skill:area:fast/thinking per area, e.g. "
                "review:src/api:0.97/0.99,review:legacy/core:0.3/0.95; runs the workload with and without "
                "pathway memory and prints both"
            ),
        )
        parser.add_argument("--calls", type=int, default=2000, help="routed calls to simulate (default 2000)")
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
        parser.add_argument("--drop-at", type=int, default=None, help="call index where the fast model's quality drops")
        parser.add_argument(
            "--drop-to", type=float, default=None, help="the fast model's pass probability after the drop"
        )
        parser.add_argument(
            "--drop-skills", default="", help="comma-separated skills whose fast model drops (default: all of them)"
        )
        parser.add_argument(
            "--ttl",
            type=int,
            default=0,
            help="pass-rate cache TTL in calls' worth of seconds (default 0: fresh rate per call)",
        )
        parser.add_argument("--window", type=int, default=None, help="override HYPERGUILD_ROUTE_WINDOW")
        parser.add_argument("--min-samples", type=int, default=None, help="override HYPERGUILD_ROUTE_MIN_SAMPLES")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["areas"]:
            areas = self.run_areas(options)
            for line in areas.lines():
                self.stdout.write(line)
            self.stdout.write(
                self.style.SUCCESS(
                    f"routing_sim: pathway memory saves {areas.with_memory.thinking_saved:.0%} of thinking calls "
                    f"(pass rate alone {areas.without.thinking_saved:.0%}) at {areas.with_memory.quality_retained:.1%} "
                    f"quality ({areas.without.quality_retained:.1%}); nothing was kept in the database."
                )
            )
            return
        report = self.run(options)
        for line in report.lines():
            self.stdout.write(line)
        self.stdout.write(
            self.style.SUCCESS(
                f"routing_sim: {report.thinking_saved:.0%} thinking calls saved at {report.quality_retained:.1%} "
                "of the always-thinking quality; nothing was kept in the database."
            )
        )

    def run_areas(self, options: dict[str, Any]) -> AreaReport:
        calls = options["calls"]
        if calls < 1:
            raise CommandError("--calls must be at least 1")
        if options["skills"] or options["drop_at"] is not None:
            raise CommandError("--areas replaces --skills and the drop options")
        return self.with_progress(
            options,
            2 * calls,
            lambda on_progress: simulate_areas(
                parse_areas(options["areas"]), calls=calls, on_progress=on_progress, **self.router_options(options)
            ),
        )

    def run(self, options: dict[str, Any]) -> SimReport:
        calls = options["calls"]
        if not options["skills"]:
            raise CommandError("give --skills (or --areas)")
        if calls < 1:
            raise CommandError("--calls must be at least 1")
        if (options["drop_at"] is None) != (options["drop_to"] is None):
            raise CommandError("--drop-at and --drop-to go together")
        if options["drop_to"] is not None and not 0 <= options["drop_to"] <= 1:
            raise CommandError("--drop-to is a pass probability between 0 and 1")
        if options["drop_at"] is not None and not 0 <= options["drop_at"] < calls:
            raise CommandError("--drop-at must lie within the calls (0 … calls − 1)")
        drop_skills = [name.strip() for name in options["drop_skills"].split(",") if name.strip()]
        return self.with_progress(
            options,
            calls,
            lambda on_progress: simulate(
                parse_skills(options["skills"]),
                calls=calls,
                drop_at=options["drop_at"],
                drop_to=options["drop_to"],
                drop_skills=drop_skills,
                ttl=options["ttl"],
                on_progress=on_progress,
                **self.router_options(options),
            ),
        )

    @staticmethod
    def router_options(options: dict[str, Any]) -> dict[str, Any]:
        """The options both workloads pass on: the seed and the router settings they override."""
        return {"seed": options["seed"], "window": options["window"], "min_samples": options["min_samples"]}

    def with_progress(
        self, options: dict[str, Any], total: int, simulation: Callable[[Callable[[int], None] | None], T]
    ) -> T:
        """Run `simulation` with a progress bar of `total` calls (unless --no-progress); a bad spec is a CommandError."""
        bar = None if options["no_progress"] else tqdm(total=total, unit="call", file=self.stderr, leave=False)
        try:
            return simulation((lambda done: bar.update(1)) if bar else None)
        except SimSpecError as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar:
                bar.close()


if __name__ == "__main__":
    run(Command())
