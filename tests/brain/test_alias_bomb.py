"""A YAML alias bomb ("billion laughs") in a note's frontmatter: refused at once, the other files go on.

Nine levels of anchors, each a list of nine aliases to the level below, is a
file of ~340 bytes that expands to 9**9 strings. The frontmatter loader
refuses aliases outright, so nothing is ever expanded.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from brain.folder import sync_mirror
from brain.models import Note
from hyperguild.lib.markdown import FrontmatterError, parse_frontmatter_text, parse_markdown

pytestmark = pytest.mark.django_db


def alias_bomb(levels: int = 9) -> str:
    names = "abcdefghijklmnopqrstuvwxyz"
    lines = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for level in range(1, levels):
        lines.append(f"{names[level]}: &{names[level]} [" + ",".join([f"*{names[level - 1]}"] * 9) + "]")
    return "\n".join(lines)


def bomb_file() -> str:
    return f"---\ntitle: Laughs\n{alias_bomb()}\n---\nbody\n"


def brain_with_a_bomb(root: Path) -> None:
    (root / "raw").mkdir(parents=True)
    (root / "raw" / "bomb.md").write_text(bomb_file(), encoding="utf-8")
    (root / "raw" / "good.md").write_text("---\ntitle: A good note\n---\nStill imported.\n", encoding="utf-8")


def test_the_loader_refuses_an_alias_and_says_where():
    started = time.monotonic()
    with pytest.raises(FrontmatterError, match=r"alias \*a \(line 2, column 8\).*write the value out"):
        parse_frontmatter_text(alias_bomb())
    assert time.monotonic() - started < 1


def test_a_merge_key_alias_is_refused_too():
    with pytest.raises(FrontmatterError, match="alias"):
        parse_markdown("---\nbase: &b {x: 1}\nderived:\n  <<: *b\n---\nbody")


def test_anchors_without_aliases_and_plain_frontmatter_still_load():
    assert parse_frontmatter_text("a: &x 1\nb: [2, 3]") == {"a": 1, "b": [2, 3]}


@pytest.mark.timeout(60)
def test_brain_import_finishes_quickly_reports_the_bomb_and_imports_the_rest(tmp_path):
    brain_with_a_bomb(tmp_path)
    out = io.StringIO()
    started = time.monotonic()
    call_command("brain_import", str(tmp_path), "--no-progress", stdout=out, stderr=io.StringIO())
    elapsed = time.monotonic() - started
    print(f"brain_import with a nine-level alias bomb: {elapsed:.2f} s")
    assert elapsed < 5
    text = out.getvalue()
    assert "errors 1" in text and "raw/bomb.md" in text and "alias" in text
    assert list(Note.objects.values_list("slug", flat=True)) == ["good"]


@pytest.mark.timeout(60)
def test_the_mirror_goes_on_past_the_bomb(tmp_path):
    brain_with_a_bomb(tmp_path)
    summary = sync_mirror(tmp_path)
    assert [name for name, _ in summary.errors] == ["raw/bomb.md"]
    assert Note.objects.filter(slug="good").exists()
    again = sync_mirror(tmp_path)  # the next round reads the file again and refuses it again, quickly
    assert [name for name, _ in again.errors] == ["raw/bomb.md"]


@pytest.mark.timeout(60)
def test_migrate_from_go_goes_on_past_the_bomb_and_names_it(tmp_path):
    brain_with_a_bomb(tmp_path)
    out = io.StringIO()
    call_command("migrate_from_go", str(tmp_path), "--no-progress", stdout=out, stderr=io.StringIO())
    assert "raw/bomb.md" in out.getvalue() and "alias" in out.getvalue()
    assert Note.objects.filter(slug="good").exists()
