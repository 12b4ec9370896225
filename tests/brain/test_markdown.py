"""Frontmatter parsing and writing, safe rendering, wikilinks."""

from __future__ import annotations

import pytest

from hyperguild.lib.markdown import (
    FrontmatterError,
    extract_wikilinks,
    parse_markdown,
    render_markdown,
    write_markdown,
)


def test_it_splits_frontmatter_from_the_body():
    doc = parse_markdown("---\ntitle: Hello\ntags:\n  - a\n  - b\n---\n\n# Hello\nbody\n")
    assert doc.frontmatter == {"title": "Hello", "tags": ["a", "b"]}
    assert doc.body == "\n# Hello\nbody\n"


def test_a_file_without_frontmatter_is_all_body():
    doc = parse_markdown("# Just text\n")
    assert doc.frontmatter == {} and doc.body == "# Just text\n"


def test_dates_stay_strings_and_are_written_back_unquoted():
    doc = parse_markdown("---\ncreated: 2024-01-05\n---\nx")
    assert doc.frontmatter == {"created": "2024-01-05"}
    assert write_markdown(doc.frontmatter, doc.body) == "---\ncreated: 2024-01-05\n---\nx"


@pytest.mark.parametrize("text", ["---\n- a\n- b\n---\nbody", "---\njust a string\n---\nbody", "---\n42\n---\n"])
def test_frontmatter_that_is_not_a_mapping_is_refused(text):
    with pytest.raises(FrontmatterError, match="must be a mapping"):
        parse_markdown(text)


def test_broken_yaml_says_where():
    with pytest.raises(FrontmatterError, match="not valid YAML.*line"):
        parse_markdown("---\ntitle: [unclosed\n---\nbody")


def test_python_objects_cannot_be_built_from_frontmatter():
    with pytest.raises(FrontmatterError):
        parse_markdown("---\nx: !!python/object/apply:os.system ['true']\n---\n")


def test_unclosed_frontmatter_is_refused():
    with pytest.raises(FrontmatterError, match="never closed"):
        parse_markdown("---\ntitle: x\nbody without end")


def test_the_writer_is_deterministic_and_keeps_key_order_and_unicode():
    frontmatter = {"title": "Café ☕", "z": 1, "a": ["x", "y"], "multi": "line one\nline two\n", "flag": "yes"}
    first = write_markdown(frontmatter, "body\n")
    assert first == write_markdown(dict(frontmatter), "body\n")
    assert first.index("z:") < first.index("a:")
    assert "Café ☕" in first
    again = parse_markdown(first)
    assert again.frontmatter == frontmatter and again.body == "body\n"


def test_rendered_html_has_no_script_no_event_handlers_and_no_javascript_urls():
    html = render_markdown(
        "# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>"
        '\n\n<a href="https://example.org" onclick="evil()">ok</a>'
    )
    assert "<h1>T</h1>" in html
    assert "<script" not in html and "onerror" not in html and "onclick" not in html
    assert "javascript:" not in html
    assert 'href="https://example.org"' in html


def test_wikilinks_with_and_without_labels():
    links = extract_wikilinks("See [[async-io]] and [[concepts/gil|the GIL]] and [[Page#part]] but not [[]].")
    assert [(link.target, link.label) for link in links] == [
        ("async-io", "async-io"),
        ("concepts/gil", "the GIL"),
        ("Page", "Page"),
    ]
