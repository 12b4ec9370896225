"""Path-safe slugs."""

from __future__ import annotations

import pytest

from brain.slugs import SlugError, slugify_path, slugify_title, validate_slug


@pytest.mark.parametrize("slug", ["note", "concepts/async-io", "a1/b-2/c3"])
def test_good_slugs_pass(slug):
    assert validate_slug(slug) == slug


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("../etc/passwd", "'..'"),
        ("a/../b", "'..'"),
        ("/etc/passwd", "absolute"),
        ("C:/x", "absolute"),
        ("a\x00b", "NUL"),
        ("x" * 201, "over the limit"),
        ("Upper", "bad segment"),
        ("a//b", "bad segment"),
        ("", "empty"),
    ],
)
def test_unsafe_slugs_are_refused_with_a_reason(slug, message):
    with pytest.raises(SlugError, match=message):
        validate_slug(slug)


def test_titles_become_ascii_slugs_and_never_empty():
    assert slugify_title("Café Déjà Vu: Straße!") == "cafe-deja-vu-strasse"
    assert slugify_title("日本語のノート") == "ribenyunonoto"  # every script is transliterated (issue 28)
    assert slugify_title("   ") == "note"
    assert slugify_path("Concepts/Async IO") == "concepts/async-io"
