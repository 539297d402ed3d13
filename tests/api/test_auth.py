"""Bearer tokens, and the API's documents: who gets in, who gets a 401, and the docs served offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from lab.accounts.models import ApiToken
from tests.api.helpers import Api, error, ok
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def test_a_token_says_who_it_belongs_to_and_is_marked_used(ada: Api) -> None:
    token = ApiToken.objects.get(user=ada.user)
    assert token.last_used is None
    me = ok(ada.get("/me"))
    assert me == {"username": "ada", "role": "student", "token": token.prefix}
    token.refresh_from_db()
    assert token.last_used is not None


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer",
        "Bearer klab_not-a-real-token",
        "Bearer not-even-our-prefix",
        "Basic YWRhOnMzY3JldC1lbm91Z2g=",
        "Bearer " + "x" * 5000,
    ],
)
def test_no_token_or_a_bad_one_is_a_401_in_json(ada: Api, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    response = Client().get("/api/labs", headers=headers)
    body = error(response, 401, "UNAUTHORIZED")
    assert "Bearer" in body["message"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_token_or_an_inactive_user_is_refused(db: None) -> None:
    user = make_user("ada")
    first, second = Api(user), Api(user)
    ok(first.get("/me"))
    ApiToken.objects.get(prefix=first.secret[:11]).revoke()
    error(first.get("/me"), 401, "UNAUTHORIZED")
    ok(second.get("/me"))
    user.is_active = False  # type: ignore[attr-defined]
    user.save()  # type: ignore[attr-defined]
    error(second.get("/me"), 401, "UNAUTHORIZED")


def test_a_logged_in_browser_session_is_not_an_api_credential(ada: Api) -> None:
    client = Client()
    client.force_login(ada.user)  # type: ignore[arg-type]
    error(client.get("/api/labs"), 401, "UNAUTHORIZED")


def test_the_openapi_document_describes_bearer_auth_and_every_resource(db: None) -> None:
    doc = ok(Client().get("/api/openapi.json"))
    assert doc["info"]["title"] == "Kafka Lab API"
    schemes = doc["components"]["securitySchemes"]
    assert schemes["TokenAuth"] == {"type": "http", "scheme": "bearer"}
    paths = set(doc["paths"])
    for path in (
        "/api/labs",
        "/api/labs/{slug}/topics/{topic}/configs",
        "/api/labs/{slug}/topics/{topic}/records",
        "/api/labs/{slug}/topics/{topic}/consume",
        "/api/labs/{slug}/groups/{group}/reset-offsets",
        "/api/labs/{slug}/brokers/{broker}/kill",
        "/api/labs/{slug}/clock/step",
        "/api/labs/{slug}/events",
        "/api/scenarios/runs/{run_id}/result",
    ):
        assert path in paths, path
    # Every operation documents its errors' shape.
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            assert {"400", "401", "403", "404", "409", "504"} <= set(operation["responses"]), (method, path)


def test_the_interactive_docs_load_swagger_ui_from_the_lab_not_a_cdn(db: None) -> None:
    page = Client().get("/api/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "/static/ninja/swagger-ui.css" in html
    assert "cdn" not in html.lower()
    assert "https://" not in html
    for name in ("ninja/swagger-ui-bundle.js", "ninja/swagger-ui.css", "ninja/swagger-ui-init.js"):
        found = finders.find(name)
        assert found, name
        assert Path(str(found)).stat().st_size > 1000, name
