"""Typed readers for environment variables.

Settings read only the environment. Every reader names the variable in its
error, so a bad value stops start-up with a message that says what to fix.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return value.strip()


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
