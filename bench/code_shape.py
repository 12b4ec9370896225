"""The shape of the code that issue 49 ("Fewer, stronger parts") sets goals for, read from the tree by AST:

    .venv/bin/python bench/code_shape.py [--list]

Prints four lines, each `<what>: <figure> (goal <goal>) <met|not met>`:

- public functions in the apps (hyperguild, people, ledger, observability, brain, supervisor, sessions; migrations and
  tests left out)
  whose return annotation is `dict` or `dict[...]` (also `Dict`, `typing.Dict`, either `| None` or `Optional[...]`),
  methods included, or a
  module-level alias of one (`JSON = dict[str, Any]`, `Row: TypeAlias = ...`, an alias of an alias), where
  it is defined or imported from another module of the apps (`from hyperguild.lib.typed import JSON`,
  `typed.JSON`). An override of a Django or DRF hook whose signature the library fixes is not counted
  (LIBRARY_HOOKS: a Form's `clean`, a Serializer's `validate`, … on a class deriving from that base, followed
  through the apps' own classes and a class made by a function annotated `-> type[Base]`); `--list` names them;
- modules in the apps over 800 lines;
- git wrappers: modules of the apps that start the `git` executable themselves: they build an argument list
  starting with "git" (or a name `GIT`) and call `subprocess.*`, a `run_process` or a wrapper named like
  `run_git`, `_git`, `_run`; the goal is one git module used by every app;
- settings variables in `.env.example` (lines `NAME=...`).

`--list` also prints what each figure counts. No Django, no database: seconds on the whole tree.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")
LONG_MODULE_LINES = 800
SUBPROCESS_CALLS = {"run", "Popen", "check_output", "check_call", "call"}
GIT_WRAPPER_NAME = re.compile(r"^_?(run_git|git|run|run_process)$")
ENV_VARIABLE = re.compile(r"^([A-Z][A-Z0-9_]*)=")
# Methods whose signature a Django or DRF base class fixes, by the bases that fix it: an override returns what
# the library expects (a Form's clean() its cleaned_data dict, a Serializer's validate() the attrs dict).
_FORMS = ("django.forms.Form", "django.forms.ModelForm", "django.forms.BaseForm", "django.forms.forms.Form")
_SERIALIZERS = ("rest_framework.serializers.Serializer", "rest_framework.serializers.ModelSerializer")
LIBRARY_HOOKS = {
    "clean": _FORMS,
    "validate": _SERIALIZERS,
    "to_representation": (*_SERIALIZERS, "rest_framework.serializers.Field"),
    "get_context_data": ("django.views.generic.TemplateView", "django.views.generic.base.ContextMixin"),
}


@dataclass
class Figure:
    name: str
    goal: int
    at_most: bool  # the goal is a ceiling (≤) rather than an exact count
    found: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what it leaves out, and why (printed by --list)

    @property
    def met(self) -> bool:
        return len(self.found) <= self.goal if self.at_most else len(self.found) == self.goal

    def line(self) -> str:
        goal = f"≤ {self.goal}" if self.at_most else str(self.goal)
        return f"{self.name}: {len(self.found)} (goal {goal}) {'met' if self.met else 'not met'}"


def app_modules(root: Path) -> list[Path]:
    modules = []
    for app in APPS:
        for path in sorted((root / app).rglob("*.py")):
            parts = path.relative_to(root).parts
            if "migrations" in parts or "tests" in parts or path.name.startswith("test_"):
                continue
            modules.append(path)
    return modules


@dataclass
class Names:
    """What a module's annotations may name: its aliases of dict (defined or imported) and the app modules it
    imported under a name (`from hyperguild.lib import typed` → typed: hyperguild.lib.typed)."""

    dict_aliases: set[str] = field(default_factory=set)
    modules: dict[str, str] = field(default_factory=dict)
    # For following a class to its bases: every imported name (local name → dotted origin, app or library),
    # and the module's own classes, functions and module-level assignments.
    imported: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    assigned: dict[str, ast.expr] = field(default_factory=dict)


def returns_dict(
    annotation: ast.expr | None, names: Names | None = None, aliases: dict[str, Names] | None = None
) -> bool:
    """Whether `annotation` is dict, dict[...] or an alias of one (`names`: the module's; `aliases`: every
    app module's, by dotted name, for `module.Alias`)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    # `dict[...] | None` and `Optional[dict[...]]` return a dict as much as `dict[...]` does.
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return returns_dict(annotation.left, names, aliases) or returns_dict(annotation.right, names, aliases)
    if isinstance(annotation, ast.Subscript):
        outer = annotation.value
        if (isinstance(outer, ast.Name) and outer.id == "Optional") or (
            isinstance(outer, ast.Attribute) and outer.attr == "Optional"
        ):
            return returns_dict(annotation.slice, names, aliases)
        annotation = outer
    if isinstance(annotation, ast.Name):
        return annotation.id in ("dict", "Dict") or (names is not None and annotation.id in names.dict_aliases)
    if not isinstance(annotation, ast.Attribute):
        return False
    if annotation.attr == "Dict":
        return True
    owner = annotation.value
    if names is None or aliases is None or not isinstance(owner, ast.Name) or owner.id not in names.modules:
        return False
    return annotation.attr in aliases.get(names.modules[owner.id], Names()).dict_aliases


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The dotted module a `from … import` reads, relative imports resolved against `module`."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
    return ".".join([*base, node.module] if node.module else base)


def _alias_value(node: ast.stmt) -> tuple[str, ast.expr] | None:
    """(name, value) of a module-level type alias candidate: `X = …`, `X: TypeAlias = …`, `type X = …`."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        kind = node.annotation
        name = kind.id if isinstance(kind, ast.Name) else kind.attr if isinstance(kind, ast.Attribute) else ""
        if name == "TypeAlias":
            return node.target.id, node.value
    type_alias = getattr(ast, "TypeAlias", None)  # Python 3.12's `type X = …`
    if type_alias is not None and isinstance(node, type_alias):
        return node.name.id, node.value  # type: ignore[attr-defined]
    return None


def dict_aliases(trees: dict[Path, ast.Module], root: Path) -> dict[str, Names]:
    """Each app module's names (by dotted module name): module-level aliases of dict, those imported from
    another app module, and the app modules it imported; resolved until nothing changes (an alias of an
    imported alias)."""
    names = {module_name(path, root): Names() for path in trees}
    for path, tree in trees.items():
        own = names[module_name(path, root)]
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                source = _imported_from(node, module_name(path, root), path.name == "__init__.py")
                own.imported.update({i.asname or i.name: f"{source}.{i.name}" for i in node.names})
            elif isinstance(node, ast.Import):
                own.imported.update({i.asname or i.name: i.name for i in node.names})
            elif isinstance(node, ast.ClassDef):
                own.classes[node.name] = node
            elif isinstance(node, ast.FunctionDef):
                own.functions[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                own.assigned[node.targets[0].id] = node.value
    while True:
        changed = False
        for path, tree in trees.items():
            module = module_name(path, root)
            own = names[module]
            for node in tree.body:
                found: set[str] = set()
                if isinstance(node, ast.ImportFrom):
                    source = _imported_from(node, module, path.name == "__init__.py")
                    for imported in node.names:
                        local = imported.asname or imported.name
                        if f"{source}.{imported.name}" in names:
                            own.modules[local] = f"{source}.{imported.name}"
                        if source in names and imported.name in names[source].dict_aliases:
                            found.add(local)
                elif isinstance(node, ast.Import):
                    for imported in node.names:
                        if imported.asname and imported.name in names:
                            own.modules[imported.asname] = imported.name
                elif (alias := _alias_value(node)) is not None and returns_dict(alias[1], own, names):
                    found.add(alias[0])
                if found - own.dict_aliases:
                    own.dict_aliases |= found
                    changed = True
        if not changed:
            return names


def _qualified(expr: ast.expr, module: str, aliases: dict[str, Names]) -> str | None:
    """The dotted name `expr` (a Name or `owner.Name`) means in `module`: where it was imported from, or
    `module.Name` for the module's own."""
    names = aliases.get(module, Names())
    if isinstance(expr, ast.Subscript):  # `ModelAdmin[Note]`
        expr = expr.value
    if isinstance(expr, ast.Name):
        if expr.id in names.imported:
            return names.imported[expr.id]
        return f"{module}.{expr.id}"
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        owner = names.imported.get(expr.value.id, expr.value.id)
        return f"{owner}.{expr.attr}"
    return None


def _split(qualified: str, aliases: dict[str, Names]) -> tuple[str, str] | None:
    """(app module, name) of a dotted name defined in the apps, else None (a library's)."""
    module, _, name = qualified.rpartition(".")
    return (module, name) if module in aliases else None


def derives_from(
    qualified: str, bases: tuple[str, ...], aliases: dict[str, Names], seen: frozenset[str] = frozenset()
) -> bool:
    """Whether the class `qualified` is one of `bases` or derives from one: through the apps' own classes, a
    name imported from another app module, and `X = make()` where `make` is annotated `-> type[Base]`."""
    if qualified in bases:
        return True
    where = _split(qualified, aliases)
    if where is None or qualified in seen:
        return False
    module, name = where
    names, seen = aliases[module], seen | {qualified}
    if name in names.imported:
        return derives_from(names.imported[name], bases, aliases, seen)
    if name in names.classes:
        parents = [_qualified(base, module, aliases) for base in names.classes[name].bases]
        return any(parent is not None and derives_from(parent, bases, aliases, seen) for parent in parents)
    value = names.assigned.get(name)
    if isinstance(value, ast.Call) and (maker := _qualified(value.func, module, aliases)) is not None:
        made = _split(maker, aliases)
        function = aliases[made[0]].functions.get(made[1]) if made else None
        returns = function.returns if function is not None else None
        if isinstance(returns, ast.Constant) and isinstance(returns.value, str):
            returns = ast.parse(returns.value, mode="eval").body
        if (
            made
            and isinstance(returns, ast.Subscript)
            and isinstance(returns.value, ast.Name)
            and returns.value.id == "type"
        ):
            made_class = _qualified(returns.slice, made[0], aliases)
            return made_class is not None and derives_from(made_class, bases, aliases, seen)
    return False


def dict_returning_public_functions(
    path: Path, tree: ast.Module, root: Path, aliases: dict[str, Names] | None = None, skipped: list[str] | None = None
) -> list[str]:
    """The public functions of `tree` returning dict; `skipped` gets the library hooks' overrides left out."""
    found = []
    aliases = aliases if aliases is not None else dict_aliases({path: tree}, root)
    module = module_name(path, root)
    names = aliases.get(module, Names())

    def visit(body: list[ast.stmt], prefix: str, owner: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.", f"{module}.{node.name}" if not prefix else None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("_") or not returns_dict(node.returns, names, aliases):
                    continue
                where = f"{path.relative_to(root)}:{node.lineno} {prefix}{node.name}"
                hook_of = LIBRARY_HOOKS.get(node.name)
                if owner is not None and hook_of and derives_from(owner, hook_of, aliases):
                    if skipped is not None:
                        skipped.append(f"{where} (overrides a library hook)")
                else:
                    found.append(where)

    visit(tree.body, "", None)
    return found


def _callee_name(call: ast.Call) -> tuple[str | None, str]:
    """(module or object name, attribute or function name) of a call: subprocess.run → ("subprocess", "run")."""
    function = call.func
    if isinstance(function, ast.Attribute):
        owner = function.value
        return (owner.id if isinstance(owner, ast.Name) else None), function.attr
    if isinstance(function, ast.Name):
        return None, function.id
    return None, ""


def _starts_with_git(argument: ast.expr) -> bool:
    if not isinstance(argument, ast.List) or not argument.elts:
        return False
    first = argument.elts[0]
    if isinstance(first, ast.Constant):
        return first.value == "git"
    return isinstance(first, ast.Name) and first.id in ("GIT", "GIT_BINARY", "GIT_EXECUTABLE")


def starts_git(tree: ast.Module) -> bool:
    """Whether the module builds an argument list starting with git and hands lists to a process runner
    (directly, or through a variable: `command = ["git", ...]; subprocess.run(command)`)."""
    git_argv = runs_processes = False
    for node in ast.walk(tree):
        if isinstance(node, ast.List) and _starts_with_git(node):
            git_argv = True
        elif isinstance(node, ast.Call):
            owner, name = _callee_name(node)
            if (owner == "subprocess" and name in SUBPROCESS_CALLS) or GIT_WRAPPER_NAME.match(name):
                runs_processes = True
    return git_argv and runs_processes


def env_variables(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [m.group(1) for line in path.read_text().splitlines() if (m := ENV_VARIABLE.match(line))]


def measure(root: Path = ROOT) -> list[Figure]:
    dicts = Figure("public functions returning dict", 15, at_most=True)
    long_modules = Figure(f"modules over {LONG_MODULE_LINES} lines", 0, at_most=True)
    git = Figure("git wrappers", 1, at_most=False)
    settings = Figure("settings variables in .env.example", 100, at_most=True)
    texts = {path: path.read_text() for path in app_modules(root)}
    trees = {path: ast.parse(text, filename=str(path)) for path, text in texts.items()}
    aliases = dict_aliases(trees, root)
    for path, text in texts.items():
        tree = trees[path]
        dicts.found += dict_returning_public_functions(path, tree, root, aliases, dicts.skipped)
        lines = text.count("\n")
        if lines > LONG_MODULE_LINES:
            long_modules.found.append(f"{path.relative_to(root)} ({lines} lines)")
        if starts_git(tree):
            git.found.append(str(path.relative_to(root)))
    settings.found = env_variables(root / ".env.example")
    return [dicts, long_modules, git, settings]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="also print what each figure counts")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to read (default: this checkout)")
    options = parser.parse_args(argv)
    for figure in measure(options.root):
        print(figure.line())
        if options.list:
            for item in figure.found:
                print(f"    {item}")
            for item in figure.skipped:
                print(f"    not counted: {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
