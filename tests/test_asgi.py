"""The ASGI application daphne serves: HTTP (with /static/) and websockets through channels."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from lab.asgi import application

# Django's request_started handler checks the database connection an earlier test may have opened.
pytestmark = pytest.mark.django_db


async def _http_get(path: str) -> tuple[int, bytes]:
    """One GET through the ASGI app, as daphne would send it."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }

    requests = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await asyncio.Event().wait()  # the client stays connected until the app is done
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await application(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body


def test_static_files_are_served_by_the_asgi_app() -> None:
    status, body = async_to_sync(_http_get)("/static/lab.css")
    assert status == 200
    assert b"prefers-color-scheme: dark" in body


def test_a_missing_static_file_is_404() -> None:
    status, _ = async_to_sync(_http_get)("/static/no-such-file.css")
    assert status == 404


def test_a_websocket_to_an_unknown_path_is_refused() -> None:
    async def connect() -> bool:
        communicator = WebsocketCommunicator(
            application, "/ws/nowhere/", headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
        )
        try:
            connected, _ = await communicator.connect()
        except ValueError:  # URLRouter: no route found
            return False
        await communicator.disconnect()
        return bool(connected)

    assert async_to_sync(connect)() is False
