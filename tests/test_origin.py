"""A lab's websocket opens only from the site's own pages: the Origin's scheme, host and port must be
the site's own (the request's Host) or one of CSRF_TRUSTED_ORIGINS; a page elsewhere is refused even
with a valid session cookie (a browser sends the cookie along to any page's websocket)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client
from pytest_django.fixtures import Settings

from lab.asgi import application
from lab.labs import live_of
from lab.models import Lab
from lab.origin import ORIGIN_REFUSED
from tests.labhelpers import make_lab, make_user

# Channels closes the database connection around each of a consumer's queries, which would end a
# test's own transaction (the database is a file, as the lab's is): these tests commit their rows.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("stop_labs")]


@pytest.fixture
def watched(settings: Settings) -> tuple[Lab, Client]:
    """A running lab and its owner's logged-in client."""
    settings.LAB_ZOOKEEPER = ""
    settings.ALLOWED_HOSTS = ["127.0.0.1", "lab.example.org"]
    owner = make_user("ada")
    client = Client()
    client.force_login(owner)  # type: ignore[arg-type]
    lab = make_lab(owner)
    live_of(lab).ready.result(30)
    return lab, client


def _connect(
    lab: Lab, client: Client, *, host: str, origin: str | None, scheme: str = "ws", **more: str
) -> tuple[bool, int | None]:
    headers = [
        (b"host", host.encode()),
        (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
    ]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers += [(name.encode(), value.encode()) for name, value in more.items()]

    async def attempt() -> tuple[bool, int | None]:
        communicator = WebsocketCommunicator(application, f"/ws/labs/{lab.slug}/", headers=headers)
        communicator.scope["scheme"] = scheme
        connected, code = await communicator.connect(timeout=10)
        await communicator.disconnect()
        return connected, code

    result: tuple[bool, int | None] = async_to_sync(attempt)()
    return result


def test_the_sites_own_origin_is_accepted(watched: tuple[Lab, Client]) -> None:
    lab, client = watched
    assert _connect(lab, client, host="127.0.0.1:8000", origin="http://127.0.0.1:8000")[0] is True
    assert _connect(lab, client, host="127.0.0.1", origin="http://127.0.0.1")[0] is True
    # The default port, written or not, is the same origin.
    assert _connect(lab, client, host="127.0.0.1:80", origin="http://127.0.0.1")[0] is True
    # Over TLS the site's origin is https.
    assert _connect(lab, client, host="lab.example.org", origin="https://lab.example.org", scheme="wss")[0]


def test_another_port_on_the_same_host_is_refused(watched: tuple[Lab, Client]) -> None:
    lab, client = watched
    assert _connect(lab, client, host="127.0.0.1:8000", origin="http://127.0.0.1:9999") == (
        False,
        ORIGIN_REFUSED,
    )


def test_another_scheme_is_refused(watched: tuple[Lab, Client]) -> None:
    lab, client = watched
    assert _connect(lab, client, host="127.0.0.1:8000", origin="https://127.0.0.1:8000") == (
        False,
        ORIGIN_REFUSED,
    )
    assert _connect(lab, client, host="lab.example.org", origin="http://lab.example.org", scheme="wss") == (
        False,
        ORIGIN_REFUSED,
    )


def test_another_host_is_refused(watched: tuple[Lab, Client]) -> None:
    lab, client = watched
    assert _connect(lab, client, host="127.0.0.1:8000", origin="http://evil.example:8000") == (
        False,
        ORIGIN_REFUSED,
    )
    # A host that is also allowed is still another site.
    assert _connect(lab, client, host="127.0.0.1:8000", origin="http://lab.example.org:8000") == (
        False,
        ORIGIN_REFUSED,
    )


def test_no_origin_or_a_malformed_one_is_refused(watched: tuple[Lab, Client]) -> None:
    lab, client = watched
    assert _connect(lab, client, host="127.0.0.1:8000", origin=None) == (False, ORIGIN_REFUSED)
    assert _connect(lab, client, host="127.0.0.1:8000", origin="http://127.0.0.1:port") == (
        False,
        ORIGIN_REFUSED,
    )
    assert _connect(lab, client, host="127.0.0.1:8000", origin="null") == (False, ORIGIN_REFUSED)


def test_a_host_the_site_does_not_serve_is_refused_even_from_itself(watched: tuple[Lab, Client]) -> None:
    lab, client = watched
    # DNS rebinding: a page on evil.example whose name now points at the lab.
    assert _connect(lab, client, host="evil.example:8000", origin="http://evil.example:8000") == (
        False,
        ORIGIN_REFUSED,
    )


def test_csrf_trusted_origins_are_accepted(watched: tuple[Lab, Client], settings: Settings) -> None:
    lab, client = watched
    settings.CSRF_TRUSTED_ORIGINS = ["https://lab.example.org", "https://*.class.example.org"]
    assert _connect(lab, client, host="127.0.0.1:8000", origin="https://lab.example.org")[0] is True
    assert _connect(lab, client, host="127.0.0.1:8000", origin="https://room1.class.example.org")[0] is True
    assert _connect(lab, client, host="127.0.0.1:8000", origin="http://lab.example.org") == (
        False,
        ORIGIN_REFUSED,
    )
    assert _connect(lab, client, host="127.0.0.1:8000", origin="https://lab.example.org:8443") == (
        False,
        ORIGIN_REFUSED,
    )


def test_behind_a_tls_proxy_the_forwarded_scheme_counts(
    watched: tuple[Lab, Client], settings: Settings
) -> None:
    lab, client = watched
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    forwarded = {"x-forwarded-proto": "https"}
    assert _connect(lab, client, host="lab.example.org", origin="https://lab.example.org", **forwarded)[0]
    assert _connect(lab, client, host="lab.example.org", origin="http://lab.example.org", **forwarded) == (
        False,
        ORIGIN_REFUSED,
    )
