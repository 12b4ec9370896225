from django.apps import AppConfig


class SupervisorConfig(AppConfig):
    name = "supervisor"
    verbose_name = "supervisor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the supervisor and routing endpoints and their tools, and the routing settings check.
        from supervisor import routing_tools, system_checks, tools  # noqa: F401
