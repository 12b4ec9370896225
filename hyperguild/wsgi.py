"""The WSGI entry point: Django's own handler, served by any WSGI server.

    granian --interface wsgi hyperguild.wsgi:application --workers 2 --blocking-threads 32
    gunicorn hyperguild.wsgi:application --worker-class gthread --workers 2 --threads 32

`manage.py serve` runs one of these (HYPERGUILD_SERVER; docs/operations.md#web-processes).
"""

import os

# Web processes borrow database connections from a pool (HYPERGUILD_DB_POOL connections at most,
# per process) instead of opening one per request; 0 turns it off. Read when settings load, below.
_POOL_DEFAULT_SET_HERE = "HYPERGUILD_DB_POOL" not in os.environ
os.environ.setdefault("HYPERGUILD_DB_POOL", "8")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")

from django.contrib.staticfiles.handlers import StaticFilesHandler  # noqa: E402 (after the pool default)
from django.core.wsgi import get_wsgi_application  # noqa: E402

# The browser UI and the admin need their vendored CSS/JS; the service runs offline with no
# separate web server in front, so it serves /static/ itself.
application = StaticFilesHandler(get_wsgi_application())

if _POOL_DEFAULT_SET_HERE:
    # The web default must not leak into processes started from this one (a django-q2 cluster
    # forks its workers: a pool opened before the fork would share its sockets between them).
    os.environ.pop("HYPERGUILD_DB_POOL", None)
