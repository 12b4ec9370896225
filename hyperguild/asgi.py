"""The ASGI entry point: Django's own handler, served by any ASGI server.

uvicorn hyperguild.asgi:application --workers 2      # what `manage.py serve` runs (docs/operations.md)
"""

import os

# Web processes borrow database connections from a pool (HYPERGUILD_DB_POOL connections at most,
# per process) instead of opening one per request; 0 turns it off. Read when settings load, below.
_POOL_DEFAULT_SET_HERE = "HYPERGUILD_DB_POOL" not in os.environ
os.environ.setdefault("HYPERGUILD_DB_POOL", "8")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402 (after the pool default)
from django.core.asgi import get_asgi_application  # noqa: E402

# The browser UI and the admin need their vendored CSS/JS; the service runs offline with no
# separate web server in front, so it serves /static/ itself.
application = ASGIStaticFilesHandler(get_asgi_application())

if _POOL_DEFAULT_SET_HERE:
    # The web default must not leak into processes started from this one (a django-q2 cluster
    # forks its workers: a pool opened before the fork would share its sockets between them, so
    # a killed worker's advisory locks would outlive it).
    os.environ.pop("HYPERGUILD_DB_POOL", None)
