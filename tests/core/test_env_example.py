""".env.example lists every environment variable hyperguild reads, and nothing else, each with its default and its
meaning, grouped by what it configures, at most 100 of them (issue 49: settings no user changes are constants).

The reads are found by AST over the apps: the typed readers of `hyperguild.lib.env` (`env_str("NAME", …)` …),
`os.environ.get/pop/[…]` and `os.getenv` with a literal name or a module constant holding one. A variable read but
not listed is a setting nobody can find; a line listed but never read is a setting that does nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bench import code_shape
from hyperguild.lib.env import GO_ALIASES

ROOT = Path(__file__).resolve().parents[2]
ENV_EXAMPLE = ROOT / ".env.example"
APPS = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")
READERS = {"env_str", "env_int", "env_float", "env_bool", "env_list", "env_choice", "env_optional_float", "_env"}
# Read but not settings of ours, so not listed: hand-offs from `serve` to the processes it starts, and variables of
# the software we run under (Django, django-q2, the OpenTelemetry SDK, the XDG runtime folder).
NOT_OURS = {
    "HYPERGUILD_WEB_PROCESS",  # set by hyperguild.serving while a web process loads Django
    "HYPERGUILD_EMBEDDED_DB_URL",  # serve's embedded database, for its children
    "HYPERGUILD_SERVE_GATE",  # serve's start gate, for its web processes
    "HYPERGUILD_SERVE_PID",
    "DJANGO_SETTINGS_MODULE",
    "Q_CLUSTER_NAME",
    "OTEL_TRACES_SAMPLER",
    "OTEL_PROPAGATORS",
    "XDG_RUNTIME_DIR",
}
LISTED = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)=(?P<default>\S*)\s+# \S")
HEADING = re.compile(r"^# --- .+ ---$")


def _module_strings(tree: ast.Module) -> dict[str, str]:
    strings = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    strings[target.id] = node.value.value
    return strings


def _name(node: ast.expr, strings: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return strings.get(node.id)
    return None


def _is_os_environ(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)


def variables_read(root: Path = ROOT) -> set[str]:
    found: set[str] = set()
    for app in APPS:
        for path in (root / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            strings = _module_strings(tree)
            for node in ast.walk(tree):
                name = None
                if isinstance(node, ast.Call) and node.args:
                    func = node.func
                    if isinstance(func, ast.Name) and func.id in READERS:
                        name = _name(node.args[0], strings)
                    elif isinstance(func, ast.Attribute) and func.attr in {"get", "pop"} and _is_os_environ(func.value):
                        name = _name(node.args[0], strings)
                    elif isinstance(func, ast.Attribute) and func.attr == "getenv":
                        name = _name(node.args[0], strings)
                elif isinstance(node, ast.Subscript) and _is_os_environ(node.value) and isinstance(node.ctx, ast.Load):
                    name = _name(node.slice, strings)
                if name:
                    found.add(name)
    return found


def listed_lines() -> list[str]:
    return [line for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines() if re.match(r"^[A-Z]", line)]


def listed() -> set[str]:
    return {line.split("=", 1)[0] for line in listed_lines()}


def test_the_scan_finds_the_readers_it_names():
    read = variables_read()
    # one of each kind: a typed reader, boot's own helper, os.environ.get, os.environ.pop of a module constant
    assert {"HYPERGUILD_PORT", "HYPERGUILD_DATA_DIR", "PROMETHEUS_MULTIPROC_DIR", "HYPERGUILD_SERVE_GATE"} <= read


def test_every_variable_read_is_listed():
    go_names = {alias for aliases in GO_ALIASES.values() for alias in aliases}
    unlisted = variables_read() - listed() - NOT_OURS - go_names
    assert not unlisted, f"read from the environment but not in .env.example: {sorted(unlisted)}"


def test_every_listed_variable_is_read():
    unread = listed() - variables_read()
    assert not unread, f"in .env.example but read nowhere (a constant now?): {sorted(unread)}"


def test_the_go_names_read_as_aliases_are_named_beside_ours():
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    missing = [alias for aliases in GO_ALIASES.values() for alias in aliases if alias not in text]
    assert not missing


def test_each_line_has_a_default_and_a_meaning_under_a_heading():
    heading = None
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        if HEADING.match(line):
            heading = line
        elif re.match(r"^[A-Z]", line):
            assert LISTED.match(line), f"NAME=default  # meaning, got: {line}"
            assert heading, f"{line.split('=')[0]} is above the first group heading"


def test_at_most_a_hundred_variables():
    count = len(code_shape.env_variables(ENV_EXAMPLE))
    assert count == len(listed_lines()) and count <= 100, count


def _literal(node: ast.expr) -> object:
    """The value of a default written as a literal (numbers may be products: 1024 * 1024); a name or call: None."""
    if any(isinstance(part, (ast.Name, ast.Call, ast.Attribute)) for part in ast.walk(node)):
        return None
    return eval(compile(ast.Expression(node), "<default>", "eval"), {"__builtins__": {}})  # noqa: S307 (literals only)


def settings_defaults() -> dict[str, tuple[str, object]]:
    """NAME -> (reader, default) for every typed read in hyperguild/settings.py whose default is a literal."""
    tree = ast.parse((ROOT / "hyperguild" / "settings.py").read_text(encoding="utf-8"))
    defaults: dict[str, tuple[str, object]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in READERS):
            continue
        name = _name(node.args[0], {})
        if name is None:
            continue
        if len(node.args) == 1:
            defaults[name] = (node.func.id, None if node.func.id == "env_optional_float" else "")
        elif (value := _literal(node.args[1])) is not None:
            defaults[name] = (node.func.id, value)
    return defaults


def _agrees(reader: str, listed_default: str, value: object) -> bool:
    if value is None:
        return listed_default == ""
    if reader == "env_bool":
        return listed_default.lower() in ({"1", "true", "yes", "on"} if value else {"0", "false", "no", "off", ""})
    if reader in {"env_int", "env_float"}:
        return float(listed_default) == value
    if reader == "env_list":
        assert isinstance(value, list)
        return listed_default in {",".join(value), ":".join(value)}
    return listed_default == value


def test_each_listed_default_is_the_default_settings_use():
    listed_defaults = {match["name"]: match["default"] for line in listed_lines() if (match := LISTED.match(line))}
    defaults = settings_defaults()
    assert len(defaults) > 60  # most defaults are literals; derived ones (a folder under the data dir) are skipped
    wrong = [
        f"{name}: .env.example says {listed_defaults[name]!r}, settings use {value!r}"
        for name, (reader, value) in defaults.items()
        if name in listed_defaults and not _agrees(reader, listed_defaults[name], value)
    ]
    assert not wrong, "\n".join(wrong)
