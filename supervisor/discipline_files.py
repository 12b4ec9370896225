"""Which discipline file a prompt is built from, in either layout.

Our layout (`supervisor/disciplines/`): `rules.md` plus one file per skill
(`tdd_red.md`, `tdd_green.md`, `tdd_refactor.md`, `review.md`, …). The Go
hyperguild's layout: `CLAUDE.md` as the rules and one `tdd.md` for all three
TDD phases. `SUPERVISOR_CONFIG_DIR` may hold either, or a mix: a file of
ours wins over its Go counterpart.
"""

from __future__ import annotations

from pathlib import Path

RULES = "rules.md"
GO_RULES = "CLAUDE.md"
GO_TDD = "tdd.md"
TDD_PHASE_FILES = ("tdd_red.md", "tdd_green.md", "tdd_refactor.md")


def candidates(name: str) -> list[str]:
    """File names that can serve as `name`, in order of preference."""
    if name == RULES:
        return [RULES, GO_RULES]
    if name in TDD_PHASE_FILES:
        return [name, GO_TDD]
    return [name]


def find_discipline(config_dir: Path, name: str) -> Path:
    """The file to read for `name`; the first candidate (ours) when none exists, so errors name it."""
    options = candidates(name)
    for option in options:
        path = config_dir / option
        if path.is_file():
            return path
    return config_dir / options[0]


def describe_missing(config_dir: Path, name: str) -> str:
    options = candidates(name)
    if len(options) == 1:
        return f"{config_dir / name}"
    return " or ".join(str(config_dir / option) for option in options)
