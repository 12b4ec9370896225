"""Every domain error lives in its app's errors.py, under the app's base, and MCP translates every one of them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from brain.errors import BrainError
from hyperguild.errors import DomainError
from hyperguild.mcp.registry import all_endpoints
from sessions.errors import SessionsError
from supervisor.errors import SupervisorError

APP_BASES = {"brain": BrainError, "supervisor": SupervisorError, "sessions": SessionsError}


def app_modules(app: str) -> list:
    package = importlib.import_module(app)
    names = [app] + [info.name for info in pkgutil.walk_packages(package.__path__, prefix=f"{app}.")]
    return [importlib.import_module(name) for name in names if ".migrations" not in name]


def domain_errors_defined_in(app: str) -> dict[str, type]:
    found = {}
    for module in app_modules(app):
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, DomainError) and obj.__module__ == module.__name__:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


@pytest.mark.parametrize("app", sorted(APP_BASES))
def test_every_domain_error_of_an_app_is_defined_in_its_errors_module(app):
    misplaced = sorted(name for name in domain_errors_defined_in(app) if not name.startswith(f"{app}.errors."))
    assert not misplaced, f"move these to {app}/errors.py: {misplaced}"


@pytest.mark.parametrize("app", sorted(APP_BASES))
def test_every_error_in_an_apps_errors_module_is_under_the_apps_base(app):
    errors = importlib.import_module(f"{app}.errors")
    classes = [
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if obj.__module__ == errors.__name__ and issubclass(obj, Exception)
    ]
    assert classes, f"{app}/errors.py defines no error"
    strays = [cls.__name__ for cls in classes if not issubclass(cls, APP_BASES[app])]
    assert not strays, f"not under {APP_BASES[app].__name__}: {strays}"


def test_the_errors_the_issue_named_are_where_they_belong():
    from brain.actions import BrainInputError, NoteConflict
    from brain.context import ContextInputError
    from brain.search import SearchInputError
    from sessions.actions import InvalidExampleEdit

    assert InvalidExampleEdit.__module__ == "sessions.errors" and issubclass(InvalidExampleEdit, SessionsError)
    assert issubclass(InvalidExampleEdit, ValueError)  # callers that catch ValueError keep working
    assert SearchInputError.__module__ == ContextInputError.__module__ == "brain.errors"
    assert BrainInputError.__module__ == NoteConflict.__module__ == "brain.errors"
    assert issubclass(NoteConflict, BrainInputError) and issubclass(BrainInputError, BrainError)


def test_every_endpoint_translates_the_errors_of_every_app_whose_tools_it_serves():
    for endpoint in all_endpoints():
        apps = {tool.handler.__module__.split(".")[0] for tool in endpoint.tools.values()}
        for app in apps & set(APP_BASES):
            assert any(issubclass(APP_BASES[app], declared) for declared in endpoint.domain_errors), (
                f"/mcp/{endpoint.name} serves {app} tools but does not translate {APP_BASES[app].__name__}"
            )
