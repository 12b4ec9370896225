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
        from hyperguild.actions import do_mark_model_call, do_record_model_call
        from hyperguild.lib.model_calls import set_recorder
        from hyperguild.permissions import register_right
        from hyperguild.roles import OPERATOR
        from hyperguild.tracing import configure_tracing

        # The core's own right (the apps declare theirs with their endpoints): the service's figures.
        register_right(
            "service:metrics",
            scope="",
            permission="hyperguild.view_metrics",
            roles=(OPERATOR,),
            description="see the service's metrics (/metrics)",
        )

        set_recorder(do_record_model_call, do_mark_model_call)  # the clients record calls through the actions

        configure_tracing()  # only with OTEL_EXPORTER_OTLP_ENDPOINT set; before the handler loads the middleware

        # One line per Go hyperguild variable name, at every start-up, until the
        # environment uses our names.
        log = logging.getLogger("hyperguild.env")
        for notice in settings.HYPERGUILD_ENV_ALIAS_NOTICES:
            log.warning(notice)

        # Every `migrate` (make run, `manage.py setup`, a deployment's release step) installs the
        # periodic schedules, so web servers and `qcluster` started separately still get them.
        post_migrate.connect(install_schedules, sender=self, dispatch_uid="hyperguild-install-schedules")

        # A public OAuth client (Claude Code's kind) gets no secret to hash (hyperguild.oauth).
        from django.db.models.signals import pre_save
        from oauth2_provider.models import Application

        from hyperguild.oauth import drop_public_client_secret

        pre_save.connect(drop_public_client_secret, sender=Application, dispatch_uid="hyperguild-public-client-secret")


def install_schedules(sender: object, using: str = "default", **kwargs: Any) -> None:
    from hyperguild.actions import do_ensure_schedules  # not at the top: this module loads before the models

    if using == "default":
        do_ensure_schedules()
