import logging
from typing import Any

from django.apps import AppConfig


class HyperguildConfig(AppConfig):
    name = "hyperguild"
    verbose_name = "hyperguild core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.models.signals import post_migrate

        from hyperguild import checks  # noqa: F401  (registers system checks)
        from hyperguild.lib.db_pool import steady_reconnects
        from hyperguild.permissions import register_right
        from hyperguild.roles import OPERATOR

        # The core's own right (the apps declare theirs with their endpoints): the service's figures.
        register_right("service:metrics", scope="", permission="hyperguild.view_metrics", roles=(OPERATOR,),
                       description="see the service's metrics (/metrics)")

        steady_reconnects()  # before any pool opens: a lost connection is retried every half second

        from hyperguild.tracing import configure_tracing

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
    from hyperguild.actions import do_ensure_schedules

    if using == "default":
        do_ensure_schedules()
