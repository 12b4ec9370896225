"""Skill runs: one row per skill call, with the worker's claim and the supervisor's verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Avg, Count, Q
from django.db.models.functions.datetime import TruncBase
from django.utils import timezone

from supervisor.skills import Verdict


# Unparameterized for now: with `QuerySet["SkillRun"]` django-stubs checks every lookup, and
# supervisor/executor.py `_slots_held_by_runs` (another change's file) passes `pk=None` and reads a nullable
# `values_list` as ints. Parameterize it together with that function.
class SkillRunQuerySet(models.QuerySet):  # type: ignore[type-arg]
    def for_skill(self, skill: str) -> SkillRunQuerySet:
        return self.filter(skill=skill)

    def finished(self) -> SkillRunQuerySet:
        return self.exclude(status__in=SkillRun.UNFINISHED)

    def in_session(self, session_id: str) -> SkillRunQuerySet:
        return self.filter(session_id=session_id)

    def running(self) -> SkillRunQuerySet:
        return self.filter(status=SkillRun.Status.RUNNING)


class SkillRun(models.Model):
    """One call of a skill (on /mcp/supervisor or /mcp/routing).

    `worker_report` is what the worker says it did; `verified` is what the
    supervisor found when it checked for itself (None: nothing to verify, or
    not checked yet). The two are kept apart on purpose: the claim is
    evidence for training data, never the verdict.
    """

    class Status(models.TextChoices):
        """Queued, running, then the verdict of its result (`supervisor.skills.Verdict`)."""

        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        PASS = Verdict.PASS.value, "pass"
        FAIL = Verdict.FAIL.value, "fail"
        ERROR = Verdict.ERROR.value, "error"
        TIMEOUT = Verdict.TIMEOUT.value, "timeout"
        CANCELLED = Verdict.CANCELLED.value, "cancelled"

    UNFINISHED = (Status.QUEUED, Status.RUNNING)

    class Endpoint(models.TextChoices):
        SUPERVISOR = "supervisor", "supervisor"
        ROUTING = "routing", "routing"

    skill = models.CharField(max_length=40, db_index=True)
    tool = models.CharField(max_length=80, blank=True, default="")
    endpoint = models.CharField(max_length=20, choices=Endpoint.choices, default=Endpoint.SUPERVISOR)
    arguments = models.JSONField(default=dict, blank=True)
    project_root = models.CharField(max_length=1000, blank=True, default="")
    route = models.CharField(max_length=40, blank=True, default="", help_text="fast / thinking / … (routing only)")
    model = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    verified = models.BooleanField(null=True, blank=True)
    worker_report = models.JSONField(null=True, blank=True, help_text="the worker's own claim (last attempt)")
    result = models.JSONField(null=True, blank=True, help_text="the result returned to the caller")
    runner_output = models.TextField(blank=True, default="", help_text="output of the supervisor's own check")
    exit_code = models.IntegerField(null=True, blank=True)
    stdout = models.TextField(blank=True, default="")
    stderr = models.TextField(blank=True, default="")
    duration_ms = models.IntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    attempt_log = models.JSONField(default=list, blank=True, help_text="each attempt: worker output + verification")
    change = models.JSONField(
        null=True,
        blank=True,
        help_text="what the worker changed (TDD, debug): pre-state hashes, file texts, unified diff, tests before/after",
    )
    # Secrets taken out before storing: [{field, pattern, count}] (hyperguild.lib.redaction).
    redactions = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True, default="")
    progress = models.CharField(max_length=200, blank=True, default="", help_text="what the run is doing now")
    session_id = models.CharField(max_length=200, blank=True, default="", db_index=True)
    # Every model call the run made (each `claude` worker attempt), with what was sent and the raw answer.
    model_calls = models.ManyToManyField("ledger.ModelCall", blank=True, related_name="+")
    # The person whose token made the call (None: the service identity or the simulator).
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancel_requested = models.BooleanField(default=False)
    # A run started as an MCP task (hyperguild.mcp.mcp_tasks): the run is the task. Its unguessable handle, and a
    # digest of the caller's Authorization header, without which the handle finds nothing (supervisor.jobs).
    task_id = models.CharField(max_length=64, null=True, blank=True, unique=True)
    task_owner = models.CharField(max_length=64, blank=True, default="")
    # The credential behind the call ({"scopes", "via", "credential"}; the person is requested_by), for a tool job
    # whose handler runs in the worker and checks rights as it would in the request (supervisor.jobs).
    caller = models.JSONField(null=True, blank=True)
    # Who owns a running run (see supervisor/reaper.py): the process that claimed it, the
    # process group of what it runs now (claude or a test command), the worker slot it holds.
    worker_host = models.CharField(max_length=255, blank=True, default="")
    worker_pid = models.IntegerField(null=True, blank=True)
    worker_pgid = models.IntegerField(
        null=True, blank=True, help_text="process group of the running claude / test command"
    )
    worker_slot = models.PositiveSmallIntegerField(null=True, blank=True, help_text="SUPERVISOR_MAX_WORKERS slot held")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = SkillRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["skill", "-created_at"])]
        # Running skills (/mcp/supervisor, /mcp/routing) and free-form commands: the operator role (people.roles).
        permissions = [("run_skill", "Can run skills and the commands they take (test_cmd, failing_cmd)")]

    def __str__(self) -> str:
        return f"{self.skill} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in self.UNFINISHED


@dataclass(frozen=True)
class SkillFigures:
    """One skill's routing figures (defined on RoutingEntryQuerySet)."""

    calls: int
    pass_rate: float | None
    router_pass_rate: float | None
    calls_by_model: dict[str, int]
    fast_share: float | None
    fail_open_retries: int
    outages: int


@dataclass(frozen=True)
class ModelFigures:
    """One model's calls, retries included (defined on RoutingEntryQuerySet)."""

    attempts: int
    passes: int
    mean_latency_ms: float | None
    outages: int


@dataclass(frozen=True)
class RoutingFigures:
    """Every routing figure for a window: what /routing/stats serves (`asdict`) and the dashboard shows."""

    calls: int
    calls_by_model: dict[str, int]
    fast_share: float | None
    attempts: int
    outages: int
    models: dict[str, ModelFigures]
    skills: dict[str, SkillFigures]


@dataclass(frozen=True)
class PassRateBucket:
    """Router choices of one skill in one time bucket, and how many passed."""

    skill: str
    bucket: datetime
    passed: int
    total: int


class RoutingEntryQuerySet(models.QuerySet["RoutingEntry"]):
    def for_skill(self, skill: str) -> RoutingEntryQuerySet:
        return self.filter(skill=skill)

    def final(self) -> RoutingEntryQuerySet:
        """One row per routed call: the entry whose status is the call's outcome."""
        return self.filter(is_final=True)

    def router_choices(self) -> RoutingEntryQuerySet:
        """First attempts the router chose itself: what the pass rate is measured on.

        Overrides say nothing about the router's choice, and a fail-open retry
        is the thinking model rescuing a fast failure (the failure is what
        counts), so both are left out.
        """
        return (
            self.filter(attempt_of__isnull=True)
            .exclude(reason=RoutingEntry.Reason.OVERRIDE)
            .exclude(status=RoutingEntry.Status.OUTAGE)
        )

    def judged(self) -> RoutingEntryQuerySet:
        """Entries where a model got its chance: outages (gateway down, timeout, 5xx) are left out."""
        return self.exclude(status=RoutingEntry.Status.OUTAGE)

    def outages(self) -> RoutingEntryQuerySet:
        return self.filter(status=RoutingEntry.Status.OUTAGE)

    def since(self, moment: datetime) -> RoutingEntryQuerySet:
        return self.filter(created_at__gte=moment)

    # --- the figures: one definition each, used by /routing/stats and the dashboard ----------
    #
    # calls          routed calls, each counted once by its final entry
    # pass_rate      share of calls that ended in a pass
    # router_pass_rate  share of the router's own first choices that passed (what routing decides on)
    # fast_share     share of calls answered by the fast model (by the final entry: a fast failure
    #                rescued by the thinking model counts as a thinking call)
    # fail_open_retries  retries onto the thinking model
    # attempts       model calls, retries included; per model with passes and mean latency
    # outages        attempts that never reached a model (gateway unreachable, timed out, 5xx): shown
    #                apart, never in calls, attempts or any pass rate

    def _per_skill_figures(self, fast_model: str) -> dict[str, SkillFigures]:
        finals = (
            self.final()
            .judged()
            .values("skill", "model")
            .annotate(calls=Count("id"), passes=Count("id", filter=Q(status=RoutingEntry.Status.PASS)))
            .order_by("skill", "model")
        )
        choices = {
            row["skill"]: row
            for row in self.router_choices()
            .values("skill")
            .annotate(total=Count("id"), passes=Count("id", filter=Q(status=RoutingEntry.Status.PASS)))
            .order_by("skill")
        }
        retries: dict[str, int] = dict(
            self.filter(reason=RoutingEntry.Reason.FAIL_OPEN)
            .values_list("skill")
            .annotate(n=Count("id"))
            .order_by("skill")
        )
        outages: dict[str, int] = dict(self.outages().values_list("skill").annotate(n=Count("id")).order_by("skill"))
        calls: dict[str, int] = {}
        passes: dict[str, int] = {}
        calls_by_model: dict[str, dict[str, int]] = {}
        for row in finals:
            skill = row["skill"]
            calls[skill] = calls.get(skill, 0) + row["calls"]
            passes[skill] = passes.get(skill, 0) + row["passes"]
            calls_by_model.setdefault(skill, {})[row["model"]] = row["calls"]
        figures = {}
        for name, count in calls.items():
            chosen = choices.get(name)
            figures[name] = SkillFigures(
                calls=count,
                pass_rate=_share(passes[name], count),
                router_pass_rate=_share(chosen["passes"], chosen["total"]) if chosen else None,
                calls_by_model=calls_by_model[name],
                fast_share=_share(calls_by_model[name].get(fast_model, 0), count),
                fail_open_retries=retries.get(name, 0),
                outages=outages.get(name, 0),
            )
        for name, count in outages.items():  # a skill that only ever met outages still shows them
            figures.setdefault(
                name,
                SkillFigures(
                    calls=0,
                    pass_rate=None,
                    router_pass_rate=None,
                    calls_by_model={},
                    fast_share=None,
                    fail_open_retries=retries.get(name, 0),
                    outages=count,
                ),
            )
        return figures

    def _per_model_figures(self) -> dict[str, ModelFigures]:
        """Model calls (retries included) per model, most used first: attempts, passes, mean latency."""
        outage = Q(status=RoutingEntry.Status.OUTAGE)
        rows = (
            self.values("model")
            .annotate(
                attempts=Count("id", filter=~outage),
                passes=Count("id", filter=Q(status=RoutingEntry.Status.PASS)),
                latency=Avg("latency_ms", filter=~outage),
                outages=Count("id", filter=outage),
            )
            .order_by("-attempts", "model")
        )
        return {
            row["model"]: ModelFigures(
                attempts=row["attempts"],
                passes=row["passes"],
                mean_latency_ms=round(row["latency"], 1) if row["latency"] is not None else None,
                outages=row["outages"],
            )
            for row in rows
        }

    def router_pass_rate_buckets(self, trunc: type[TruncBase]) -> list[PassRateBucket]:
        """Passes and calls per skill and time bucket (`trunc`: TruncHour/TruncDay), on router choices."""
        return [
            PassRateBucket(skill=row["skill"], bucket=row["bucket"], passed=row["passed"], total=row["total"])
            for row in self.router_choices()
            .annotate(bucket=trunc("created_at"))
            .values("skill", "bucket")
            .order_by()
            .annotate(passed=Count("id", filter=Q(status=RoutingEntry.Status.PASS)), total=Count("id"))
        ]

    def figures(self, fast_model: str) -> RoutingFigures:
        """Every routing figure for the entries in this queryset (see the definitions above)."""
        skills = self._per_skill_figures(fast_model)
        models = self._per_model_figures()
        calls_by_model: dict[str, int] = {}
        for skill in skills.values():
            for model, calls in skill.calls_by_model.items():
                calls_by_model[model] = calls_by_model.get(model, 0) + calls
        calls = sum(calls_by_model.values())
        return RoutingFigures(
            calls=calls,
            calls_by_model=dict(sorted(calls_by_model.items())),
            fast_share=_share(calls_by_model.get(fast_model, 0), calls),
            attempts=sum(model.attempts for model in models.values()),
            outages=sum(model.outages for model in models.values()),
            models=models,
            skills=skills,
        )


class PathwayQuerySet(models.QuerySet["Pathway"]):
    def for_skill(self, skill: str) -> PathwayQuerySet:
        return self.filter(skill=skill)

    def deciding(self) -> PathwayQuerySet:
        """Pathways past probation whose recommended model the router uses."""
        return self.filter(state=Pathway.State.PROMOTED).exclude(recommended_model="")


class Pathway(models.Model):
    """Routing memory for one narrow kind of task: which model worked where.

    Keyed by skill + the first two path segments of the file (`area`) + the
    kind of signal (`signal`: for review "paths" or "git-range", for debug the
    class of failure). The first model that passes a call on the pathway
    becomes its recommendation; every later call in which that model makes an
    attempt is a replay. After HYPERGUILD_PATHWAY_PROBATION replays the
    pathway is promoted (success rate ≥ HYPERGUILD_PATHWAY_MIN_SUCCESS: the
    router uses the model, reason "pathway") or retired. Retirement is for
    good: a retired pathway never decides again, whatever happens after
    (no oscillation on noise). `attempts_by_model` keeps every model's
    attempts and passes on the pathway; `fingerprints` the bugs grounded
    findings found here, for the next review of the area.
    """

    class State(models.TextChoices):
        PROBATION = "probation", "probation"
        PROMOTED = "promoted", "promoted: decides the model"
        RETIRED = "retired", "retired for good"

    MAX_FINGERPRINTS = 20

    key = models.CharField(max_length=500, unique=True)
    skill = models.CharField(max_length=40, db_index=True)
    area = models.CharField(max_length=300, help_text="first two path segments of the file")
    signal = models.CharField(max_length=60, help_text="kind of signal (paths, git-range, assertion, import, …)")
    recommended_model = models.CharField(max_length=200, blank=True, default="")
    replays = models.PositiveIntegerField(default=0, help_text="calls in which the recommended model made an attempt")
    successes = models.PositiveIntegerField(default=0, help_text="replays the recommended model passed")
    attempts_by_model = models.JSONField(default=dict, blank=True, help_text="{model: {attempts, passes}}")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PROBATION, db_index=True)
    fingerprints = models.JSONField(default=list, blank=True, help_text="bug fingerprints of grounded findings")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    promoted_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    objects = PathwayQuerySet.as_manager()

    class Meta:
        ordering = ["skill", "area", "signal"]
        indexes = [models.Index(fields=["skill", "area"], name="pathway_skill_area")]

    def __str__(self) -> str:
        return f"{self.key} ({self.state}{', ' + self.recommended_model if self.recommended_model else ''})"

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.replays if self.replays else None

    def record(
        self, outcomes: list[tuple[str, bool]], *, probation: int, min_success: float, cheap_model: str = ""
    ) -> None:
        """Count one call's attempts ((model, passed) in order) and move the state (not saved).

        Cheap first: a model other than `cheap_model` (the fast model) becomes
        the recommendation only once the cheap model has failed on this
        pathway; otherwise a thinking model that happened to be sampled first
        would lock a good area out of the fast model for good.
        """
        for model, passed in outcomes:
            stats = self.attempts_by_model.setdefault(model, {"attempts": 0, "passes": 0})
            stats["attempts"] += 1
            stats["passes"] += int(passed)
        self.updated_at = timezone.now()
        if not self.recommended_model:
            winner = next((model for model, passed in outcomes if passed), None)
            cheap = self.attempts_by_model.get(cheap_model, {"attempts": 0, "passes": 0})
            if winner and cheap_model and winner != cheap_model and cheap["attempts"] == cheap["passes"]:
                winner = None  # the cheap model has not failed here yet: keep it in the running
            if winner is not None:  # the call that names the recommendation is its first replay
                self.recommended_model, self.replays, self.successes = winner, 1, 1
            self._judge(probation, min_success)
            return
        tried = [passed for model, passed in outcomes if model == self.recommended_model]
        if not tried:
            return
        self.replays += 1
        self.successes += int(any(tried))
        self._judge(probation, min_success)

    def _judge(self, probation: int, min_success: float) -> None:
        # Retired is for good: replays are still counted (for the record), the state never moves again.
        if self.state == self.State.RETIRED or self.replays < probation:
            return
        if self.successes / self.replays >= min_success:
            if self.state != self.State.PROMOTED:
                self.state, self.promoted_at = self.State.PROMOTED, timezone.now()
        else:
            self.state, self.retired_at = self.State.RETIRED, timezone.now()

    def add_fingerprints(self, found: Iterable[Mapping[str, Any]]) -> None:
        """Merge {fingerprint, title, file, line} items (counted), newest first, capped (not saved)."""
        now = timezone.now().isoformat()
        known = {item["fingerprint"]: item for item in self.fingerprints}
        for item in found:
            entry = known.get(item["fingerprint"])
            if entry is None:
                entry = known[item["fingerprint"]] = {**item, "count": 0}
            entry.update(title=item.get("title", ""), file=item.get("file", ""), line=item.get("line"))
            entry["count"] += 1
            entry["last_seen"] = now
        self.fingerprints = sorted(known.values(), key=lambda e: e["last_seen"], reverse=True)[: self.MAX_FINGERPRINTS]


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


class RoutingEntry(models.Model):
    """One routing decision on /mcp/routing (or in bench/routing_sim.py) and how it ended.

    A call makes one entry, or two when a failed first attempt is retried on
    the thinking model (fail-open): the retry points at the first attempt
    with `attempt_of`. Exactly one entry per call has `is_final=True`; its
    status is the call's outcome.
    """

    class Reason(models.TextChoices):
        """Why the router chose the model (supervisor.routing)."""

        OVERRIDE = "override", "override"
        PATHWAY = "pathway", "pathway"
        FLOOR = "floor", "floor"
        CEIL = "ceil", "ceil"
        SAMPLE_BAND = "sample band", "sample band"
        MIN_SAMPLES = "min samples", "min samples"
        FAIL_OPEN = "fail-open retry", "fail-open retry"
        SINGLE_MODEL = "single model", "single model (fast = thinking)"

    class Status(models.TextChoices):
        PASS = "pass", "pass"
        FAIL = "fail", "fail: no passing answer (model refused, invalid answer or failed check)"
        ERROR = "error", "error: hyperguild could not run the attempt"
        # The gateway was unreachable, timed out or answered 5xx: the model never got its chance, so an
        # outage is shown apart and never counted in a pass rate.
        OUTAGE = "outage", "outage: gateway unreachable, timed out or 5xx"

    # Request/response bodies are kept for training extraction, capped so a
    # huge prompt cannot bloat the table.
    BODY_CAP = 100_000

    skill = models.CharField(max_length=40, db_index=True)
    model = models.CharField(max_length=200)
    reason = models.CharField(max_length=20, choices=Reason.choices)
    pass_rate_seen = models.FloatField(null=True, blank=True, help_text="the skill's pass rate when deciding")
    samples_seen = models.PositiveIntegerField(default=0, help_text="how many runs that rate was measured on")
    status = models.CharField(max_length=8, choices=Status.choices, db_index=True)
    is_final = models.BooleanField(default=True, help_text="this entry's status is the call's outcome")
    attempt_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="retries",
        help_text="the failed attempt this retries",
    )
    latency_ms = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    total_tokens = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="", help_text="why the attempt failed")
    request = models.JSONField(null=True, blank=True, help_text="the messages sent (capped)")
    response = models.TextField(blank=True, default="", help_text="the model's answer (capped)")
    session_id = models.CharField(max_length=200, blank=True, default="", db_index=True)
    # The model calls this attempt made (one, or one per part of a tree-split), with their raw bodies.
    model_calls = models.ManyToManyField("ledger.ModelCall", blank=True, related_name="+")
    # The model calls this attempt made (one, or one per part of a tree-split), with their raw bodies.
    model_calls = models.ManyToManyField("ledger.ModelCall", blank=True, related_name="+")
    # The person whose token made the call (None: the service identity or the simulator).
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Secrets taken out of request/response/error before storing: [{field, pattern, count}].
    redactions = models.JSONField(default=list, blank=True)
    pathway = models.ForeignKey(
        Pathway,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="entries",
        help_text="the pathway (skill, area, signal) this call belonged to",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = RoutingEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "routing entries"
        indexes = [models.Index(fields=["skill", "-created_at"], name="routing_skill_recent")]

    def __str__(self) -> str:
        return f"{self.skill} → {self.model} ({self.reason}, {self.status})"
