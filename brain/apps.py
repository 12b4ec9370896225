from django.apps import AppConfig


class BrainConfig(AppConfig):
    name = "brain"
    verbose_name = "brain"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from brain import tools  # noqa: F401  (registers the brain MCP tools)
