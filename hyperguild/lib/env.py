"""Typed readers for environment variables.

Settings read only the environment. Every reader names the variable in its
error, so a bad value stops start-up with a message that says what to fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


# Names the Go hyperguild used, read as aliases of ours: ours wins when both
# are set. Several Go services had their own port and URL; here one service
# serves every endpoint, so two Go names can map to one of ours (the first
# one set is used).
GO_ALIASES: dict[str, tuple[str, ...]] = {
    "DATABASE_URL": ("BRAIN_PG_DSN",),
    "BRAIN_DIR": ("INGEST_BRAIN_DIR",),
    "BRAIN_SESSIONS_DIR": ("SUPERVISOR_SESSIONS_DIR",),
    "HYPERGUILD_PORT": ("INGEST_PORT", "ROUTING_PORT"),
    "HYPERGUILD_PUBLIC_URL": ("INGEST_BASE_URL", "BRAIN_URL"),
}

# One line per Go name seen while settings were read, keyed by the Go name.
_alias_notices: dict[str, str] = {}


def _set(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is not None and value.strip() != "":
        aliases = GO_ALIASES.get(name, ())
        for alias in aliases:
            if _set(alias) is not None:
                _alias_notices[alias] = f"{alias} (Go hyperguild name) is ignored: {name} is set and wins."
        return value.strip()
    chosen = None
    for alias in GO_ALIASES.get(name, ()):
        alias_value = _set(alias)
        if alias_value is None:
            continue
        if chosen is None:
            chosen = alias_value
            shown = "<the same DSN>" if name == "DATABASE_URL" else alias_value  # never print a password
            _alias_notices[alias] = f"{alias} (Go hyperguild name) is read as {name}: set {name}={shown} instead."
        else:
            _alias_notices[alias] = (
                f"{alias} (Go hyperguild name) is ignored: {name} already comes from another Go name "
                "(one service serves every endpoint here)."
            )
    if chosen is not None:
        return chosen
    return None if value is None else value.strip()


def alias_notices() -> list[str]:
    """One line per Go variable name seen while the settings were read."""
    return [_alias_notices[name] for name in sorted(_alias_notices)]


def go_hybrid_rule(environ: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """The Go rule for hybrid search: (embedder to use, problem).

    In the Go hyperguild `BRAIN_PG_DSN` and `BRAIN_EMBED_URL` together turn on
    hybrid search (an Ollama embedder) and one without the other stops
    start-up. Applies only while `BRAIN_EMBEDDER` is not set: an explicit
    choice of ours always wins. `DATABASE_URL` counts as the DSN.
    """
    if _set("BRAIN_EMBEDDER", environ) is not None:
        return None, None
    dsn = _set("DATABASE_URL", environ) or _set("BRAIN_PG_DSN", environ)
    embed_url = _set("BRAIN_EMBED_URL", environ)
    if dsn and embed_url:
        return "ollama", None
    if _set("BRAIN_PG_DSN", environ) and not embed_url:
        return None, (
            "BRAIN_PG_DSN is set without BRAIN_EMBED_URL: in the Go hyperguild that is a start-up error, "
            "because hybrid search needs both. Set BRAIN_EMBED_URL to the Ollama base URL for hybrid search, "
            "or set BRAIN_EMBEDDER (local, off, ollama or openai) to choose explicitly."
        )
    if embed_url and not dsn:
        return None, (
            f"BRAIN_EMBED_URL={embed_url} is set without BRAIN_PG_DSN (or DATABASE_URL) and without BRAIN_EMBEDDER: "
            "in the Go hyperguild that is a start-up error, and here the URL would be ignored (the local "
            "embedder would run). Set BRAIN_PG_DSN (or DATABASE_URL) too for hybrid search on that Ollama, "
            "or set BRAIN_EMBEDDER=ollama (or openai) to use the URL, or unset BRAIN_EMBED_URL."
        )
    return None, None


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        result = default
    else:
        try:
            result = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not a whole number.") from None
    if minimum is not None and result < minimum:
        raise ImproperlyConfigured(f"{name}={result} is below the minimum of {minimum}.")
    if maximum is not None and result > maximum:
        raise ImproperlyConfigured(f"{name}={result} is above the maximum of {maximum}.")
    return result


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    value = _raw(name)
    if value is None or value == "":
        result = default
    else:
        try:
            result = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if minimum is not None and result < minimum:
        raise ImproperlyConfigured(f"{name}={result} is below the minimum of {minimum}.")
    if maximum is not None and result > maximum:
        raise ImproperlyConfigured(f"{name}={result} is above the maximum of {maximum}.")
    return result


def env_optional_float(name: str, *, minimum: float | None = None, maximum: float | None = None) -> float | None:
    """A number, or None when the variable is unset or empty (the caller's own default applies)."""
    value = _raw(name)
    if value is None or value == "":
        return None
    return env_float(name, 0.0, minimum=minimum, maximum=maximum)


def env_list(name: str, default: list[str] | None = None, *, separator: str = ",") -> list[str]:
    value = _raw(name)
    if value is None or value == "":
        return list(default or [])
    return [item.strip() for item in value.split(separator) if item.strip()]


def env_choice(name: str, default: str, choices: set[str] | list[str]) -> str:
    value = env_str(name, default).lower()
    if value not in choices:
        allowed = ", ".join(sorted(choices))
        raise ImproperlyConfigured(f"{name}={value!r} is not one of: {allowed}.")
    return value
