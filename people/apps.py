from django.apps import AppConfig


class PeopleConfig(AppConfig):
    """Accounts, personal tokens, OAuth 2.1, rights and roles: who calls, and what they may do."""

    name = "people"
    verbose_name = "people"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module before any app's models are loaded.
        from django.db.models.signals import pre_save
        from oauth2_provider.models import Application

        from hyperguild.contributions import register_schedules
        from hyperguild.providers import provide_credentials
        from people.auth import authenticate_bearer, resource_metadata_url
        from people.oauth import drop_public_client_secret
        from people.permissions import permission_refusal
        from people.tasks import schedules

        # The core's doors (MCP, REST) check credentials and rights through these (hyperguild.providers).
        provide_credentials(
            authenticate_bearer=authenticate_bearer,
            resource_metadata_url=resource_metadata_url,
            permission_refusal=permission_refusal,
        )
        register_schedules(schedules)
        # A public OAuth client (Claude Code's kind) gets no secret to hash (people.oauth).
        pre_save.connect(drop_public_client_secret, sender=Application, dispatch_uid="hyperguild-public-client-secret")
