from django.apps import AppConfig


class SupervisorConfig(AppConfig):
    name = "supervisor"
    verbose_name = "supervisor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from supervisor import tools  # noqa: F401  (registers the supervisor and routing MCP tools)
