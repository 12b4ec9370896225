"""System checks of the sessions app's settings (registered from AgentSessionsConfig.ready())."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.checks import Warning as CheckWarning
from django.core.exceptions import ImproperlyConfigured

from sessions.redaction import load_pattern_file


@register("hyperguild")
def check_trainer_secret_patterns(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """An unreadable TRAINER_SECRET_PATTERNS_FILE or a bad regex in it would let secrets into training data."""
    path = settings.TRAINER_SECRET_PATTERNS_FILE
    if not path:
        return []
    try:
        load_pattern_file(path)
    except OSError as exc:
        return [Error(f"TRAINER_SECRET_PATTERNS_FILE={path} cannot be read: {exc}", id="hyperguild.E030")]
    except ImproperlyConfigured as exc:
        return [Error(str(exc), hint="One Python regex a line; # starts a comment.", id="hyperguild.E031")]
    return []


@register("hyperguild")
def check_sessions_dir_without_brain_dir(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """Session logs reach disk through the BRAIN_DIR mirror; a sessions folder alone does nothing."""
    if settings.BRAIN_SESSIONS_DIR and not settings.BRAIN_DIR:
        return [
            CheckWarning(
                f"BRAIN_SESSIONS_DIR={settings.BRAIN_SESSIONS_DIR} (SUPERVISOR_SESSIONS_DIR in the Go hyperguild) "
                "is set but BRAIN_DIR is empty: session logs are written to disk by the BRAIN_DIR mirror only, "
                "so nothing will be written there.",
                hint="Set BRAIN_DIR (INGEST_BRAIN_DIR in the Go hyperguild) to the brain folder.",
                id="hyperguild.W061",
            )
        ]
    return []
