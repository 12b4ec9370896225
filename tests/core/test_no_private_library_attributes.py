"""Issue 29: nothing in app code touches a private attribute of a Django object.

A private attribute (`OutputWrapper._out`, `BaseHandler._view_middleware`…) is not part of
Django's API: it can change or vanish in any release without a deprecation. Management commands
write through `self.stdout`/`self.stderr` (`hyperguild.lib.progress` gives tqdm a file that does),
and requests go through Django's own handler.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_PACKAGES = ("hyperguild", "brain", "supervisor", "sessions")

PRIVATE_DJANGO = re.compile(
    r"\.(?:stdout|stderr)\._\w+"  # a command's OutputWrapper: `_out`, `_style_func`
    r"|\._(?:view|exception|template_response)_middleware\b"  # BaseHandler's middleware lists
    r"|\._middleware_chain\b|\._get_response(?:_async)?\b"  # BaseHandler's request path
    r"|\brequest\._(?:cached_user|messages|stream|read_started|post|files|encoding)\b"  # HttpRequest internals
    r"|\._request\b"  # DRF's Request holding Django's: DRF's Request answers the same attributes itself
)


def app_sources() -> list[Path]:
    return [
        path
        for package in APP_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def offenders_in(lines: list[str], name: str) -> list[str]:
    return [f"{name}:{number}: {line.strip()}" for number, line in enumerate(lines, start=1) if PRIVATE_DJANGO.search(line)]


def test_app_code_touches_no_private_django_attribute():
    offenders = [
        offender
        for path in app_sources()
        for offender in offenders_in(path.read_text(encoding="utf-8").splitlines(), str(path.relative_to(ROOT)))
    ]
    assert not offenders, "use Django's public API instead:\n" + "\n".join(offenders)


def test_the_grep_sees_app_code_and_not_the_tests_or_the_venv():
    names = {str(path.relative_to(ROOT)) for path in app_sources()}
    assert {"brain/management/commands/brain_export.py", "sessions/management/commands/migrate_from_go.py"} <= names
    assert not any(name.startswith(("tests/", ".venv/")) for name in names)


def test_the_pattern_catches_each_kind_of_private_access():
    caught = [
        "tqdm(items, file=self.stderr._out)",
        "self.stdout._out.write(text)",
        "handler._view_middleware.append(view)",
        "self._exception_middleware = []",
        "request._cached_user = user",
        "authenticate_bearer(request._request, scope)",
    ]
    fine = [
        "self.stderr.write(text, ending='')", "Note._meta.get_field('slug')", "self._lock", "note.links_out",
        "self._post(body)", "self._files(start, end)",
    ]
    assert len(offenders_in(caught, "x.py")) == len(caught)
    assert offenders_in(fine, "x.py") == []
