from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from people import views

urlpatterns = [
    # OAuth 2.1 for the MCP endpoints (people.oauth): metadata at the root, the flow under /oauth/.
    path("", include("people.oauth_urls")),
    re_path(r"^\.well-known/oauth-(?P<rest>.*)$", views.well_known_not_found, name="well-known-oauth"),
    re_path(r"^mcp/[\w-]+/?\.well-known/oauth-(?P<rest>.*)$", views.well_known_not_found),
    path("login/", views.LoginView.as_view(), name="hyperguild-login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="hyperguild-login"), name="hyperguild-logout"),
    path("tokens/", views.tokens, name="hyperguild-tokens"),
    path("tokens/<int:pk>/revoke/", views.revoke_token, name="hyperguild-token-revoke"),
]
