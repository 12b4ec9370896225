"""The WSGI entry point: Django's own handler, served by any WSGI server.

    granian --interface wsgi hyperguild.wsgi:application --workers 2 --blocking-threads 32
    gunicorn hyperguild.wsgi:application --worker-class gthread --workers 2 --threads 32

`manage.py serve` runs one of these (HYPERGUILD_SERVER; docs/operations.md#web-processes).
"""

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.wsgi import get_wsgi_application

from hyperguild.serving import web_process_environment

# Before Django loads: the secret key, the embedded database (hyperguild.boot), a database pool for this process.
with web_process_environment():
    # The browser UI and the admin need their vendored CSS/JS; the service runs offline with no
    # separate web server in front, so it serves /static/ itself.
    application = StaticFilesHandler(get_wsgi_application())
