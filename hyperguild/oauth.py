"""OAuth 2.1 for the MCP endpoints, on django-oauth-toolkit (the MCP authorization specification).

What a client such as Claude Code finds, in order:

1. a 401 from `/mcp/<endpoint>` whose `WWW-Authenticate` names `resource_metadata`;
2. that protected-resource metadata (RFC 9728), `/.well-known/oauth-protected-resource/mcp/<endpoint>`:
   the resource (the endpoint's URL), this server as its authorization server, the endpoint's scopes;
3. the authorization-server metadata (RFC 8414), `/.well-known/oauth-authorization-server`;
4. dynamic client registration (RFC 7591) at `/oauth/register/` (or, when turned on, a client ID
   metadata document URL as its client_id);
5. the authorization code flow with PKCE (S256 only): `/oauth/authorize/` signs the person in on
   hyperguild's login page and shows the consent page; `/oauth/token/` issues a token bound to the
   `resource` asked for (RFC 8707) with the scopes consented to.

Resource servers check the token in `hyperguild.auth.authenticate_bearer`, like every other token.
"""

from __future__ import annotations

from django.http import JsonResponse
from oauth2_provider.scopes import BaseScopes
from oauth2_provider.views import OAuthProtectedResourceMetadataView

from hyperguild.auth import known_scopes, public_url
from hyperguild.mcp.registry import find_endpoint


class EndpointScopes(BaseScopes):
    """The scopes the apps declare on their endpoints (`Endpoint(scopes=…)`), described by what they open."""

    def get_all_scopes(self) -> dict[str, str]:
        return known_scopes()

    def get_available_scopes(self, application=None, request=None, *args, **kwargs) -> list[str]:
        return list(known_scopes())

    def get_default_scopes(self, application=None, request=None, *args, **kwargs) -> list[str]:
        # A client that asks for nothing gets the least: the first scope declared (reading, on the first endpoint).
        return list(known_scopes())[:1]


class EndpointResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata per MCP endpoint: `/.well-known/oauth-protected-resource/mcp/<name>`.

    The root document (no path) describes the whole server with every scope; a path that is not
    an endpoint is a 404, so a client never gets a resource that does not exist.
    """

    def dispatch(self, request, *args, **kwargs):
        path = kwargs.get("resource_path", "").strip("/")
        self.endpoint = None
        if path:
            name = path.removeprefix("mcp/") if path.startswith("mcp/") else ""
            self.endpoint = find_endpoint(name) if name and "/" not in name else None
            if self.endpoint is None:
                return JsonResponse({"error": "not_found", "error_description": f"no protected resource at /{path}"},
                                    status=404)
        return super().dispatch(request, *args, **kwargs)

    def get_resource(self, request) -> str:
        return public_url(request, f"/mcp/{self.endpoint.name}" if self.endpoint is not None else "/")

    def get_scopes_supported(self) -> list[str]:
        return list(self.endpoint.scopes) if self.endpoint is not None else list(known_scopes())

    def get_resource_name(self) -> str:
        return self.endpoint.title if self.endpoint is not None else "hyperguild"
