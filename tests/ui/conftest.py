"""Users and data for the browser-UI tests, all built through the actions."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from brain.actions import do_ingest_note, do_write_raw_note
from sessions.actions import do_store_training_example

_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def _bm25_only(settings):
    # The UI is tested on BM25 alone: fast, and the vector side has its own tests.
    from brain import bm25

    settings.BRAIN_EMBEDDER = "off"
    # Each test's database starts over, and so does the corpus version counter: drop the in-process index.
    bm25.reset()
    yield
    bm25.reset()


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_user("reviewer", password="pw-reviewer-123", is_staff=True)


@pytest.fixture
def plain_user(db):
    return get_user_model().objects.create_user("reader", password="pw-reader-123", is_staff=False)


@pytest.fixture
def staff_client(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture
def reader_client(plain_user) -> Client:
    client = Client()
    client.force_login(plain_user)
    return client


@pytest.fixture
def csrf_staff_client(staff_user) -> Client:
    """A staff session whose POSTs carry no CSRF token, checked as a browser's would be."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    return client


def make_raw_note(title: str = "", body: str = "", **extra):
    n = next(_counter)
    return do_write_raw_note(
        title=title or f"Raw learning {n}",
        body=body or f"Body of raw learning {n}: pytest fixtures need the db mark.",
        source=extra.pop("source", "retrospective"),
        **extra,
    )


def make_wiki_note(title: str = "", body: str = "", wing: str = "concepts", hall: str = "", **extra):
    n = next(_counter)
    return do_ingest_note(
        title=title or f"Wiki note {n}", body=body or f"Wiki body {n}.", wing=wing, hall=hall, **extra
    )


def make_example(kind: str = "sft", **extra):
    n = next(_counter)
    prompt = [{"role": "user", "content": f"Write a failing test for feature {n}."}]
    fields = {
        "sft": {"completion": [{"role": "assistant", "content": f"def test_feature_{n}(): assert False"}]},
        "dpo": {
            "chosen": [{"role": "assistant", "content": f"good answer {n}"}],
            "rejected": [{"role": "assistant", "content": f"bad answer {n}"}],
        },
    }[kind]
    example, _ = do_store_training_example(
        source_key=f"test:{kind}:{n}",
        kind=kind,
        skill=extra.pop("skill", "tdd_red"),
        prompt=prompt,
        provenance=extra.pop("provenance", {"session_id": "s-1", "verification": {"verified": True}}),
        **fields,
        **extra,
    )
    return example
