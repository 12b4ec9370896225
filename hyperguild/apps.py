import logging

from django.apps import AppConfig


class HyperguildConfig(AppConfig):
    name = "hyperguild"
    verbose_name = "hyperguild core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from hyperguild import checks  # noqa: F401  (registers system checks)

        # One line per Go hyperguild variable name, at every start-up, until the
        # environment uses our names.
        log = logging.getLogger("hyperguild.env")
        for notice in getattr(settings, "HYPERGUILD_ENV_ALIAS_NOTICES", []):
            log.warning(notice)
