"""System checks for configurations carried over from the Go hyperguild.

The Go names themselves are read as aliases by `hyperguild.lib.env`; these
checks explain what a half-configured Go setup would otherwise do silently.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register


@register("hyperguild")
def check_go_hybrid_rule(app_configs, **kwargs):
    """BRAIN_PG_DSN and BRAIN_EMBED_URL go together (the Go rule), unless BRAIN_EMBEDDER decides."""
    problem = getattr(settings, "GO_HYBRID_PROBLEM", None)
    if not problem:
        return []
    return [Error(problem, hint="See 'Coming from the Go hyperguild' in README.md.", id="hyperguild.E060")]


@register("hyperguild")
def check_sessions_dir_without_brain_dir(app_configs, **kwargs):
    """Session logs reach disk through the BRAIN_DIR mirror; a sessions folder alone does nothing."""
    if getattr(settings, "BRAIN_SESSIONS_DIR", "") and not settings.BRAIN_DIR:
        return [
            Warning(
                f"BRAIN_SESSIONS_DIR={settings.BRAIN_SESSIONS_DIR} (SUPERVISOR_SESSIONS_DIR in the Go hyperguild) "
                "is set but BRAIN_DIR is empty: session logs are written to disk by the BRAIN_DIR mirror only, "
                "so nothing will be written there.",
                hint="Set BRAIN_DIR (INGEST_BRAIN_DIR in the Go hyperguild) to the brain folder.",
                id="hyperguild.W061",
            )
        ]
    return []
