"""manage.py brain_embed: embed new and changed note chunks now, with a progress bar."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from brain.embedding_sync import SyncResult, sync_embeddings
from hyperguild.lib.embedders import get_embedder


class Command(BaseCommand):
    help = (
        "Embed every note chunk that has no embedding of the active model (BRAIN_EMBEDDER) and delete "
        "embeddings of archived notes and removed chunks. Unchanged chunks are never embedded again."
    )

    def handle(self, *args, **options) -> None:
        result = self.run_sync()
        for error in result.errors:
            self.stderr.write(self.style.ERROR(error))
        summary = (
            f"added {result.added}, deleted {result.deleted}, re-chunked notes {result.rechunked}, "
            f"still pending {result.pending}, errors {len(result.errors)}"
        )
        if result.errors:
            raise CommandError(f"Embedding sync incomplete: {summary}. Run brain_embed again to finish.")
        self.stdout.write(self.style.SUCCESS(f"Embedding sync done: {summary}."))

    def run_sync(self) -> SyncResult:
        embedder = get_embedder()
        if embedder is None:
            raise CommandError("BRAIN_EMBEDDER is off: set it to local, ollama or openai to embed notes.")
        bar = tqdm(total=0, unit="chunk", desc=f"embedding ({embedder.key})", file=self.stderr, disable=None)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            return sync_embeddings(embedder, progress=progress)
        finally:
            bar.close()
