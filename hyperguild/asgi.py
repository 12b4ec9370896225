"""The ASGI entry point: Django's own handler, served by any ASGI server.

uvicorn hyperguild.asgi:application --workers 2      # what `manage.py serve` runs (docs/operations.md)
"""

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from hyperguild.serving import web_process_environment

# Before Django loads: the secret key, the embedded database (hyperguild.boot), a database pool for this process.
with web_process_environment():
    # The browser UI and the admin need their vendored CSS/JS; the service runs offline with no
    # separate web server in front, so it serves /static/ itself.
    application = ASGIStaticFilesHandler(get_asgi_application())
