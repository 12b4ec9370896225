"""POST /backfill-embeddings: run one embedding sync now (same token as /mcp/brain).

→ 200 {"added", "deleted", "rechunked", "pending", "errors": [...]}
→ 503 when BRAIN_EMBEDDER=off (the JSON error shape of hyperguild.api, code "unavailable")
"""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from brain.api import BrainAPIView
from brain.embedding_sync import sync_embeddings
from hyperguild.api import Unavailable
from hyperguild.lib.embedders import get_embedder

OFF_MESSAGE = (
    "No embedder is configured (BRAIN_EMBEDDER=off): set BRAIN_EMBEDDER to local, ollama or openai "
    "(with BRAIN_EMBED_URL and BRAIN_EMBED_MODEL as needed) and restart."
)


class BackfillEmbeddingsView(BrainAPIView):
    token_scope = "brain:write"

    def post(self, request: Request) -> Response:
        embedder = get_embedder()
        if embedder is None:
            raise Unavailable(OFF_MESSAGE)
        return Response(sync_embeddings(embedder).as_dict())
