"""Issue 40: the apps' modules import each other without a circle, and an import sits at module level
unless a comment says why.

`lint-imports` checks the layers between the apps (pyproject.toml); this checks inside each app. grimp
(import-linter's graph library) reads every import statement, those inside functions too, so a circle
hidden behind an import in a function body is still a circle here. Imports under `if TYPE_CHECKING:`
are left out: they never run, and annotating a function with a type from a module above is not a
dependency the program has.

An import inside a function hides a dependency from the reader (and used to hide these circles), so
each one names its reason in a comment on its line or on the line above (a block of imports under one
comment shares it): an optional heavy library loaded only when used, Django's app registry not being
ready when the module is imported, a module that must not load a layer above it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
APP_PACKAGES = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")


# Comment text that is a directive to a tool, not a reason.
TOOL_DIRECTIVE = re.compile(
    r"\b(?:noqa(?::\s*[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)?|type:\s*ignore(?:\[[\w,-]+\])?|fmt:\s*\w+)"
)


def import_graph(*packages: str) -> grimp.ImportGraph:
    return grimp.build_graph(
        *packages, include_external_packages=False, exclude_type_checking_imports=True, cache_dir=None
    )


def import_cycles(graph: grimp.ImportGraph) -> list[str]:
    """Every circle of imports in `graph`, once each, as `a -> b -> … -> a` (shortest found, sorted)."""
    cycles: dict[frozenset[str], str] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            chain = graph.find_shortest_chain(importer=imported, imported=importer)
            if chain is None:
                continue
            cycle = (importer, *chain)
            cycles.setdefault(frozenset(cycle), " -> ".join(cycle))
    return sorted(cycles.values())


def comment_reasons(source: str) -> dict[int, str]:
    """Line number → the comment on it, without tool directives (`noqa`, `type: ignore`, `fmt:`)."""
    reasons = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = TOOL_DIRECTIVE.sub("", token.string.lstrip("#")).strip(" ,:;-—()")
            if text:
                reasons[token.start[0]] = text
    return reasons


def unexplained_function_imports(source: str, name: str) -> list[str]:
    """Imports inside a function body with no reason in a comment on their line, on the line above, or
    above the block of imports they are part of."""
    tree = ast.parse(source)
    reasons = comment_reasons(source)
    lines = source.splitlines()
    inner = sorted(
        {
            node.lineno
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            for node in ast.walk(function)
            if isinstance(node, ast.Import | ast.ImportFrom)
        }
    )
    all_imports = {node.lineno: node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)}
    explained: set[int] = set()
    for line in inner:
        node = all_imports[line]
        above = line - 1
        stripped_above = lines[above - 1].strip() if above >= 1 else ""
        previous = above  # the nearest line above that is not blank (a block's import groups are split by one)
        while previous >= 1 and not lines[previous - 1].strip():
            previous -= 1
        if any(number in reasons for number in range(line, (node.end_lineno or line) + 1)):
            explained.add(line)
        elif stripped_above.startswith("#") and above in reasons:
            explained.add(line)
        elif any(
            previous in range(other.lineno, (other.end_lineno or other.lineno) + 1) and other.lineno in explained
            for other in all_imports.values()
        ):
            explained.add(line)  # the next import of a block whose first import says why
    return [f"{name}:{line}: {lines[line - 1].strip()}" for line in inner if line not in explained]


def app_sources() -> list[Path]:
    return [
        path
        for package in APP_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_the_apps_import_each_other_without_a_cycle() -> None:
    cycles = import_cycles(import_graph(*APP_PACKAGES))
    assert not cycles, "import cycles (move the code to where it belongs; a late import does not count):\n" + "\n".join(
        cycles
    )


def test_every_import_inside_a_function_says_why() -> None:
    offenders = [
        offender
        for path in app_sources()
        for offender in unexplained_function_imports(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not offenders, "move these imports to the top of the module, or say why they must stay:\n" + "\n".join(
        offenders
    )


def write_package(root: Path, name: str, modules: dict[str, str]) -> None:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, source in modules.items():
        (package / f"{module}.py").write_text(source)


def test_the_check_finds_a_cycle_through_an_import_inside_a_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_package(
        tmp_path,
        "circle_pkg",
        {
            "low": "def f():\n    from circle_pkg import high  # late\n    return high\n",
            "high": "from circle_pkg import low\n",
            "free": "from circle_pkg import low\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles(import_graph("circle_pkg")) == ["circle_pkg.high -> circle_pkg.low -> circle_pkg.high"]


def test_the_check_ignores_an_import_only_for_type_checking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_package(
        tmp_path,
        "typed_pkg",
        {
            "low": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typed_pkg.high import High\n",
            "high": "from typed_pkg import low\nclass High: ...\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles(import_graph("typed_pkg")) == []


def test_an_import_inside_a_function_needs_a_reason_not_a_tool_directive() -> None:
    source = (
        "import os\n"
        "def quiet():\n"
        "    import json\n"
        "    import csv  # noqa: F401\n"
        "    import re  # noqa: F401  (registers the checks)\n"
        "    # numpy is heavy: loaded only when asked\n"
        "    import math\n"
        "    import sys\n"
        "    from os import (\n"
        "        path,  # a reason inside the parentheses\n"
        "    )\n"
        "\n"
        "    from os import sep  # the same block, after a blank line\n"
        "    x = 1\n"
        "    import zlib\n"
    )
    assert unexplained_function_imports(source, "m.py") == [
        "m.py:3: import json",
        "m.py:4: import csv  # noqa: F401",
        "m.py:15: import zlib",
    ]


def test_the_scan_sees_app_code_and_not_the_migrations() -> None:
    names = {str(path.relative_to(ROOT)) for path in app_sources()}
    assert {"brain/backlog.py", "supervisor/executor.py", "sessions/tasks.py", "people/auth.py"} <= names
    assert not any("/migrations/" in name for name in names)
