"""Who may do what, for every route of the site: pages, htmx endpoints, API operations, the websocket.

Every URL pattern (walked from the URLconf), every operation of the API's OpenAPI document and every
websocket route must be classified below; one that is not fails ``test_every_route_is_classified``, so
an endpoint added later is checked from the day it appears. For each kind:

- anonymous: pages redirect to the login (an htmx request may get a 401 instead), the API answers 401,
  the websocket is closed (4401);
- another person's lab: 404, the same as no such lab (its existence does not leak);
- a lab someone may see but not change (an instructor looking at a student's lab): 403 on any change;
- a student on an instructor's page or action: 403;
- an instructor managing accounts (People): a student 403; an administrator's account or their own 403;
- the owner (or the instructor, for instructor pages): allowed, meaning no login redirect, 401, 403 or
  permission 404, and no 500;
- every POST without a CSRF token is refused (403) before the view runs; the API is the exception, as it
  takes no cookies, only bearer tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from pytest_django.fixtures import Settings

from lab.accounts.models import ApiToken, Role, set_role
from lab.asgi import application
from lab.consumers import NOT_LOGGED_IN, NOT_YOURS
from lab.labs import live_of
from lab.models import Lab
from lab.urls import websocket_urlpatterns
from tests.api.helpers import Api
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs"), pytest.mark.long(40)]

PUBLIC = "public"  # anyone, logged in or not
LOGIN = "login"  # any logged-in person
OWN = "own"  # a person's own thing that is not a lab (an API token): someone else's is a 404
LAB_VIEW = "lab-view"  # who may see the lab (owner, instructors, a demo's viewers); others 404
LAB_ACT = "lab-act"  # the lab's owner only; a viewer 403, others 404
INSTRUCTOR = "instructor"  # instructors only; a student 403
INSTRUCTOR_LAB = "instructor-lab"  # an instructor's action on their own lab: a student 403 on theirs
PERSON = "person"  # an instructor's change to a student's account; an administrator's or their own 403
ADMIN = "admin"  # Django's admin: staff only, everyone else to the admin's login
EMPTY = "empty"  # a route that serves nothing (ninja's root of the API): 404 for everyone


@dataclass(frozen=True)
class Route:
    kind: str
    method: str = "GET"
    kwargs: dict[str, Any] = field(default_factory=dict)
    given: Callable[[Any], None] | None = None  # what the owner's lab must hold for the route to apply


def _has_tls(world: Any) -> None:
    world.lab.settings = {**world.lab.settings, "listeners": {"SSL": {}}}
    world.lab.save(update_fields=["settings"])


def _plays_a_scenario(world: Any) -> None:
    from lab.classroom.models import ScenarioLab

    ScenarioLab.objects.create(lab=world.lab, scenario="leader-failover")


ROUTES: dict[str, Route] = {
    # lab/urls.py
    "home": Route(LOGIN),
    "login": Route(PUBLIC),
    "logout": Route(PUBLIC, "POST"),
    "lab-new": Route(LOGIN, "POST"),
    "lab": Route(LAB_VIEW),
    "lab-act": Route(LAB_ACT, "POST", {"action": "heal"}),
    "lab-delete": Route(LAB_ACT, "POST"),
    "lab-ca": Route(LAB_VIEW, given=_has_tls),
    "zookeeper-status": Route(LOGIN),
    # lab/accounts
    "account": Route(LOGIN),
    "account-tokens": Route(LOGIN),
    "account-token-revoke": Route(OWN, "POST"),
    "account-password": Route(LOGIN),
    # lab/accounts/people.py: the class's accounts
    "people": Route(INSTRUCTOR),
    "people-add": Route(INSTRUCTOR, "POST"),
    "people-password": Route(PERSON, "POST"),
    "people-role": Route(PERSON, "POST"),
    "people-active": Route(PERSON, "POST"),
    # the API's documents (its operations are in API_OPERATIONS)
    "api:openapi-json": Route(PUBLIC),
    "api:openapi-view": Route(PUBLIC),
    "api:api-root": Route(EMPTY),
    # lab/adminpanel: the topic admin panel of a lab
    "adminpanel:topics": Route(LAB_VIEW),
    "adminpanel:topics-table": Route(LAB_VIEW),
    "adminpanel:create": Route(LAB_ACT, "POST"),
    "adminpanel:elect-all": Route(LAB_ACT, "POST"),
    "adminpanel:topic": Route(LAB_VIEW),
    "adminpanel:topic-partitions": Route(LAB_VIEW),
    "adminpanel:topic-config": Route(LAB_ACT, "POST"),
    "adminpanel:topic-grow": Route(LAB_ACT, "POST"),
    "adminpanel:topic-reassign": Route(LAB_ACT, "POST"),
    "adminpanel:topic-elect": Route(LAB_ACT, "POST"),
    "adminpanel:topic-delete": Route(LAB_ACT, "POST", {"topic": "scratch"}),
    "adminpanel:acls": Route(LAB_VIEW),
    "adminpanel:acl-add": Route(LAB_ACT, "POST"),
    "adminpanel:acl-delete": Route(LAB_ACT, "POST"),
    "adminpanel:messages": Route(LAB_VIEW),
    "adminpanel:records": Route(LAB_VIEW),
    "adminpanel:export": Route(LAB_VIEW, kwargs={"fmt": "json"}),
    "adminpanel:produce": Route(LAB_ACT, "POST"),
    "adminpanel:groups": Route(LAB_VIEW),
    "adminpanel:groups-list": Route(LAB_VIEW),
    "adminpanel:group-reset": Route(LAB_ACT, "POST"),
    "adminpanel:users": Route(LAB_VIEW),
    "adminpanel:users-list": Route(LAB_VIEW),
    "adminpanel:user-create": Route(LAB_ACT, "POST"),
    "adminpanel:user-delete": Route(LAB_ACT, "POST"),
    # lab/classroom: exercises, scenarios, demos
    "classroom:exercises": Route(LOGIN),
    "classroom:exercise": Route(LOGIN),
    "classroom:exercise-start": Route(LOGIN, "POST"),
    "classroom:exercise-restart": Route(LOGIN, "POST"),
    "classroom:exercise-answer": Route(LOGIN, "POST", {"question": 0}),
    "classroom:scenarios": Route(LOGIN),
    "classroom:scenario-open": Route(LOGIN, "POST"),
    "classroom:class": Route(INSTRUCTOR),
    "classroom:demo-start": Route(INSTRUCTOR_LAB, "POST"),
    "classroom:demo-end": Route(INSTRUCTOR_LAB, "POST"),
    "classroom:demo-copy": Route(INSTRUCTOR_LAB, "POST"),
    "classroom:demo-viewers": Route(INSTRUCTOR_LAB),
    "classroom:scenario-control": Route(LAB_ACT, "POST", {"action": "pause"}, given=_plays_a_scenario),
    "classroom:demo-join": Route(LOGIN, "POST"),
    "classroom:demo-leave": Route(LOGIN, "POST"),
    "classroom:demo-my-copy": Route(LOGIN),
}

# Values for route parameters no Route names.
DEFAULT_KWARGS: dict[str, Any] = {
    "topic": "orders",
    "exercise": "1-partitions-and-offsets",
    "scenario": "leader-failover",
    "code": "NOCODE",
    "action": "pause",
    "question": 0,
    "fmt": "json",
    "username": "ada",
}

WEBSOCKETS: dict[str, str] = {"lab-ws": LAB_VIEW}

# The API: by (method, path) in its OpenAPI document, the kind and a valid request body.
API_USER = "user"  # any token
API_READ = "read"  # who may see the lab
API_ACT = "act"  # the lab's owner
API_RUN = "run"  # a scenario run: its owner's

API_OPERATIONS: dict[tuple[str, str], tuple[str, Any]] = {
    ("GET", "/api/me"): (API_USER, None),
    ("GET", "/api/labs"): (API_USER, None),
    ("POST", "/api/labs"): (API_USER, {"name": "Scripted", "brokers": 1}),
    ("GET", "/api/labs/{slug}"): (API_READ, None),
    ("DELETE", "/api/labs/{slug}"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/reset"): (API_ACT, None),
    ("GET", "/api/labs/{slug}/topics"): (API_READ, None),
    ("POST", "/api/labs/{slug}/topics"): (API_ACT, {"name": "made", "partitions": 1}),
    ("GET", "/api/labs/{slug}/topics/{topic}"): (API_READ, None),
    ("DELETE", "/api/labs/{slug}/topics/{topic}"): (API_ACT, None),
    ("GET", "/api/labs/{slug}/topics/{topic}/configs"): (API_READ, None),
    ("PATCH", "/api/labs/{slug}/topics/{topic}/configs"): (API_ACT, {"set": {"retention.ms": 60000}}),
    ("POST", "/api/labs/{slug}/topics/{topic}/partitions"): (API_ACT, {"total": 4}),
    ("POST", "/api/labs/{slug}/topics/{topic}/reassign"): (API_ACT, {"plan": {"0": [1, 2, 3]}}),
    ("POST", "/api/labs/{slug}/topics/{topic}/elect-preferred"): (API_ACT, {}),
    ("GET", "/api/labs/{slug}/acls"): (API_READ, {"topic": "orders"}),
    ("POST", "/api/labs/{slug}/acls"): (
        API_ACT,
        {"name": "orders", "principal": "User:alice", "operation": "Read"},
    ),
    ("DELETE", "/api/labs/{slug}/acls"): (
        API_ACT,
        {"name": "orders", "principal": "User:alice", "operation": "Read"},
    ),
    ("POST", "/api/labs/{slug}/topics/{topic}/records"): (API_ACT, {"records": [{"value": "v"}]}),
    ("GET", "/api/labs/{slug}/produce-requests/{request_id}"): (API_ACT, None),
    ("GET", "/api/labs/{slug}/topics/{topic}/records"): (API_READ, {"partition": 0}),
    ("POST", "/api/labs/{slug}/topics/{topic}/consume"): (API_ACT, {"group": "g"}),
    ("GET", "/api/labs/{slug}/groups"): (API_READ, None),
    ("GET", "/api/labs/{slug}/groups/{group}"): (API_READ, None),
    ("POST", "/api/labs/{slug}/groups/{group}/reset-offsets"): (
        API_ACT,
        {"topic": "orders", "to": "earliest"},
    ),
    ("GET", "/api/labs/{slug}/transactions"): (API_READ, None),
    ("POST", "/api/labs/{slug}/transactional-producers"): (
        API_ACT,
        {"producer": "tp", "transactional_id": "tx"},
    ),
    ("POST", "/api/labs/{slug}/transactional-producers/{producer}/begin"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/transactional-producers/{producer}/send"): (API_ACT, {"topic": "orders"}),
    ("POST", "/api/labs/{slug}/transactional-producers/{producer}/commit"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/transactional-producers/{producer}/abort"): (API_ACT, None),
    ("DELETE", "/api/labs/{slug}/transactional-producers/{producer}"): (API_ACT, None),
    ("GET", "/api/labs/{slug}/users"): (API_READ, None),
    ("POST", "/api/labs/{slug}/users"): (API_ACT, {"name": "alice", "password": "alice-secret"}),
    ("DELETE", "/api/labs/{slug}/users/{user}"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/brokers/{broker}/kill"): (API_ACT, {}),
    ("POST", "/api/labs/{slug}/brokers/{broker}/restart"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/brokers/{broker}/pause"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/brokers/{broker}/resume"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/brokers/{broker}/slow"): (API_ACT, {"delay_ms": 100}),
    ("POST", "/api/labs/{slug}/brokers/{broker}/isolate"): (API_ACT, {"from": "brokers"}),
    ("POST", "/api/labs/{slug}/brokers/{broker}/heal"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/brokers/{broker}/shutdown"): (API_ACT, None),
    ("GET", "/api/labs/{slug}/clock"): (API_READ, None),
    ("POST", "/api/labs/{slug}/clock/pause"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/clock/resume"): (API_ACT, None),
    ("POST", "/api/labs/{slug}/clock/step"): (API_ACT, {"ms": 10}),
    ("POST", "/api/labs/{slug}/clock/speed"): (API_ACT, {"rate": 1.0}),
    ("GET", "/api/labs/{slug}/events"): (API_READ, None),
    ("GET", "/api/scenarios"): (API_USER, None),
    ("POST", "/api/scenarios/runs"): (API_USER, {"scenario": "leader-failover"}),
    ("GET", "/api/scenarios/runs/{run_id}"): (API_RUN, None),
    ("GET", "/api/scenarios/runs/{run_id}/result"): (API_RUN, None),
    ("POST", "/api/scenarios/runs/{run_id}/cancel"): (API_RUN, None),
}


# ----------------------------------------------------------------------------- the routes there are


def _walk(
    patterns: list[URLPattern | URLResolver], prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, str]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            space = namespace
            if entry.namespace:
                space = f"{namespace}:{entry.namespace}" if namespace else entry.namespace
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern), space)
        else:
            name = f"{namespace}:{entry.name}" if namespace and entry.name else (entry.name or "")
            yield name, prefix + str(entry.pattern)


def http_routes() -> list[tuple[str, str]]:
    return list(_walk(get_resolver().url_patterns))


def api_document() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Client().get("/api/openapi.json").content)
    return doc


def test_every_route_is_classified(db: None) -> None:
    unclassified = []
    api_paths = {path for (_, path) in API_OPERATIONS}
    for name, pattern in http_routes():
        if pattern.startswith("admin/"):
            continue  # Django's admin: ADMIN, checked below
        if name.startswith("api:") and name not in ROUTES:
            # An operation's URL: classified per method in API_OPERATIONS.
            path = "/" + pattern.replace("<", "{").replace(">", "}")
            path = path.replace("{slug:slug}", "{slug}").replace("{int:broker}", "{broker}")
            if not any(_same_shape(path, known) for known in api_paths):
                unclassified.append(f"{name} ({pattern})")
            continue
        if name not in ROUTES:
            unclassified.append(f"{name or '(unnamed)'} ({pattern})")
    operations = {(method.upper(), path) for path, ops in api_document()["paths"].items() for method in ops}
    unclassified += [f"API {m} {p}" for m, p in sorted(operations - set(API_OPERATIONS))]
    unclassified += [
        f"websocket {p.name}"
        for p in websocket_urlpatterns
        if isinstance(p, URLPattern) and p.name not in WEBSOCKETS
    ]
    assert not unclassified, "classify these routes in tests/test_permissions.py: " + ", ".join(unclassified)
    stale = [m + " " + p for m, p in sorted(set(API_OPERATIONS) - operations)]
    stale += [n for n in ROUTES if n not in {name for name, _ in http_routes()}]
    assert not stale, "these classified routes no longer exist: " + ", ".join(stale)


def _same_shape(path: str, known: str) -> bool:
    """``/api/labs/{slug}`` against ``/api/labs/{slug}`` with any parameter names."""
    a, b = path.strip("/").split("/"), known.strip("/").split("/")
    if len(a) != len(b):
        return False
    return all(x == y or (x.startswith("{") and y.startswith("{")) for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------- people and things


@dataclass
class World:
    ada: Any  # a student, owner of lab
    grace: Any  # another student
    teacher: Any  # an instructor, owner of class_lab
    staff: Any
    lab: Lab
    class_lab: Lab
    own_lab: Lab  # grace's, for a student trying an instructor's action on her own lab
    token: ApiToken

    def client(self, user: Any | None, *, csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=csrf)
        if user is not None:
            client.force_login(user)
        return client


@pytest.fixture
def world(settings: Settings, tmp_path: Path) -> World:
    settings.LAB_ZOOKEEPER = ""
    settings.LAB_DATA_DIR = tmp_path
    ada, grace, teacher, staff = (make_user(n) for n in ("ada", "grace", "teacher", "staff"))
    set_role(teacher, Role.INSTRUCTOR)
    staff.is_staff = staff.is_superuser = True  # type: ignore[attr-defined]
    staff.save()  # type: ignore[attr-defined]
    lab = make_lab(ada, "Ada lab")
    class_lab = make_lab(teacher, "Class demo")
    own_lab = make_lab(grace, "Grace lab")
    for row in (lab, class_lab, own_lab):
        live = live_of(row)
        live.ready.result(30)
        live.submit(lambda live: live.cluster.create_topic("scratch", 1, 1)).result(30)
    token, _ = ApiToken.issue(ada, "laptop")
    return World(
        ada=ada,
        grace=grace,
        teacher=teacher,
        staff=staff,
        lab=lab,
        class_lab=class_lab,
        own_lab=own_lab,
        token=token,
    )


def _url(name: str, route: Route, pattern: str, slug: str, world: World) -> str:
    kwargs = {}
    for param in _params(pattern):
        if param == "slug":
            kwargs[param] = slug
        elif param == "pk":
            kwargs[param] = world.token.pk
        else:
            kwargs[param] = route.kwargs.get(param, DEFAULT_KWARGS.get(param))
    return reverse(name, kwargs=kwargs)


def _params(pattern: str) -> list[str]:
    out = []
    for part in pattern.split("<")[1:]:
        inside = part.split(">", 1)[0]
        out.append(inside.split(":")[-1])
    return out


def _send(client: Client, method: str, url: str, **headers: str) -> Any:
    return (
        client.generic(method, url, headers=headers)
        if method != "POST"
        else client.post(url, headers=headers)
    )


def _to_login(response: Any) -> bool:
    return response.status_code == 302 and "/accounts/login/" in response["Location"]


def _allowed(response: Any, name: str) -> None:
    """Let through: no login redirect, 401, 403 or permission 404, and no 500 (bad input may be a 400)."""
    assert response.status_code < 500, (name, response.status_code)
    assert response.status_code not in (401, 403, 404), (name, response.status_code)
    assert not _to_login(response), name


# ----------------------------------------------------------------------------- pages and htmx endpoints


def _cases() -> list[str]:
    return sorted(ROUTES)


@pytest.mark.parametrize("name", _cases())
def test_each_page_and_endpoint_checks_who_asks(world: World, name: str) -> None:
    route = ROUTES[name]
    pattern = dict(http_routes())[name]
    method = route.method
    if route.kind == EMPTY:
        for user in (None, world.ada):
            assert (
                _send(world.client(user), method, _url(name, route, pattern, "x", world)).status_code == 404
            )
        return
    if route.kind == PUBLIC:
        response = _send(world.client(None), method, _url(name, route, pattern, world.lab.slug, world))
        assert response.status_code < 400, (name, response.status_code)
        return
    if route.given is not None:
        route.given(world)

    slug = world.class_lab.slug if route.kind == INSTRUCTOR_LAB else world.lab.slug
    url = _url(name, route, pattern, slug, world)
    anonymous = _send(world.client(None), method, url)
    assert _to_login(anonymous) or anonymous.status_code == 401, (name, anonymous.status_code)
    htmx = _send(world.client(None), method, url, **{"HX-Request": "true"})
    assert _to_login(htmx) or htmx.status_code == 401, (name, htmx.status_code)

    if route.kind == LOGIN:
        response = _send(world.client(world.ada), method, url)
        assert response.status_code < 500, (name, response.status_code)
        assert not _to_login(response), name
        assert response.status_code not in (401, 403), (name, response.status_code)
    elif route.kind == OWN:
        assert _send(world.client(world.grace), method, url).status_code == 404, name
        assert _send(world.client(world.ada), method, url).status_code == 302, name
    elif route.kind == INSTRUCTOR:
        assert _send(world.client(world.ada), method, url).status_code == 403, name
        _allowed(_send(world.client(world.teacher), method, url), name)
    elif route.kind == PERSON:
        assert _send(world.client(world.grace), method, url).status_code == 403, name  # a student
        for untouchable in (world.staff, world.teacher):  # an administrator, and oneself
            theirs = reverse(name, kwargs={"username": untouchable.get_username()})
            assert _send(world.client(world.teacher), method, theirs).status_code == 403, name
        nobody = reverse(name, kwargs={"username": "nobody"})
        assert _send(world.client(world.teacher), method, nobody).status_code == 404, name
        _allowed(_send(world.client(world.teacher), method, url), name)
    elif route.kind in (LAB_VIEW, LAB_ACT):
        other = _send(world.client(world.grace), method, url)
        assert other.status_code == 404, (name, other.status_code)
        nobody = _send(world.client(world.ada), method, _url(name, route, pattern, "no-such-lab", world))
        assert nobody.status_code == 404, (name, nobody.status_code)
        viewer = _send(world.client(world.teacher), method, url)
        if route.kind == LAB_ACT:
            assert viewer.status_code == 403, (name, viewer.status_code)
        else:
            assert viewer.status_code == 200, (name, viewer.status_code)
        owner = _send(world.client(world.ada), method, url)
        assert owner.status_code < 500, (name, owner.status_code)
        assert owner.status_code not in (401, 403, 404), (name, owner.status_code)
        assert not _to_login(owner), name
    elif route.kind == INSTRUCTOR_LAB:
        assert _send(world.client(world.grace), method, url).status_code == 404, name
        own = _url(name, route, pattern, world.own_lab.slug, world)
        assert _send(world.client(world.grace), method, own).status_code == 403, name
        owner = _send(world.client(world.teacher), method, url)
        assert owner.status_code < 500, (name, owner.status_code)
        assert owner.status_code not in (401, 403, 404), (name, owner.status_code)
        assert not _to_login(owner), name
    else:
        raise AssertionError(f"unknown kind {route.kind}")


@pytest.mark.parametrize("name", [n for n in _cases() if ROUTES[n].method == "POST"])
def test_every_post_without_a_csrf_token_is_refused(world: World, name: str) -> None:
    route = ROUTES[name]
    pattern = dict(http_routes())[name]
    slug = world.class_lab.slug if route.kind == INSTRUCTOR_LAB else world.lab.slug
    user = world.teacher if route.kind in (INSTRUCTOR, INSTRUCTOR_LAB, PERSON) else world.ada
    response = world.client(user, csrf=True).post(_url(name, route, pattern, slug, world), {"name": "x"})
    assert response.status_code == 403, (name, response.status_code)
    assert b"CSRF" in response.content, name


def test_the_admin_is_for_staff_and_lets_instructors_edit_exercises_only(world: World) -> None:
    names = [n for n, p in http_routes() if n.startswith("admin:") and "<" not in p and "(?P" not in p]
    assert "admin:index" in names
    assert "admin:auth_user_changelist" in names
    instructors_may = {
        "admin:index",
        "admin:password_change",
        "admin:password_change_done",
        "admin:classroom_exercisedefinition_changelist",
        "admin:classroom_exercisedefinition_add",
    }
    for name in names:
        if name in ("admin:login", "admin:logout", "admin:jsi18n"):
            continue
        url = reverse(name)
        for user in (None, world.ada):
            response = world.client(user).get(url)
            assert response.status_code == 302, (name, response.status_code)
            assert "/admin/login/" in response["Location"], name
        teacher = world.client(world.teacher).get(url)
        if name in instructors_may:
            assert teacher.status_code == 200, (name, teacher.status_code)
        else:
            assert teacher.status_code == 403, (name, teacher.status_code)
    assert world.client(world.staff).get(reverse("admin:index")).status_code == 200
    page = (
        world.client(world.staff).get(reverse("admin:auth_user_change", args=[world.ada.pk])).content.decode()
    )
    assert 'name="profile-0-role"' in page  # roles are edited on the user's page


# ----------------------------------------------------------------------------- the websocket


def _ws(path: str, client: Client | None) -> tuple[bool, int | None]:
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if client is not None:
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))

    async def attempt() -> tuple[bool, int | None]:
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, code = await communicator.connect(timeout=10)
        await communicator.disconnect()
        return connected, code

    result: tuple[bool, int | None] = async_to_sync(attempt)()
    return result


# Channels closes the database connection around each of a consumer's queries, which would end a
# test's own transaction: this test's rows are committed instead.
@pytest.mark.django_db(transaction=True)
def test_the_websocket_checks_who_asks(world: World) -> None:
    assert WEBSOCKETS == {"lab-ws": LAB_VIEW}
    path = f"/ws/labs/{world.lab.slug}/"
    assert _ws(path, None) == (False, NOT_LOGGED_IN)
    assert _ws(path, world.client(world.grace)) == (False, NOT_YOURS)
    assert _ws("/ws/labs/no-such-lab/", world.client(world.ada)) == (False, NOT_YOURS)
    assert _ws(path, world.client(world.teacher))[0] is True  # an instructor watches
    assert _ws(path, world.client(world.ada))[0] is True


# ----------------------------------------------------------------------------- the API


def _api_path(path: str, world: World, run_id: str, spare: Lab, produced: str) -> str:
    slug = spare.slug if path == "/api/labs/{slug}" else world.lab.slug
    return (
        path.replace("{slug}", slug)
        .replace("{topic}", "scratch")
        .replace("{group}", "g")
        .replace("{user}", "alice")
        .replace("{broker}", "1")
        .replace("{run_id}", run_id)
        .replace("{request_id}", produced)
        .replace("{producer}", "tp")
    )


def test_each_api_operation_checks_the_token_and_the_lab(world: World) -> None:
    ada, grace, teacher = Api(world.ada), Api(world.grace), Api(world.teacher)
    anonymous = Api(world.ada, secret="")
    ada.post(f"/labs/{world.lab.slug}/topics/orders/consume", {"group": "g"})  # a group to describe
    run_id = Api(world.ada).post("/scenarios/runs", {"scenario": "leader-failover"}).json()["id"]
    produced = ada.post(
        f"/labs/{world.lab.slug}/topics/orders/records", {"records": [{"value": "v"}]}
    ).json()["id"]
    spare = make_lab(world.ada, "Spare")
    live_of(spare).ready.result(30)
    # The owner's calls change the lab: the ones that would hide it from later calls run last.
    order = sorted(API_OPERATIONS, key=lambda op: (op[0] == "DELETE", op[1].endswith("/reset"), op))
    for method, path in order:
        kind, body = API_OPERATIONS[(method, path)]
        url = _api_path(path, world, run_id, spare, produced).removeprefix("/api")
        query = body if method == "GET" and body else {}
        send = body if method != "GET" else None

        def call(who: Api, url: str = url, method: str = method, query: Any = query, send: Any = send) -> Any:
            if method == "GET":
                return who.get(url, **query)
            return who.call(method, url, send)

        assert call(anonymous).status_code == 401, (method, path)
        if kind in (API_READ, API_ACT):
            refused = call(grace)
            assert refused.status_code == 404, (method, path, refused.status_code)
            assert refused.json()["error"] == "NOT_FOUND"
            viewer = call(teacher)
            expected = 403 if kind == API_ACT else 200
            assert viewer.status_code == expected, (method, path, viewer.status_code, viewer.content[:300])
        if kind == API_RUN:
            assert call(grace).status_code == 404, (method, path)
        answer = call(ada)
        assert answer.status_code < 500, (method, path, answer.status_code)
        refused_by_permission = answer.status_code in (401, 403) or (
            answer.status_code == 404 and answer.json()["error"] == "NOT_FOUND"
        )
        assert not refused_by_permission, (method, path, answer.status_code, answer.content[:300])
