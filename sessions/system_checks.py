"""System checks of the sessions app's settings (registered from AgentSessionsConfig.ready())."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from sessions.redaction import load_pattern_file


@register("hyperguild")
def check_trainer_secret_patterns(app_configs, **kwargs):
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
