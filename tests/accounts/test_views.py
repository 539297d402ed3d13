"""The account page and API tokens in the browser's pages: create (secret shown once), list, revoke."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from lab.accounts.models import ApiToken, Role, set_role
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def _client(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def test_the_account_page_says_who_you_are_and_your_role(db: None) -> None:
    ada = make_user("ada")
    page = _client(ada).get("/account/").content.decode()
    assert "<h1>ada</h1>" in page
    assert '<span class="badge " id="role">student</span>' in page
    assert "watch the demos you joined" in page
    set_role(ada, Role.INSTRUCTOR)
    page = _client(ada).get("/account/").content.decode()
    assert 'id="role">instructor</span>' in page
    assert 'href="/account/tokens/"' in page
    assert 'href="/api/docs"' in page


def test_anonymous_people_are_sent_to_the_login(db: None) -> None:
    for url in ("/account/", "/account/tokens/"):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")


def test_a_new_token_shows_its_secret_once_and_stores_only_a_hash(db: None) -> None:
    ada = make_user("ada")
    client = _client(ada)
    made = client.post("/account/tokens/", {"name": "failover script"})
    assert made.status_code == 201
    assert "no-store" in made["Cache-Control"]
    page = made.content.decode()
    secret = re.search(r'id="token-secret" readonly value="(klab_[^"]+)"', page)
    assert secret is not None
    token = ApiToken.objects.get(user=ada)
    assert token.name == "failover script"
    assert secret.group(1).startswith(token.prefix)
    assert secret.group(1) not in (token.digest, token.prefix)
    # The list shows it, but never the secret again.
    listed = client.get("/account/tokens/").content.decode()
    assert "failover script" in listed
    assert f"{token.prefix}…" in listed
    assert '<span class="muted">never</span>' in listed  # not used yet
    assert "✓ active" in listed
    assert secret.group(1) not in listed
    assert ApiToken.authenticate(secret.group(1)) == ada
    assert '<span class="muted">never</span>' not in client.get("/account/tokens/").content.decode()


def test_a_token_without_a_name_is_refused_beside_the_field(db: None) -> None:
    ada = make_user("ada")
    refused = _client(ada).post("/account/tokens/", {"name": "   "})
    assert refused.status_code == 400
    page = refused.content.decode()
    assert 'aria-invalid="true" aria-describedby="token-name-error"' in page
    assert 'id="token-name-error" role="alert">A token needs a name (what it is for).</span>' in page
    too_long = _client(ada).post("/account/tokens/", {"name": "x" * 101})
    assert too_long.status_code == 400
    assert not ApiToken.objects.exists()


def test_revoke_a_token_and_only_your_own(db: None) -> None:
    ada, grace = make_user("ada"), make_user("grace")
    token, secret = ApiToken.issue(ada, "laptop")
    assert _client(grace).post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert _client(ada).get(f"/account/tokens/{token.pk}/revoke/").status_code == 405
    assert ApiToken.authenticate(secret) == ada
    response = _client(ada).post(f"/account/tokens/{token.pk}/revoke/", follow=True)
    assert response.redirect_chain == [("/account/tokens/", 302)]
    page = response.content.decode()
    assert "Token laptop (" in page
    assert "revoked: it no longer works" in page
    assert "✕ revoked" in page
    assert ApiToken.authenticate(secret) is None
    again = _client(ada).post(f"/account/tokens/{token.pk}/revoke/", follow=True).content.decode()
    assert "was already revoked" in again


def test_token_forms_need_the_csrf_token(db: None) -> None:
    ada = make_user("ada")
    token, _ = ApiToken.issue(ada, "laptop")
    client = Client(enforce_csrf_checks=True)
    client.force_login(ada)  # type: ignore[arg-type]
    assert client.post("/account/tokens/", {"name": "x"}).status_code == 403
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 403
    page = client.get("/account/tokens/").content.decode()
    # Log out (in the header), create, and the one token's revoke button: each form carries the token.
    assert page.count('name="csrfmiddlewaretoken"') == 3
    assert ApiToken.objects.filter(revoked__isnull=True).count() == 1
