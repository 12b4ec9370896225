"""A scratch database for evaluation runs and benchmarks: the user's notes are never read or written."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from typing import IO

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import OutputWrapper
from django.db import DatabaseError, connections
from django.db.migrations.loader import MigrationLoader

from brain import bm25, vectors
from brain.models import BrainVersion

TEMPLATE_PREFIX = "hyperguild_eval_template_"
KEPT_PREFIX = "hyperguild_eval_kept_"


class ScratchDatabase:
    """Create `hyperguild_eval_<pid>` on the service's PostgreSQL, point the default alias at it, drop it after.

    The scratch database is a copy of a migrated template (`hyperguild_eval_template_<key>`, the key a hash of
    the migrations on disk): migrating once per schema, not once per run, saves most of a run's start-up (and
    most of the time of the tests that run brain_eval and bench/load.py). The template is made under a name of its
    own and renamed when ready, so two runs making it at once never copy half of one; templates of older
    schemas are dropped when a new one is made. Nothing ever connects to a template but the copy.

    With `kept` (a label such as "notes_1000000_11") the copy is made from a kept database instead,
    `hyperguild_eval_kept_<label>_<key>`, made once from the template and filled by `fill()`: a benchmark that
    stores a million notes (a quarter of an hour) stores them once and copies them for each later run
    (`filled` says whether this run filled it). A kept database of an older schema is dropped when the
    same label is kept again.
    """

    def __init__(
        self,
        stdout: OutputWrapper | IO[str] | None = None,
        *,
        kept: str | None = None,
        fill: Callable[[], object] | None = None,
    ) -> None:
        self.stdout = stdout
        self.connection = connections["default"]
        self.original = self.connection.settings_dict["NAME"]
        self.name = f"hyperguild_eval_{os.getpid()}"
        self.kept = kept
        self.fill = fill
        self.filled = False

    def __enter__(self) -> ScratchDatabase:
        template = self._template()
        if self.kept is not None:
            template = self._kept(template)
        with self.connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{self.name}" TEMPLATE "{template}"')
        self._switch(self.name)
        bm25.reset()
        vectors.forget_indexes()
        return self

    def _template(self) -> str:
        migrations = sorted(
            f"{app}.{name}" for app, name in MigrationLoader(None, ignore_no_migrations=True).disk_migrations
        )
        key = hashlib.sha256("\n".join(migrations).encode()).hexdigest()[:12]
        return self._made_once(
            f"{TEMPLATE_PREFIX}{key}",
            TEMPLATE_PREFIX,
            None,
            lambda: call_command("migrate", verbosity=0, interactive=False),
        )

    def _kept(self, template: str) -> str:
        name = f"{KEPT_PREFIX}{self.kept}_{template.removeprefix(TEMPLATE_PREFIX)}"
        return self._made_once(name, f"{KEPT_PREFIX}{self.kept}_", template, self._fill_kept)

    def _fill_kept(self) -> None:
        if self.fill is not None:
            self.fill()
        self.filled = True
        directory = bm25.shared_dir(BrainVersion.current_with_corpus()[1])
        if directory is not None:  # a base the filling built: each copy builds its own
            shutil.rmtree(directory, ignore_errors=True)

    def _made_once(self, name: str, like: str, template: str | None, make: Callable[[], object]) -> str:
        """Database `name`, made once: under a name of its own (`make()` runs connected to it) and renamed when
        ready, so two runs making it at once never copy half of one, and dropped if `make()` is interrupted.
        Databases named `like…` of the same length (an older schema's, never one being made) are dropped."""
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{like}%"])
            existing = {row[0] for row in cursor.fetchall()}
        if name in existing:
            return name
        building = f"{name}_{os.getpid()}"
        with self.connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{building}"' + (f' TEMPLATE "{template}"' if template else ""))
        try:
            self._switch(building)
            bm25.reset()
            make()
        except BaseException:  # interrupted: a half-made database must never be copied
            self._switch(self.original)
            with self.connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
            raise
        finally:
            self._switch(self.original)
            bm25.reset()
        with self.connection.cursor() as cursor:
            try:
                cursor.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
            except DatabaseError:  # another run made it meanwhile: use theirs
                cursor.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
            for old in existing:
                if len(old) == len(name):
                    cursor.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
        return name

    def __exit__(self, *exc: object) -> None:
        try:
            corpus_id = BrainVersion.current_with_corpus()[1]
        except Exception:  # noqa: BLE001 — leaving anyway; a stray segment folder is harmless
            corpus_id = ""
        self._switch(self.original)
        bm25.reset()
        directory = bm25.shared_dir(corpus_id)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)  # the scratch corpus's shared base, if it had one
        with self.connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def _switch(self, name: str) -> None:
        self.connection.close()
        self.connection.settings_dict["NAME"] = name
        settings.DATABASES["default"]["NAME"] = name
