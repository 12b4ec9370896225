from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from hyperguild import metrics, people_views, ui, views
from hyperguild.mcp.views import McpView

mcp_view = McpView.as_view()

urlpatterns = [
    path("health", views.health, name="health"),
    path("health/live", views.live, name="health-live"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("favicon.ico", views.favicon, name="favicon"),
    # /mcp/x and /mcp/x/ both answer: MCP clients POST and must not be redirected.
    path("mcp/<slug:endpoint>", mcp_view, name="mcp"),
    path("mcp/<slug:endpoint>/", mcp_view, name="mcp-slash"),
    # OAuth 2.1 for the MCP endpoints (hyperguild.oauth): metadata at the root, the flow under /oauth/.
    path("", include("hyperguild.oauth_urls")),
    re_path(r"^\.well-known/oauth-(?P<rest>.*)$", views.well_known_not_found, name="well-known-oauth"),
    re_path(r"^mcp/[\w-]+/?\.well-known/oauth-(?P<rest>.*)$", views.well_known_not_found),
    path("login/", people_views.LoginView.as_view(), name="hyperguild-login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="hyperguild-login"), name="hyperguild-logout"),
    path("tokens/", people_views.tokens, name="hyperguild-tokens"),
    path("costs/", ui.costs, name="hyperguild-costs"),
    path("tokens/<int:pk>/revoke/", people_views.revoke_token, name="hyperguild-token-revoke"),
    path("admin/", admin.site.urls),
    path("", include("brain.urls")),
    path("", include("supervisor.urls")),
    path("", include("sessions.urls")),
    path("", ui.home, name="hyperguild-home"),
]

handler400 = "hyperguild.middleware.bad_request"
handler500 = "hyperguild.middleware.server_error"
handler404 = "hyperguild.middleware.not_found"
