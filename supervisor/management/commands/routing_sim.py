"""manage.py routing_sim: replay a synthetic workload through the real router.

    manage.py routing_sim --skills review:0.95/0.99,debug:0.6/0.9 --calls 2000 \
        --drop-at 1000 --drop-to 0.5 --drop-skills review --seed 1
    manage.py routing_sim --areas review:src/api:0.97/0.99,review:legacy/core:0.3/0.95 --calls 2000
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from supervisor.routing_sim import (
    AreaReport,
    SimReport,
    SimSpecError,
    parse_areas,
    parse_skills,
    simulate,
    simulate_areas,
)

T = TypeVar("T")


class Command(BaseCommand):
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

    def handle(self, *args, **options) -> None:
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

    def run_areas(self, options: dict) -> AreaReport:
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

    def run(self, options: dict) -> SimReport:
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
    def router_options(options: dict) -> dict:
        """The options both workloads pass on: the seed and the router settings they override."""
        return {"seed": options["seed"], "window": options["window"], "min_samples": options["min_samples"]}

    def with_progress(self, options: dict, total: int, simulation: Callable[[Callable[[int], None] | None], T]) -> T:
        """Run `simulation` with a progress bar of `total` calls (unless --no-progress); a bad spec is a CommandError."""
        bar = None if options["no_progress"] else tqdm(total=total, unit="call", file=self.stderr, leave=False)
        try:
            return simulation((lambda done: bar.update(1)) if bar else None)
        except SimSpecError as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar:
                bar.close()
