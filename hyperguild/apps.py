import logging
from typing import Any

from django.apps import AppConfig


class HyperguildConfig(AppConfig):
    name = "hyperguild"
    verbose_name = "hyperguild core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module before any app's models are loaded,
        # and these import models (or register checks and signal handlers that do).
        from django.conf import settings
        from django.db.models.signals import post_migrate

        from hyperguild import checks  # noqa: F401  (registers system checks)

        # One line per Go hyperguild variable name, at every start-up, until the
        # environment uses our names.
        log = logging.getLogger("hyperguild.env")
        for notice in settings.HYPERGUILD_ENV_ALIAS_NOTICES:
            log.warning(notice)

        # Every `migrate` (make run, `manage.py setup`, a deployment's release step) installs the
        # periodic schedules, so web servers and `qcluster` started separately still get them.
        post_migrate.connect(install_schedules, sender=self, dispatch_uid="hyperguild-install-schedules")


def install_schedules(sender: object, using: str = "default", **kwargs: Any) -> None:
    from hyperguild.actions import do_ensure_schedules  # not at the top: this module loads before the models

    if using == "default":
        do_ensure_schedules()
