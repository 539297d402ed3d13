"""Generated requests for every operation of /api/openapi.json (schemathesis): no 500, answers as documented,
and a request the document calls valid is never refused as bad input (schemathesis' "positive data
acceptance": a 400 for it fails the test; the cluster may still refuse it, with a 404 or a 409).

One memory-store lab serves the whole run; path parameters name it (and its topic orders, its group
audit, broker 1..3) half the time, so generated bodies reach the engine, not only the 404 for an
unknown lab. Deleting that lab is left to the generated (unknown) slugs, so it stays for the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
import yaml
from django.conf import settings as django_settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from pytest_django.fixtures import Settings
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from lab.models import Lab
from lab.runtime.commands import records, topics
from lab.scenarios.format import ScenarioError, parse
from tests.api.helpers import Api, ok

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]

EXAMPLES = 40


def _keep_the_tests_connection() -> None:
    """As Django's test client does: a request's start and end must not close the test's database
    connection (on a file database, closing it ends the test's transaction). Django's test client
    connects the hooks again after each of its own requests, so this runs before each generated one."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)


@pytest.fixture
def quiet_wsgi(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Iterator[None]:
    _keep_the_tests_connection()
    settings.LAB_MAX_LABS_PER_USER = 3  # generated labs are real clusters: a few at most
    # A killed cluster leaves produces and topic changes pending: do not wait long.
    monkeypatch.setattr(records, "WAIT_S", 0.3)
    monkeypatch.setattr(topics, "WAIT_S", 0.3)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def audit(quiet_wsgi: None, ada: Api, lab: Lab) -> Lab:
    """Ada's lab, with a group audit that has committed offsets."""
    ok(ada.post(f"/labs/{lab.slug}/topics/orders/consume", {"group": "audit"}))
    return lab


# The document needs no database and no token: load it once, through the WSGI app as a client would.
schema = schemathesis.openapi.from_wsgi("/api/openapi.json", WSGIHandler())

KNOWN = {"topic": "orders", "group": "audit"}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_generated_request_is_a_server_error(case: Any, ada: Api, audit: Lab) -> None:
    lab = audit
    meta = case.meta
    params = case.path_parameters or {}
    deleting_the_lab = case.method.upper() == "DELETE" and case.path == "/api/labs/{slug}"
    negative_path = meta is not None and meta.is_negative_at(ParameterLocation.PATH)
    if "slug" in params and not deleting_the_lab and not negative_path and hash(repr(case.body)) % 2 == 0:
        params["slug"] = lab.slug
        for name, value in KNOWN.items():
            if name in params:
                params[name] = value
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "host"}
    # A generated Host header is Django's ALLOWED_HOSTS check (an HTML 400 before the API), not API input.
    case.headers = headers
    if meta is not None and meta.is_negative_at(ParameterLocation.HEADER):
        auth = {}  # the case is about its headers (the token among them): send them as generated
    else:
        auth = {"Authorization": f"Bearer {ada.secret}"}
    _keep_the_tests_connection()
    response = case.call(headers=auth)
    excluded: list[Any] = []
    if len(response.request.body or b"") > django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        # Too large to read, whatever it holds: the body's size, not its data, is refused (413);
        # without a token the caller is refused first (401), before the server reads a stranger's body.
        expected = 413 if auth else 401
        assert response.status_code == expected, (response.status_code, response.content[:300])
        excluded += [positive_data_acceptance, negative_data_rejection]
    elif _not_a_scenario(case):
        # The one rule a JSON schema cannot hold: a scenario file's text must be a scenario (a 400
        # naming the line otherwise). Every other schema-valid request must be taken.
        excluded.append(positive_data_acceptance)
    case.validate_response(response, headers=auth, excluded_checks=excluded)


def _not_a_scenario(case: Any) -> bool:
    body = case.body
    if (
        case.path != "/api/scenarios/runs"
        or not isinstance(body, dict)
        or not isinstance(body.get("yaml"), str)
    ):
        return False
    try:
        parse(body["yaml"])
    except (ScenarioError, yaml.YAMLError):
        return True
    return False
