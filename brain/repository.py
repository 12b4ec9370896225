"""Reading a project's git repository: the `git` CLI through `hyperguild.lib.git`, nothing else.

Everything here reads objects by commit id, and a commit's tree never changes, so file lists and file
contents are cached per (repository, commit) for the life of the process: re-verifying 5,000 notes
anchored to one file reads that file once. Commands run with no hooks, no pager, no prompt, and a
deadline; a failure raises `RepositoryUnreadable` with git's own words.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
import textwrap
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
    r"^[[:space:]]*(from[[:space:]]+[^[:space:]]+[[:space:]]+)?import[[:space:]].*[[:space:]]as[[:space:]]",
)
PYTHON_FILES = ("*.py", "*.pyi")
# Prose, not code: a `def` in an example of the docs defines nothing in the project.
DOC_FILES = ("*.md", "*.markdown", "*.rst", "*.txt", "*.adoc", "*.ipynb")
_PY_DEF = re.compile(r"^\s*(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)")
_PY_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)(\s*)(:[^=]*)?=(\s*)(?!=)")
_PY_PARAMETER = re.compile(r"^\s*\*{0,2}([A-Za-z_]\w*)\s*(?::[^=]*)?(?:=.*)?,\s*$")
_PY_INLINE_PARAMETER = re.compile(r"(?:^|,)\s*\*{0,2}(?!self\b|cls\b)([A-Za-z_]\w*)\s*(?=[:=,)])")
# A re-export, the typing convention for a name a module offers as its own: `from click.termui import clear as clear`.
_PY_IMPORT = re.compile(r"^\s*(?:from\s+\S+\s+)?import\s+(.*)$")
_PY_REEXPORT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s+as\s+\1(?!\w)")
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

    def grep_fixed_lines(self, commit: str, text: str) -> list[tuple[str, int, str]]:
        """(path, line, the line's text) of every line holding `text` at `commit`."""
        out = run_git(self.git_dir, "grep", "-n", "-I", "-F", "--no-color", "-e", text, commit, check=False)
        found = []
        prefix = f"{commit}:"
        for line in out.splitlines():
            path, _, rest = line.removeprefix(prefix).partition(":")
            number, _, code = rest.partition(":")
            if number.isdigit():
                found.append((path, int(number), code))
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

    def file_history(self, old: str, new: str, path: str) -> list[tuple[str, str, tuple[Hunk, ...]]]:
        """(commit, its parent, the line ranges its diff changed) of each commit in old..new that changed `path`,
        merges left out (their branch's own commits are listed), oldest first: one `git log -p`."""
        return list(_file_history(self.git_dir, old, new, path))

    def parent(self, commit: str) -> str:
        """The commit's first parent ('' for a root commit)."""
        return _parent(self.git_dir, commit)

    def hunks(self, old: str, new: str, path: str) -> list[str]:
        """The diff of `path` between two commits, one string per hunk (with its @@ header)."""
        return list(_hunks(self.git_dir, old, new, path))

    def block(self, commit: str, path: str, name: str, owner: str = "") -> Block | None:
        """Where `name` (of class `owner`, if given) is defined in `path` at `commit`, and its shape; None when it
        is not defined there (see `definition_block`)."""
        return _block(self.git_dir, commit, path, name, owner)


# -- one definition's text, to tell whether a commit changed it ------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A definition in one version of a file: its lines (decorators included) and its **shape**, what is compared
    to tell whether a commit changed it — for Python its syntax tree (docstrings included; comments and layout not;
    a string annotation read as the expression it names), a class without its methods' bodies (its header, class-level
    statements and its methods' names: `Class.method` is its own definition); elsewhere its lines with whitespace
    squashed, blank and comment lines dropped."""

    start: int
    end: int
    shape: str


@functools.lru_cache(maxsize=4096)
def _block(git_dir: str, commit: str, path: str, name: str, owner: str) -> Block | None:
    text = _read(git_dir, commit, path)  # None when the file is not there (no listing of the whole tree)
    if text is None:
        return None
    if path.endswith((".py", ".pyi")):
        return _python_block(path, text, name, owner)
    return _text_block(text, name)


def definition_block(text: str, path: str, name: str, owner: str = "") -> Block | None:
    """The definition of `name` in a file's `text`: for Python, in class `owner` when the file has that class, else at
    module level, else in any class (a method cited without its class); elsewhere the first line defining it."""
    if path.endswith((".py", ".pyi")):
        return _python_block(path, text, name, owner)
    return _text_block(text, name)


_PYTHON_LINES = tuple(re.compile(pattern.replace("[[:space:]]", r"\s")) for pattern in PYTHON_PATTERNS)


@functools.lru_cache(maxsize=256)
def _python_index(path: str, text: str) -> dict[str, tuple[Definition, ...]]:
    """name → its definitions in one Python file, found as the symbol index finds them (`python_definitions`)."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if any(p.search(line) for p in _PYTHON_LINES)]
    index: dict[str, list[Definition]] = {}
    for definition in python_definitions(path, lines):
        index.setdefault(definition.name, []).append(definition)
    return {name: tuple(items) for name, items in index.items()}


def _python_block(path: str, text: str, name: str, owner: str) -> Block | None:
    index = _python_index(path, text)
    found = index.get(name, ())
    chosen = (
        next((d for d in found if owner and d.owner == owner), None)
        or next((d for d in found if not d.owner), None)
        or next(iter(found), None)
    )
    if chosen is None:
        return None
    lines = text.splitlines()
    first, last = _python_span(lines, chosen.line)
    return Block(first, last, _python_shape("\n".join(lines[first - 1 : last])))


_OPENS_CLOSER = re.compile(r"^\s*[)\]}]")


def _python_span(lines: list[str], line: int) -> tuple[int, int]:
    """The lines of the definition at `line`: its decorators, and every line after it indented deeper (or closing
    its brackets at its own depth: the `) -> None:` of a long signature, the `}` of a dict)."""
    code = lines[line - 1]
    indent = len(code) - len(code.lstrip())
    first = line
    while (
        first > 1
        and lines[first - 2].strip().startswith("@")
        and len(lines[first - 2]) - len(lines[first - 2].lstrip()) == indent
    ):
        first -= 1
    last = line
    for number in range(line + 1, len(lines) + 1):
        current = lines[number - 1]
        if not current.strip():
            continue
        depth = len(current) - len(current.lstrip())
        if depth > indent or (depth == indent and _OPENS_CLOSER.match(current)):
            last = number
            continue
        break
    return first, last


@functools.lru_cache(maxsize=4096)
def _python_shape(snippet: str) -> str:
    """What is compared of a Python definition (its syntax tree; its text squashed when it does not parse)."""
    try:
        tree = ast.parse(textwrap.dedent(snippet))
    except (SyntaxError, ValueError):
        return _squashed(snippet.splitlines())
    return "\n".join(_shape(node) for node in tree.body)


def _squashed(lines: list[str]) -> str:
    return "\n".join(" ".join(item.split()) for item in lines if item.strip() and not _COMMENT_LINE.match(item))


class _Shape(ast.NodeTransformer):
    """A definition's tree as compared: string annotations read as what they name (`"Request"` → `Request`)."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field_name in ("annotation", "returns"):
            value = getattr(node, field_name, None)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                try:
                    setattr(node, field_name, ast.parse(value.value, mode="eval").body)
                except SyntaxError:
                    pass
        return super().generic_visit(node)


def _shape(node: ast.stmt) -> str:
    node = _Shape().visit(node)
    if isinstance(node, ast.ClassDef):
        parts = [ast.dump(item) for item in (*node.decorator_list, *node.bases, *node.keywords)]
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts.append(f"def {item.name}")
            else:
                parts.append(ast.dump(item))
        return "\n".join(parts)
    return ast.dump(node)


_COMMENT_LINE = re.compile(r"^\s*(?:#|//|/\*|\*|--)")
_CLOSER = re.compile(r"^\s*(?:[}\])]+[;,]?|end)\s*$")


def _text_block(text: str, name: str) -> Block | None:
    """Outside Python: the line defining `name` and the lines indented under it (and the brace or `end` closing
    them)."""
    word = re.escape(name)
    defines = re.compile(
        rf"^\s*(?:export\s+)?(?:pub\s+)?(?:async\s+)?(?:def|class|func|function|fn|struct|interface|type|module|const|let|var|static)"
        rf"\s+(?:mut\s+)?(?:\([^)]*\)\s*)?{word}(?!\w)|^\s{{0,8}}{word}\s*(?::[^=\n]*)?=(?!=)"
    )
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not defines.search(line):
            continue
        indent = len(line) - len(line.lstrip())
        end = index
        for later in range(index + 1, len(lines)):
            current = lines[later]
            if not current.strip():
                continue
            depth = len(current) - len(current.lstrip())
            if depth > indent:
                end = later
                continue
            if depth == indent and _CLOSER.match(current):
                end = later
            break
        return Block(index + 1, end + 1, _squashed(lines[index : end + 1]))
    return None


# Commit ids never change what they name: the evidence of many anchors of one file and one change reads it once.
@functools.lru_cache(maxsize=1024)
def _commits_touching(git_dir: str, old: str, new: str, path: str, pickaxe: str) -> tuple[str, ...]:
    chosen = [f"-S{pickaxe}"] if pickaxe else []
    out = run_git(git_dir, "log", "--format=%H", "--reverse", *chosen, f"{old}..{new}", "--", path, check=False)
    return tuple(out.split())


# A hunk of a diff: (old start, old count, new start, new count), as its @@ line says.
Hunk = tuple[int, int, int, int]
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@functools.lru_cache(maxsize=256)
def _file_history(git_dir: str, old: str, new: str, path: str) -> tuple[tuple[str, str, tuple[Hunk, ...]], ...]:
    out = run_git(
        git_dir,
        "log",
        "--reverse",
        "--no-merges",
        "--format=commit %H %P",
        "-p",
        "--unified=0",
        "--no-color",
        "--no-renames",
        f"{old}..{new}",
        "--",
        path,
        check=False,
    )
    history: list[tuple[str, str, list[Hunk]]] = []
    for line in out.splitlines():
        if line.startswith("commit ") and re.match(r"^commit [0-9a-f]{40}( [0-9a-f]{40})?$", line):
            ids = line.split()[1:]
            history.append((ids[0], ids[1] if len(ids) > 1 else "", []))
            continue
        header = _HUNK_HEADER.match(line)
        if header and history:
            old_start, old_count, new_start, new_count = header.groups()
            history[-1][2].append((int(old_start), int(old_count or 1), int(new_start), int(new_count or 1)))
    return tuple((commit, parent, tuple(hunks)) for commit, parent, hunks in history)


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
    (an indented line ending in `,` or written `name=value` is a keyword argument); a re-export (`from m import a
    as a`) defines `a` where it is written. A def's parameters are
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
        elif _PY_IMPORT.match(code):
            if not local:
                imported = _PY_IMPORT.match(code)
                names = _PY_REEXPORT.findall(imported.group(1).split("#", 1)[0]) if imported else []
                found += [Definition(name, path, number, owner) for name in names]
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
