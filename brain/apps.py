from django.apps import AppConfig


class BrainConfig(AppConfig):
    name = "brain"
    verbose_name = "brain"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from brain import tools  # noqa: F401  (registers the brain MCP tools)
        from brain.backlog import health_section
        from hyperguild.health import register_health_section

        register_health_section("embeddings", health_section)
