"""The ASGI entry point daphne serves: HTTP through Django, websockets through channels.

``lab.serve`` (``make run``) runs daphne on ``lab.asgi:application``.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")

# Set Django up before anything imports models (consumers, auth middleware).
django_http = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from lab.origin import SameOriginValidator  # noqa: E402
from lab.urls import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # There is no separate web server in front of the lab: serve /static/ here too.
        "http": ASGIStaticFilesHandler(django_http),
        # Only the site's own pages (scheme, host and port) may open a websocket: lab.origin.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
