"""`ruff format` decides the layout (`make lint` runs `ruff format --check`); a `# fmt: skip` keeps a hand layout
only with the reason beside it (issue 49, hygiene)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability", "tests", "bench")
BARE_SKIP = re.compile(r"#\s*fmt:\s*(skip|off)\s*$")


def bare_skips(root: Path) -> list[str]:
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if BARE_SKIP.search(line):
                    found.append(f"{path.relative_to(root)}:{number}")
    return found


def test_no_fmt_skip_without_its_reason():
    assert bare_skips(ROOT) == []


def test_the_check_finds_a_bare_skip_and_accepts_one_with_a_reason(tmp_path):
    (tmp_path / "brain").mkdir()
    (tmp_path / "brain" / "a.py").write_text("x = [1,2]  # fmt: skip\ny = [3,4]  # fmt: skip (a table)\n")
    assert bare_skips(tmp_path) == ["brain/a.py:1"]
