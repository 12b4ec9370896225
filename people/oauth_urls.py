"""django-oauth-toolkit's views where MCP clients look for them (namespace `oauth2_provider`).

The metadata documents sit at the origin's root (RFC 8414, RFC 9728); the endpoints under /oauth/.
"""

from django.urls import path, re_path
from oauth2_provider import views

from people.oauth import (
    AuthorizationView,
    EndpointResourceMetadataView,
    ManageClientView,
    RegisterClientView,
    ServerMetadataView,
)

app_name = "oauth2_provider"

urlpatterns = [
    path(".well-known/oauth-authorization-server", ServerMetadataView.as_view(), name="oauth-server-metadata"),
    # MCP clients also try the issuer-path form below an endpoint's path; the issuer is the origin there too.
    re_path(r"^\.well-known/oauth-authorization-server/mcp/[\w-]+/?$", ServerMetadataView.as_view()),
    path(
        ".well-known/oauth-protected-resource", EndpointResourceMetadataView.as_view(), name="oauth-resource-metadata"
    ),
    path(
        ".well-known/oauth-protected-resource/<path:resource_path>",
        EndpointResourceMetadataView.as_view(),
        name="oauth-resource-metadata-path",
    ),
    path("oauth/authorize/", AuthorizationView.as_view(), name="authorize"),
    path("oauth/token/", views.TokenView.as_view(), name="token"),
    path("oauth/revoke_token/", views.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register/", RegisterClientView.as_view(), name="dcr-register"),
    path("oauth/register/<str:client_id>/", ManageClientView.as_view(), name="dcr-register-management"),
]
