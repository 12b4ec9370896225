from django.apps import AppConfig


class AgentSessionsConfig(AppConfig):
    name = "sessions"
    # django.contrib.sessions owns the label "sessions".
    label = "agent_sessions"
    verbose_name = "agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers session_log on /mcp/brain, retrospective and trainer on /mcp/supervisor and /mcp/routing.
        from brain.callbacks import (
            register_folder_section,
            register_project_sessions,
            register_provenance_entries,
            register_session_project,
        )
        from hyperguild.contributions import register_home_counts, register_schedules
        from sessions import system_checks, tools  # noqa: F401
        from sessions.contributions import (
            FOLDER_SECTIONS,
            home_counts,
            project_sessions,
            provenance_entries,
            session_project,
        )
        from sessions.tasks import schedules

        for section in FOLDER_SECTIONS:
            register_folder_section(section)
        register_provenance_entries(provenance_entries)
        register_project_sessions(project_sessions)
        register_session_project(session_project)
        register_home_counts(home_counts)
        register_schedules(schedules)
