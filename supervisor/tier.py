"""Connectivity tier: 1 full-online, 2 lan-only, 3 airplane.

Probes `SUPERVISOR_TIER_ANTHROPIC_URL` and the LLM gateway (`SUPERVISOR_TIER_LITELLM_URL`,
which is `LITELLM_BASE_URL`); any HTTP answer (even 401/404) means the service is reachable. The result is
cached for `CACHE_SECONDS`. Probes go through hyperguild.lib.http:
a URL that failed HYPERGUILD_BREAKER_FAILURES probes in a row counts as
unreachable without a call until its breaker's cool-down ends.
"""

from __future__ import annotations

import time
from typing import TypedDict

from django.conf import settings
from django.core.cache import cache

from hyperguild.lib.http import ServiceClient, ServiceError

CACHE_KEY = "supervisor:tier"
# How long a probe result is reused (fixed, issue 49): connectivity changes rarely, and `tier refresh` probes now.
CACHE_SECONDS = 60
LABELS = {1: "full-online", 2: "lan-only", 3: "airplane"}


def reachable(url: str) -> bool:
    if not url:
        return False
    # One attempt: a probe answers "reachable now?", and a down service must not slow the answer.
    client = ServiceClient("tier probe", url, timeout=settings.SUPERVISOR_TIER_PROBE_TIMEOUT, retries=0)
    try:
        client.get(any_status=True)
    except ServiceError:
        return False
    return True


class TierProbe(TypedDict):
    """What the probe found (cached for SUPERVISOR_TIER_CACHE_SECONDS)."""

    tier: int  # 1 full-online, 2 lan-only, 3 airplane
    label: str
    anthropic_reachable: bool
    litellm_reachable: bool
    checked_at: float  # time.time() of the probe


def probe() -> TierProbe:
    anthropic = reachable(settings.SUPERVISOR_TIER_ANTHROPIC_URL)
    litellm = reachable(settings.SUPERVISOR_TIER_LITELLM_URL)
    tier = 1 if anthropic else 2 if litellm else 3
    return {
        "tier": tier,
        "label": LABELS[tier],
        "anthropic_reachable": anthropic,
        "litellm_reachable": litellm,
        "checked_at": time.time(),
    }


def current_tier(refresh: bool = False) -> tuple[TierProbe, bool]:
    """(probe result, whether it came from the cache)."""
    if not refresh:
        cached = cache.get(CACHE_KEY)
        if cached is not None:
            return cached, True
    result = probe()
    cache.set(CACHE_KEY, result, CACHE_SECONDS)
    return result, False
