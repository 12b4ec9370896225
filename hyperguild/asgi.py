import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")
# The browser UI and the admin need their vendored CSS/JS; the service runs
# offline with no separate web server in front, so it serves /static/ itself.
application = ASGIStaticFilesHandler(get_asgi_application())
