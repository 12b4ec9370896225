import os

# Web processes borrow database connections from a pool (HYPERGUILD_DB_POOL connections at most,
# per process) instead of opening one per request; 0 turns it off. Read when settings load, below.
_POOL_DEFAULT_SET_HERE = "HYPERGUILD_DB_POOL" not in os.environ
os.environ.setdefault("HYPERGUILD_DB_POOL", "8")

import django  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402 (after the pool default)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")
django.setup(set_prefix=False)

from hyperguild.asgi_handler import SyncChainASGIHandler  # noqa: E402 (after setup)

# One synchronous middleware chain per request (see asgi_handler). The browser UI and the
# admin need their vendored CSS/JS; the service runs offline with no separate web server
# in front, so it serves /static/ itself.
application = ASGIStaticFilesHandler(SyncChainASGIHandler())

if _POOL_DEFAULT_SET_HERE:
    # The web default must not leak into processes started from this one (a django-q2 cluster
    # forks its workers: a pool opened before the fork would share its sockets between them, so
    # a killed worker's advisory locks would outlive it).
    os.environ.pop("HYPERGUILD_DB_POOL", None)
