"""docs/api.md is generated from the tool registry, and the README is a short map that reaches every page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import pytest
from django.core.management import CommandError, call_command
from pydantic import Field

from hyperguild.management.commands.api_docs import API_DOCS_PATH, render_api_docs
from hyperguild.mcp.contracts import ToolInput, ToolResult
from hyperguild.mcp.registry import Endpoint, Tool

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Pages other branches add; the README links them already (remove a name once its page exists).
PAGES_TO_COME: set[str] = set()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_docs_api_md_is_what_the_registry_generates():
    assert API_DOCS_PATH.read_text(encoding="utf-8") == render_api_docs(), (
        "docs/api.md is stale: run `.venv/bin/python manage.py api_docs` and commit it"
    )


def test_check_refuses_a_stale_reference_and_writes_nothing(tmp_path):
    stale = tmp_path / "api.md"
    stale.write_text("# an old reference\n", encoding="utf-8")
    with pytest.raises(CommandError, match="is stale"):
        call_command("api_docs", check=True, output=stale)
    assert stale.read_text(encoding="utf-8") == "# an old reference\n"

    call_command("api_docs", output=stale)
    call_command("api_docs", check=True, output=stale)  # fresh now: no error


class DemoFindInput(ToolInput):
    query: str = Field(min_length=1, max_length=300, description="what to find")
    limit: int = Field(10, ge=1, le=50)
    status: Literal["wiki", "raw"] | None = None


class DemoFindResult(ToolResult):
    hits: list[dict[str, Any]] | None = None


def test_a_tool_is_rendered_with_its_arguments_limits_and_result():
    endpoint = Endpoint("demo", title="Demo endpoint", instructions="Try it.")
    endpoint.add(
        Tool(
            name="demo_find",
            title="Find things",
            description="Finds things | quickly.",
            input_model=DemoFindInput,
            result_model=DemoFindResult,
            handler=lambda arguments, ctx: DemoFindResult(),
            read_only=True,
            idempotent=True,
        )
    )
    text = render_api_docs([endpoint])
    assert "| `/mcp/demo` | [`demo_find`](#demo_find-demo) |" in text
    assert "### `demo_find` (demo)" in text
    assert "**Find things.** Finds things \\| quickly." in text
    assert "Annotations: read-only, idempotent." in text
    assert "| `query` | string | yes | at least 1 characters; at most 300 characters | what to find |" in text
    assert "| `limit` | integer | no | ≥ 1; ≤ 50; default `10` |  |" in text
    assert "| `status` | string | no | one of `wiki`, `raw` |  |" in text
    assert "| `hits` | array of object | no |  |" in text


def test_the_readme_is_a_short_map():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail to docs/"


def test_every_page_under_docs_and_the_figures_are_reached_from_the_readme():
    linked = set(LINK.findall(README.read_text(encoding="utf-8")))
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} | {"bench/RESULTS.md"}
    assert not pages - linked, f"not linked from README.md: {sorted(pages - linked)}"


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "bench/RESULTS.md"]
)
def test_every_relative_link_points_at_a_file(page):
    source = ROOT / page
    broken = []
    for target in LINK.findall(source.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = (source.parent / target).resolve()
        if not resolved.exists() and str(resolved.relative_to(ROOT)) not in PAGES_TO_COME:
            broken.append(target)
    assert not broken, f"{page} links to missing files: {broken}"
