"""The shape of the code that issue 49 ("Fewer, stronger parts") sets goals for, read from the tree by AST:

    .venv/bin/python bench/code_shape.py [--list]

Prints four lines, each `<what>: <figure> (goal <goal>) <met|not met>`:

- public functions in the apps (hyperguild, people, ledger, observability, brain, supervisor, sessions; migrations and
  tests left out)
  whose return annotation is `dict` or `dict[...]` (also `Dict`, `typing.Dict`), methods included;
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


@dataclass
class Figure:
    name: str
    goal: int
    at_most: bool  # the goal is a ceiling (≤) rather than an exact count
    found: list[str] = field(default_factory=list)

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


def returns_dict(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if isinstance(annotation, ast.Name):
        return annotation.id in ("dict", "Dict")
    return isinstance(annotation, ast.Attribute) and annotation.attr == "Dict"


def dict_returning_public_functions(path: Path, tree: ast.Module, root: Path) -> list[str]:
    found = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not node.name.startswith("_") and returns_dict(node.returns):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {prefix}{node.name}")

    visit(tree.body, "")
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
    for path in app_modules(root):
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
        dicts.found += dict_returning_public_functions(path, tree, root)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
