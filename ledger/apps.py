from django.apps import AppConfig


class LedgerConfig(AppConfig):
    """Model calls, their prices, usage, costs and budgets: what the service spent, on whom."""

    name = "ledger"
    verbose_name = "ledger"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module before any app's models are loaded.
        from hyperguild.contributions import register_serve_banner
        from hyperguild.lib.model_calls import set_recorder
        from hyperguild.providers import provide_usage
        from ledger.actions import do_mark_model_call, do_record_model_call, reserve_chat_budget
        from ledger.budgets import banner_lines
        from ledger.usage import add_usage

        # The core's clients record calls and ask the budgets through these (hyperguild.lib.model_calls).
        set_recorder(do_record_model_call, do_mark_model_call, reserve_chat_budget)
        provide_usage(add_usage)  # the MCP engine fills a tool's `usage` through it (hyperguild.providers)
        register_serve_banner(banner_lines)
