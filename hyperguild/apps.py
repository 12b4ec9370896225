from django.apps import AppConfig


class HyperguildConfig(AppConfig):
    name = "hyperguild"
    verbose_name = "hyperguild core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from hyperguild import checks  # noqa: F401  (registers system checks)
