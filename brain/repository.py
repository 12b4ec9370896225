"""Reading a project's git repository: the `git` CLI through `hyperguild.lib.git`, nothing else.

Everything here reads objects by commit id, and a commit's tree never changes, so file lists and file
contents are cached per (repository, commit) for the life of the process: re-verifying 5,000 notes
anchored to one file reads that file once. Commands run with no hooks, no pager, no prompt, and a
deadline; a failure raises `RepositoryUnreadable` with git's own words.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# The one git runner (hardened: no hooks, no pager, no prompt, a deadline), re-exported for the brain.
from hyperguild.lib.git import RepositoryUnreadable as RepositoryUnreadable
from hyperguild.lib.git import run_git as run_git

# Files larger than this are not read for anchors (generated files, data).
MAX_FILE_BYTES = 2 * 1024 * 1024
# A definition of a symbol in the languages hyperguild's teams write most (Go, JS/TS, Rust, Ruby…), in files
# other than Python's (read below with their structure), and a declaration at the top of such a file.
DEFINITION_PATTERN = (
    r"^[[:space:]]*(export[[:space:]]+)?(pub[[:space:]]+)?(async[[:space:]]+)?"
    r"(def|class|func|function|fn|struct|interface|type|module)[[:space:]]+(\([^)]*\)[[:space:]]*)?[A-Za-z_][A-Za-z0-9_]*"
)
DECLARATION_PATTERN = (
    r"^(export[[:space:]]+)?(pub[[:space:]]+)?(const|let|var|static)[[:space:]]+(mut[[:space:]]+)?[A-Za-z_]"
)
_DEFINITION_NAME = re.compile(
    r"(?:def|class|func|function|fn|struct|interface|type|module)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)"
)
_DECLARATION_NAME = re.compile(r"^(?:export\s+)?(?:pub\s+)?(?:const|let|var|static)\s+(?:mut\s+)?([A-Za-z_]\w*)")
# Python, read with its structure: every def and class, the block openers up to two levels deep, and the
# assignments up to two levels deep; `python_definitions` keeps the assignments at module or class level.
PYTHON_PATTERNS = (
    r"^[[:space:]]*(async[[:space:]]+)?(def|class)[[:space:]]+[A-Za-z_]",
    r"^[[:space:]]{0,8}(if|elif|else|try|except|finally|with|for|while|match|case|async)([[:space:]]|:|\()",
    r"^[[:space:]]{0,8}[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(:[^=]*)?=[^=]",
    r"^[[:space:]]{4,12}[*]{0,2}[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(:[^=]*)?(=.*)?,[[:space:]]*$",
)
PYTHON_FILES = ("*.py", "*.pyi")
# Prose, not code: a `def` in an example of the docs defines nothing in the project.
DOC_FILES = ("*.md", "*.markdown", "*.rst", "*.txt", "*.adoc", "*.ipynb")
_PY_DEF = re.compile(r"^\s*(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)")
_PY_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)(\s*)(:[^=]*)?=(\s*)(?!=)")
_PY_PARAMETER = re.compile(r"^\s*\*{0,2}([A-Za-z_]\w*)\s*(?::[^=]*)?(?:=.*)?,\s*$")
_PY_INLINE_PARAMETER = re.compile(r"(?:^|,)\s*\*{0,2}(?!self\b|cls\b)([A-Za-z_]\w*)\s*(?=[:=,)])")
_PY_OPENER = re.compile(r"^\s*(?:if|elif|else|try|except|finally|with|for|while|match|case|async)\b")


@dataclass(frozen=True)
class Definition:
    name: str
    path: str
    line: int
    # The class it is defined in (a method, a class attribute); "" at module level; None where unknown
    # (languages other than Python).
    owner: str | None = None


class Repository:
    """One git repository (a work tree or a bare mirror), read at given commits."""

    def __init__(self, git_dir: str | Path):
        self.git_dir = str(git_dir)

    def head(self, branch: str) -> str:
        """The full commit id the branch points at."""
        if not Path(self.git_dir).is_dir():
            raise RepositoryUnreadable(f"{self.git_dir} does not exist")
        ref = branch or "HEAD"
        out = run_git(self.git_dir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).strip()
        if not out:
            raise RepositoryUnreadable(f"{self.git_dir} has no branch {ref!r}")
        return out

    def short(self, commit: str) -> str:
        return commit[:7]

    def files(self, commit: str) -> frozenset[str]:
        return _files(self.git_dir, commit)

    def read(self, commit: str, path: str) -> str | None:
        """The file's text at `commit`, or None when it is not there (or too large, or binary)."""
        if path not in self.files(commit):
            return None
        return _read(self.git_dir, commit, path)

    def definitions(self, commit: str, since: str | None = None) -> Mapping[str, tuple[Definition, ...]]:
        """name → where it is defined at `commit` (`git grep` over the whole tree, or over the files changed since
        `since` when its index is at hand; cached)."""
        return _definitions(self.git_dir, commit, since or "")

    def grep_fixed(self, commit: str, text: str) -> list[tuple[str, int]]:
        """(path, line) of every line holding `text` at `commit`."""
        out = run_git(self.git_dir, "grep", "-n", "-I", "-F", "--no-color", "-e", text, commit, check=False)
        found = []
        prefix = f"{commit}:"
        for line in out.splitlines():
            line = line.removeprefix(prefix)
            path, _, rest = line.partition(":")
            number, _, _ = rest.partition(":")
            if number.isdigit():
                found.append((path, int(number)))
        return found

    def changed_files(self, old: str, new: str) -> list[str]:
        """Paths that differ between two commits (both sides of a rename)."""
        out = run_git(self.git_dir, "diff", "--name-only", "--no-renames", old, new)
        return [line for line in out.splitlines() if line]

    def last_change(self, old: str | None, new: str, path: str) -> str:
        """The newest commit in old..new (or up to new) that touched `path`; '' when none did."""
        spec = f"{old}..{new}" if old else new
        return run_git(self.git_dir, "log", "-1", "--format=%H", spec, "--", path, check=False).strip()

    def commits_touching(self, old: str, new: str, path: str, pickaxe: str = "") -> list[str]:
        """The commits in old..new that touched `path`, oldest first; with `pickaxe`, only those that changed how
        often that text occurs in it (`git log -S`)."""
        return list(_commits_touching(self.git_dir, old, new, path, pickaxe))

    def parent(self, commit: str) -> str:
        """The commit's first parent ('' for a root commit)."""
        return _parent(self.git_dir, commit)

    def hunks(self, old: str, new: str, path: str) -> list[str]:
        """The diff of `path` between two commits, one string per hunk (with its @@ header)."""
        return list(_hunks(self.git_dir, old, new, path))


# Commit ids never change what they name: the evidence of many anchors of one file and one change reads it once.
@functools.lru_cache(maxsize=1024)
def _commits_touching(git_dir: str, old: str, new: str, path: str, pickaxe: str) -> tuple[str, ...]:
    chosen = [f"-S{pickaxe}"] if pickaxe else []
    out = run_git(git_dir, "log", "--format=%H", "--reverse", *chosen, f"{old}..{new}", "--", path, check=False)
    return tuple(out.split())


@functools.lru_cache(maxsize=1024)
def _parent(git_dir: str, commit: str) -> str:
    return run_git(git_dir, "rev-parse", "--verify", "--quiet", f"{commit}^", check=False).strip()


@functools.lru_cache(maxsize=256)
def _hunks(git_dir: str, old: str, new: str, path: str) -> tuple[str, ...]:
    out = run_git(git_dir, "diff", "--no-color", "--unified=2", old, new, "--", path, check=False)
    hunks: list[str] = []
    current: list[str] = []
    for line in out.splitlines():
        if line.startswith("@@"):
            if current:
                hunks.append("\n".join(current))
            current = [line]
        elif current:
            current.append(line)
    if current:
        hunks.append("\n".join(current))
    return tuple(hunks)


@functools.lru_cache(maxsize=64)
def _files(git_dir: str, commit: str) -> frozenset[str]:
    out = run_git(git_dir, "ls-tree", "-r", "--name-only", "-z", commit)
    return frozenset(name for name in out.split("\0") if name)


@functools.lru_cache(maxsize=4096)
def _read(git_dir: str, commit: str, path: str) -> str | None:
    size = run_git(git_dir, "cat-file", "-s", f"{commit}:{path}", check=False).strip()
    if not size.isdigit() or int(size) > MAX_FILE_BYTES:
        return None
    text = run_git(git_dir, "cat-file", "blob", f"{commit}:{path}", check=False)
    return None if "\0" in text[:8000] else text


def _grep_lines(git_dir: str, commit: str, patterns: list[str], pathspecs: list[str]) -> list[tuple[str, int, str]]:
    """(path, line, text) of every line matching one of `patterns` at `commit`, in file and line order."""
    arguments = ["grep", "-n", "-I", "-E", "--no-color"]
    for pattern in patterns:
        arguments += ["-e", pattern]
    out = run_git(git_dir, *arguments, commit, "--", *pathspecs, check=False)
    found = []
    prefix = f"{commit}:"
    for line in out.splitlines():
        line = line.removeprefix(prefix)
        path, _, rest = line.partition(":")
        number, _, code = rest.partition(":")
        if number.isdigit():
            found.append((path, int(number), code))
    return found


# The symbol index of the last few commits read: a sync one commit on re-reads only the files that commit changed.
MAX_INDEXES = 32
MAX_INCREMENTAL_FILES = 500
_INDEXES: OrderedDict[tuple[str, str], dict[str, tuple[Definition, ...]]] = OrderedDict()
_INDEXES_LOCK = threading.Lock()


def _definitions(git_dir: str, commit: str, since: str = "") -> dict[str, tuple[Definition, ...]]:
    """The symbol index at `commit`; built from `since`'s (when this process holds it) and the files changed since,
    else from one read of the whole tree."""
    with _INDEXES_LOCK:
        known = _INDEXES.get((git_dir, commit))
        before = _INDEXES.get((git_dir, since)) if since else None
        if known is not None:
            _INDEXES.move_to_end((git_dir, commit))
            return known
    changed = _changed_paths(git_dir, since, commit) if before is not None else None
    if before is not None and changed is not None and len(changed) <= MAX_INCREMENTAL_FILES:
        found = {name: [d for d in items if d.path not in changed] for name, items in before.items()}
        _read_definitions(git_dir, commit, found, changed)
    else:
        found = {}
        _read_definitions(git_dir, commit, found, None)
    index = {name: tuple(sorted(items, key=lambda d: (d.path, d.line))) for name, items in found.items() if items}
    with _INDEXES_LOCK:
        _INDEXES[(git_dir, commit)] = index
        while len(_INDEXES) > MAX_INDEXES:
            _INDEXES.popitem(last=False)
    return index


def _changed_paths(git_dir: str, old: str, new: str) -> set[str] | None:
    try:
        out = run_git(git_dir, "diff", "--name-only", "--no-renames", old, new)
    except RepositoryUnreadable:
        return None
    return {line for line in out.splitlines() if line}


def _read_definitions(git_dir: str, commit: str, found: dict[str, list[Definition]], paths: set[str] | None) -> None:
    """Add the definitions at `commit` to `found`: in the whole tree (`paths` None) or in those files only."""

    def named(path: str, patterns: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern) for pattern in patterns)

    if paths is None:
        other = [".", *[f":(exclude){pattern}" for pattern in (*PYTHON_FILES, *DOC_FILES)]]
        python = list(PYTHON_FILES)
    else:
        python = [f":(literal){path}" for path in sorted(paths) if named(path, PYTHON_FILES)]
        other = [f":(literal){path}" for path in sorted(paths) if not named(path, (*PYTHON_FILES, *DOC_FILES))]
    # One `git grep` per pattern: several -e patterns in one run took ten times as long as apart (git 2.39).
    for pattern in (DEFINITION_PATTERN, DECLARATION_PATTERN) if other else ():
        for path, number, code in _grep_lines(git_dir, commit, [pattern], other):
            match = _DEFINITION_NAME.search(code) or _DECLARATION_NAME.match(code)
            if match:
                found.setdefault(match.group(1), []).append(Definition(match.group(1), path, number))
    by_file: dict[str, dict[int, str]] = {}
    for pattern in PYTHON_PATTERNS if python else ():
        for path, number, code in _grep_lines(git_dir, commit, [pattern], python):
            by_file.setdefault(path, {})[number] = code
    for path, lines in by_file.items():
        for definition in python_definitions(path, sorted(lines.items())):
            found.setdefault(definition.name, []).append(definition)


def python_definitions(path: str, lines: list[tuple[int, str]]) -> list[Definition]:
    """The definitions among a Python file's def, class, block-opening and assignment lines (in order).

    Each line's block is the nearest line before it with less indentation: a def or class is always a
    definition (its owner the class it is in); an assignment is one at module level or in a class body
    (through `if`/`try`… blocks), not in a function, and not the continuation of a statement above it
    (an indented line ending in `,` or written `name=value` is a keyword argument). A def's parameters are
    definitions too (the project's own API: `CliRunner(mix_stderr=…)`), on its line or one a line below it.
    """
    found: list[Definition] = []
    stack: list[tuple[int, str, str, str]] = []  # (indent, kind, name, its class) of the lines that may hold others
    for number, code in lines:
        indent = len(code.expandtabs(8)) - len(code.expandtabs(8).lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        owner, local, signature = "", False, None
        for entry in reversed(stack):
            if entry[1] == "opener":
                continue
            owner, local = (entry[2], False) if entry[1] == "class" else ("", True)
            signature = entry if entry[1] == "signature" else None
            break
        definition, assignment, parameter = _PY_DEF.match(code), _PY_ASSIGN.match(code), _PY_PARAMETER.match(code)
        if definition:
            kind, name = definition.group(1), definition.group(2)
            found.append(Definition(name, path, number, owner if not local else ""))
            head = code.split("#", 1)[0].rstrip()
            if kind == "def" and head.endswith("("):
                kind = "signature"  # its parameters follow, one a line
            elif kind == "def" and "(" in head:
                found += [
                    Definition(p, path, number, owner) for p in _PY_INLINE_PARAMETER.findall(head.split("(", 1)[1])
                ]
            stack.append((indent, kind, name, owner))
        elif signature is not None and parameter and indent == signature[0] + 4:
            # A parameter of the project's own function (`mix_stderr: bool = True,`) is its code.
            if parameter.group(1) not in ("self", "cls"):
                found.append(Definition(parameter.group(1), path, number, signature[3]))
        elif not assignment and _PY_OPENER.match(code):
            stack.append((indent, "opener", "", ""))
        elif assignment:
            stripped = code.rstrip()
            spaced = bool(assignment.group(2) or assignment.group(3)) and bool(
                assignment.group(4) or assignment.group(3)
            )
            continuation = indent > 0 and (stripped.endswith(",") or not spaced)
            if not local and not continuation:
                found.append(Definition(assignment.group(1), path, number, owner))
            stack.append((indent, "statement", "", ""))
    return found
