"""What an entry point does before Django reads its settings: the one place that starts and writes.

Importing `hyperguild.settings` starts no process and writes no file (docs/architecture.md, "Entry points").
Whatever must exist before the service runs is made here, by `prepare_process()`, which every entry point
calls first: `manage.py` (and so `serve`, `qcluster` and every command), the WSGI and ASGI modules (each web
server process), the test session (tests/session_start.py) and scripts that set Django up themselves
(`setup_django()`).

- The secret key: HYPERGUILD_SECRET_KEY, or one made once under the data folder (`secret_key`, mode 600) so
  sessions survive restarts without a secret ever living in the repository.
- The database: with DATABASE_URL unset, the embedded PostgreSQL under the data folder runs
  (`hyperguild.lib.embedded_db`), unless HYPERGUILD_EMBEDDED_DB_URL names a server someone else supervises
  (`serve` gives it to its web and worker processes: only serve starts that server again). The entry point
  that had to start it stops it when it ends (`release_process()`): `manage.py` after its command, the test
  session at its end; `serve` stops it on Ctrl-C.

Settings read both without making them: a missing key file gives a key for that process only (a type checker
or a bare `import` gets settings that load), and the embedded server's address is read from its data folder.
"""

from __future__ import annotations

import atexit
import os
import secrets
from pathlib import Path

import django

from hyperguild.lib.embedded_db import ensure_database, release_database

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY_FILE = "secret_key"
SETTINGS_MODULE = "hyperguild.settings"


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def configured_data_dir() -> Path:
    """HYPERGUILD_DATA_DIR, or var/ of the checkout: where the embedded database, the secret key and runtime
    files live (settings.DATA_DIR is this)."""
    return Path(_env("HYPERGUILD_DATA_DIR") or str(BASE_DIR / "var")).resolve()


def stored_secret_key(data_dir: Path) -> str | None:
    """The key `ensure_secret_key()` keeps in the data folder, or None if there is none yet (reads only)."""
    try:
        key = (data_dir / SECRET_KEY_FILE).read_text().strip()
    except FileNotFoundError:
        return None
    return key or None


def ensure_secret_key(data_dir: Path) -> None:
    """Make the data folder's secret key once, unless HYPERGUILD_SECRET_KEY is set."""
    if _env("HYPERGUILD_SECRET_KEY") or stored_secret_key(data_dir):
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    # Written whole under another name (mode 600), then linked into place: a process that starts meanwhile
    # reads either no key or the whole key, and two that start at once keep the first one's.
    draft = data_dir / f".{SECRET_KEY_FILE}.{os.getpid()}"
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secrets.token_urlsafe(50))
    try:
        os.link(draft, data_dir / SECRET_KEY_FILE)
    except FileExistsError:
        pass
    finally:
        draft.unlink()


def prepare_process() -> None:
    """The start of every entry point, before Django reads its settings: the secret key exists and, without
    DATABASE_URL, the embedded PostgreSQL runs. Safe to call more than once and from many processes at once."""
    data_dir = configured_data_dir()
    ensure_secret_key(data_dir)
    if not (_env("DATABASE_URL") or _env("BRAIN_PG_DSN") or _env("HYPERGUILD_EMBEDDED_DB_URL")):
        ensure_database(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS_MODULE)


def release_process() -> bool:
    """The end of an entry point that ran `prepare_process()`: the embedded PostgreSQL it had to start is stopped
    again, so a one-off command (`manage.py brain_import` while the server is down) or a test session leaves
    nothing running. A server that was running before is left alone, and `serve` stops the one it owns itself
    (this finds nothing left to stop). True if it stopped one."""
    data_dir = configured_data_dir()
    return release_database(data_dir)


def setup_django() -> None:
    """`prepare_process()` and `django.setup()`: for scripts that run Django outside manage.py (bench/). The
    embedded PostgreSQL the script had to start stops when it exits (`release_process()`, as manage.py does)."""
    prepare_process()
    atexit.register(release_process)
    django.setup()
