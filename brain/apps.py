from django.apps import AppConfig


class BrainConfig(AppConfig):
    name = "brain"
    verbose_name = "brain"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the brain endpoint and its tools, then brain_answer and brain_context.
        from brain import answer_tools, system_checks, tools  # noqa: F401
        from brain.contributions import home_counts
        from brain.tasks import schedules
        from hyperguild.contributions import register_home_counts, register_schedules

        register_home_counts(home_counts)
        register_schedules(schedules)
