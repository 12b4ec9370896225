"""Vector side of search (filled in by the embeddings work)."""

from __future__ import annotations


def active() -> bool:
    return False


def rank(query: str, *, limit: int, wing=None, hall=None, status=None) -> list[tuple[int, str]]:
    raise NotImplementedError
