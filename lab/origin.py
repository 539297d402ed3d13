"""Websockets from the site's own pages only.

A browser sends a site's cookies along with a websocket any page opens to it, so a page elsewhere
could watch a lab with the visitor's session (cross-site websocket hijacking). The handshake's
Origin must therefore be the site's own: the scheme (``ws`` is ``http``, ``wss`` or a TLS proxy's
forwarded scheme is ``https``), host and port the request came to, with a Host the site serves
(``ALLOWED_HOSTS``), or one of ``CSRF_TRUSTED_ORIGINS``: the rules Django's CSRF check applies to
a form's Origin. channels' ``AllowedHostsOriginValidator`` compares host names only, so a page on
another port of the same machine passed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

# Close code of a refused handshake (the browser sees the handshake fail; tests see the code).
ORIGIN_REFUSED = 4403

DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]  # scheme, host, port


def parse_origin(text: str) -> Origin | None:
    """``("http", "127.0.0.1", 8000)`` from ``http://127.0.0.1:8000``; None for anything else."""
    try:
        parts = urlsplit(text.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    return parts.scheme, parts.hostname, port if port is not None else DEFAULT_PORTS[parts.scheme]


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


def _secure(scope: dict[str, Any]) -> bool:
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy: tuple[str, str] | None = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy is None:
        return False
    meta_name, value = proxy
    header = meta_name.removeprefix("HTTP_").replace("_", "-").lower().encode()
    return _header(scope, header).split(",")[0].strip() == value


def _trusted(origin: str, parsed: Origin) -> bool:
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "://*." in trusted:
            scheme, _, pattern = trusted.lower().partition("://*")
            netloc = urlsplit(origin.lower()).netloc
            if scheme == parsed[0] and is_same_domain(netloc, pattern):
                return True
        elif parse_origin(trusted) == parsed:
            return True
    return False


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Is this websocket handshake from the site's own origin (or a trusted one)?"""
    origin = _header(scope, b"origin")
    parsed = parse_origin(origin)
    host = _header(scope, b"host")
    domain, _ = split_domain_port(host)
    if parsed is None or not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    own = parse_origin(("https" if _secure(scope) else "http") + "://" + host)
    return parsed == own or _trusted(origin, parsed)


class _Refuse(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.close(code=ORIGIN_REFUSED)


class SameOriginValidator:
    """ASGI middleware: a websocket whose Origin is not the site's own is refused before anything runs."""

    def __init__(self, application: Any) -> None:
        self.application = application
        self.refuse = _Refuse.as_asgi()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await self.refuse(scope, receive, send)
        return await self.application(scope, receive, send)
