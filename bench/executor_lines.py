"""Lines of review, debug and consensus code before and after issue 49's "one executor" (bench/RESULTS.md).

    .venv/bin/python bench/executor_lines.py [BEFORE [AFTER]]     # git revisions; default 956f9c0 and HEAD

Counts, at each revision, the top-level functions and classes that do review, debug or consensus in
`supervisor/runners.py` and `supervisor/routing_service.py` (named below), all of `supervisor/skill_steps.py`
where it exists, and the whole of the modules involved; twice: every line, and code lines only (no blank,
comment-only or docstring line). `supervisor/consensus.py` (the agreement rule) is counted whole in the
modules' figure; it was written once before and is unchanged.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("runners", "routing_service", "consensus", "skill_steps")
# The review/debug/consensus definitions of each backend module, before and after.
BEFORE = {
    "runners": ["run_review", "_consensus_review", "run_debug"],
    "routing_service": [
        "_run",
        "_git_diff",
        "remember_fingerprints",
        "_plain",
        "review_check",
        "_review_files",
        "review",
        "_review_result",
        "_grounded_answer",
        "_consensus_review",
        "_table_lists_consensus",
        "debug_check",
        "debug",
    ],
}
AFTER = {
    "runners": ["WorkerBackend", "run_review", "run_debug"],
    "routing_service": ["answered_by", "RoutedBackend", "_grounding", "_review_files", "review", "debug"],
}


def source(revision: str, module: str) -> str | None:
    shown = subprocess.run(
        ["git", "show", f"{revision}:supervisor/{module}.py"], cwd=ROOT, capture_output=True, text=True
    )
    return shown.stdout if shown.returncode == 0 else None


def counted_lines(text: str, names: list[str] | None) -> tuple[int, int]:
    """(all lines, code lines) of the named top-level definitions (None: the whole module)."""
    tree = ast.parse(text)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = text.splitlines()
    if names is None:
        spans = [(1, len(lines))]
    else:
        found = {
            node.name: (min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.end_lineno or node.lineno)
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
        }
        spans = [found[name] for name in names]
    every = code = 0
    for first, last in spans:
        for number in range(first, last + 1):
            every += 1
            stripped = lines[number - 1].strip()
            if stripped and not stripped.startswith("#") and number not in docstrings:
                code += 1
    return every, code


def report(label: str, revision: str, definitions: dict[str, list[str]]) -> None:
    part = [0, 0]
    whole = [0, 0]
    for module in MODULES:
        text = source(revision, module)
        if text is None:
            continue
        names = definitions.get(module)  # skill_steps: the whole module is review, debug and consensus
        if module != "consensus":
            every, code = counted_lines(text, names)
            part[0] += every
            part[1] += code
            print(f"  {label} {module:16} review/debug/consensus: {every:4} lines, {code:4} code lines")
        every, code = counted_lines(text, None)
        whole[0] += every
        whole[1] += code
    print(f"  {label} review/debug/consensus total: {part[0]} lines, {part[1]} code lines")
    print(f"  {label} the modules {', '.join(MODULES)} whole: {whole[0]} lines, {whole[1]} code lines")


def main(argv: list[str]) -> int:
    before = argv[0] if argv else "956f9c0"
    after = argv[1] if len(argv) > 1 else "HEAD"
    report(f"before ({before})", before, BEFORE)
    report(f"after ({after})", after, AFTER)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
