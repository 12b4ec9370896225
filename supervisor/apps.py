from django.apps import AppConfig


class SupervisorConfig(AppConfig):
    name = "supervisor"
    verbose_name = "supervisor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers /mcp/supervisor, then /mcp/routing (in that order: the serve banner lists them so),
        # their tools, and the routing settings check.
        from supervisor import tools  # noqa: F401, I001
        from supervisor import routing_tools, system_checks  # noqa: F401
        from supervisor import mcp_prompts  # noqa: F401, I001
        from supervisor.jobs import SkillRunJobs
        from hyperguild.contributions import register_schedules
        from observability.metrics import register_metric_source
        from supervisor.metrics import skill_run_metrics
        from supervisor.tasks import schedules

        from brain.checks import register_check_runner
        from supervisor.note_checks import run_note_check

        register_schedules(schedules)  # the reaper of abandoned runs
        # A long tool started as an MCP task is its SkillRun, run by the worker (supervisor.jobs).
        tools.supervisor.jobs = SkillRunJobs("supervisor")
        routing_tools.routing.jobs = SkillRunJobs("routing")
        register_check_runner(run_note_check)  # notes' `check:` commands run as test commands do
        register_metric_source("skill_runs", skill_run_metrics)
