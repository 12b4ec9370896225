from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    """Metrics (/metrics), tracing (OpenTelemetry) and health (/health): how the service is doing."""

    name = "observability"
    verbose_name = "observability"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module before any app's models are loaded.
        from hyperguild.providers import provide_observation
        from observability.metrics import observe_mcp
        from observability.tracing import carry_context, configure_tracing, mcp_span
        from people.permissions import register_right
        from people.roles import OPERATOR

        # The service's figures; the permission sits on the core's WorkerHeartbeat (hyperguild.view_metrics).
        register_right(
            "service:metrics",
            scope="",
            permission="hyperguild.view_metrics",
            roles=(OPERATOR,),
            description="see the service's metrics (/metrics)",
        )
        provide_observation(observe_mcp=observe_mcp, carry_context=carry_context, mcp_span=mcp_span)
        configure_tracing()  # only with OTEL_EXPORTER_OTLP_ENDPOINT set; before the handler loads the middleware
