"""System checks of the brain's settings (registered from BrainConfig.ready())."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.checks import Warning as CheckWarning

from hyperguild.lib.embedders import embedder_problems


@register("hyperguild")
def check_brain_embedder(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """A half-configured embedder stops start-up, naming the variable to set."""
    return [
        Error(message, hint=f"Set {variable}.", id="hyperguild.E020")
        for variable, message in embedder_problems(
            settings.BRAIN_EMBEDDER, settings.BRAIN_EMBED_URL, settings.BRAIN_EMBED_MODEL
        )
    ]


@register("hyperguild")
def check_answer_model(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """BRAIN_ANSWER_MODEL without a gateway would silently give extractive answers only."""
    if settings.BRAIN_ANSWER_MODEL and not settings.LITELLM_BASE_URL:
        return [
            CheckWarning(
                f"BRAIN_ANSWER_MODEL={settings.BRAIN_ANSWER_MODEL} is set but LITELLM_BASE_URL is empty: "
                "brain_answer will return extracted passages, not synthesised answers.",
                hint="Set LITELLM_BASE_URL to the OpenAI-compatible gateway, or unset BRAIN_ANSWER_MODEL.",
                id="hyperguild.W040",
            )
        ]
    return []


@register("hyperguild")
def check_brain_dir(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """The mirror writes into BRAIN_DIR: it must be a writable folder (or creatable)."""
    if not settings.BRAIN_DIR:
        return []
    path = Path(settings.BRAIN_DIR)
    if path.exists() and not path.is_dir():
        return [
            Error(
                f"BRAIN_DIR={path} exists and is not a folder.",
                hint="Point BRAIN_DIR at a brain folder.",
                id="hyperguild.E050",
            )
        ]
    existing = path if path.exists() else path.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        return [
            Error(
                f"BRAIN_DIR={path} cannot be written (or created): the mirror would fail every round.",
                hint="Create the folder and give the service user write access, or unset BRAIN_DIR.",
                id="hyperguild.E051",
            )
        ]
    return []


@register("hyperguild")
def check_go_hybrid_rule(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    """The Go hyperguild's rule: BRAIN_PG_DSN and BRAIN_EMBED_URL go together, unless BRAIN_EMBEDDER decides.

    The rule itself is applied while the settings are read (`hyperguild.lib.env.go_hybrid_rule`).
    """
    problem = settings.GO_HYBRID_PROBLEM
    if not problem:
        return []
    return [Error(problem, hint="See docs/migrating-from-go.md.", id="hyperguild.E060")]
