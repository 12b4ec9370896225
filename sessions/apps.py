from django.apps import AppConfig


class AgentSessionsConfig(AppConfig):
    name = "sessions"
    # django.contrib.sessions owns the label "sessions".
    label = "agent_sessions"
    verbose_name = "agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions import tools  # noqa: F401  (registers session_log on /mcp/brain)
