from django.contrib import admin
from django.urls import include, path

from hyperguild import ui, views
from hyperguild.mcp.views import McpView

mcp_view = McpView.as_view()

# The apps' pages are included by name (a string, not an import): the core imports no app (docs/architecture.md).
urlpatterns = [
    path("", include("observability.urls")),  # /health, /health/live, /metrics
    path("favicon.ico", views.favicon, name="favicon"),
    # /mcp/x and /mcp/x/ both answer: MCP clients POST and must not be redirected.
    path("mcp/<slug:endpoint>", mcp_view, name="mcp"),
    path("mcp/<slug:endpoint>/", mcp_view, name="mcp-slash"),
    path("", include("people.urls")),  # OAuth, sign-in, tokens
    path("", include("ledger.urls")),  # /costs/
    path("admin/", admin.site.urls),
    path("", include("brain.urls")),
    path("", include("supervisor.urls")),
    path("", include("sessions.urls")),
    path("", ui.home, name="hyperguild-home"),
]

handler400 = "hyperguild.middleware.bad_request"
handler500 = "hyperguild.middleware.server_error"
handler404 = "hyperguild.middleware.not_found"
