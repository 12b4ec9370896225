"""manage.py brain_embed: embed new and changed note chunks now, with a progress bar."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from brain.backlog import describe_eta, status
from brain.embedding_sync import SyncResult, sync_embeddings
from hyperguild.lib.embedders import get_embedder


class Command(BaseCommand):
    help = (
        "Embed every note chunk that has no embedding of the active model (BRAIN_EMBEDDER) and delete "
        "embeddings of archived notes and removed chunks. Unchanged chunks are never embedded again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--status",
            action="store_true",
            help="embed nothing: print embedded and pending chunks per model and the time left at the current rate",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["status"]:
            for line in self.status_lines():
                self.stdout.write(line)
            return
        result = self.run_sync(show_progress=not options.get("no_progress"))
        for error in result.errors:
            self.stderr.write(self.style.ERROR(error))
        summary = (
            f"added {result.added}, deleted {result.deleted}, re-chunked notes {result.rechunked}, "
            f"still pending {result.pending}, errors {len(result.errors)}"
        )
        if result.errors:
            raise CommandError(f"Embedding sync incomplete: {summary}. Run brain_embed again to finish.")
        self.stdout.write(self.style.SUCCESS(f"Embedding sync done: {summary}."))

    def status_lines(self) -> list[str]:
        report = status()
        lines = []
        active = report["active"]
        if active is None:
            lines.append("BRAIN_EMBEDDER is off: nothing is embedded and search is BM25 only.")
        else:
            rate = active["chunks_per_second"]
            lines.append(
                f"{active['model']} (active): {active['embedded_chunks']} chunks embedded, "
                f"{active['pending_chunks']} pending, {active['notes_waiting']} notes waiting to be chunked; "
                f"rate {f'{rate} chunks/s' if rate is not None else 'unknown'}; "
                f"time left {describe_eta(active['eta_seconds'])}"
            )
        for row in report["models"]:
            if active is None or row["model"] != active["model"]:
                lines.append(f"{row['model']}: {row['embedded_chunks']} chunks embedded (not the active model)")
        if active is not None and active["complete"]:
            lines.append(self.style.SUCCESS("Embeddings complete: vector search covers every note."))
        elif active is not None:
            lines.append(self.style.WARNING("Backlog not empty: search answers are partial until it is."))
        return lines

    def run_sync(self, *, show_progress: bool = True) -> SyncResult:
        embedder = get_embedder()
        if embedder is None:
            raise CommandError("BRAIN_EMBEDDER is off: set it to local, ollama or openai to embed notes.")
        bar = tqdm(
            total=0,
            unit="chunk",
            desc=f"embedding ({embedder.key})",
            file=self.stderr,
            disable=None if show_progress else True,
        )

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            return sync_embeddings(embedder, progress=progress)
        finally:
            bar.close()
