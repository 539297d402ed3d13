"""Home, login and making a lab: the truth about ZooKeeper and the person's labs, behind a login."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from pytest_django.fixtures import Settings

from lab.labs import live_of
from lab.managed_server import free_port
from lab.models import Lab
from lab.runtime.manager import runtime
from lab.runtime.registry import BrokerSummary, LabSummary, register_lab, unregister_lab
from lab.zookeeper_server import zookeeper_status
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


@pytest.fixture
def user_client(client: Client) -> Client:
    client.force_login(make_user())  # type: ignore[arg-type]
    return client


@pytest.fixture
def running_lab() -> Iterator[LabSummary]:
    lab = LabSummary(
        name="orders-demo",
        brokers=(BrokerSummary(id=1, state="alive"), BrokerSummary(id=2, state="killed")),
        controller=1,
    )
    register_lab(lab)
    yield lab
    unregister_lab(lab.name)


def test_anonymous_visitors_are_sent_to_the_login_page(client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    for path in ("/", "/status/zookeeper/", "/labs/anything/"):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/?next="), path
    page = client.get("/accounts/login/").content.decode()
    assert "Log in to Kafka Lab" in page
    assert "creates a user <code>demo</code> with a generated password" in page
    assert "demo-password" in page
    assert "Kafka 3.x in ZooKeeper mode" in page


def test_logging_in_opens_the_home_page(client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    make_user("ada", "a-long-password")
    bad = client.post("/accounts/login/", {"username": "ada", "password": "wrong"})
    assert "do not match" in bad.content.decode()
    good = client.post("/accounts/login/", {"username": "ada", "password": "a-long-password"})
    assert good.status_code == 302
    assert good["Location"] == "/"
    assert "Your labs" in client.get("/").content.decode()


def test_home_shows_zookeeper_answering(user_client: Client, settings: Settings, zookeeper: str) -> None:
    settings.LAB_ZOOKEEPER = zookeeper
    status = zookeeper_status(zookeeper)

    page = user_client.get("/").content.decode()

    assert "<h1>The lab is up</h1>" in page
    assert f"ZooKeeper answers at <code>{status.address}</code>" in page
    assert f"<dt>Version</dt><dd>{status.version}</dd>" in page
    assert f"<code>LAB_ZOOKEEPER={zookeeper}</code>" in page
    assert "Kafka 3.x in ZooKeeper mode" in page
    assert "does not answer" not in page


def test_home_says_when_zookeeper_does_not_answer(user_client: Client, settings: Settings) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    settings.LAB_ZOOKEEPER = nowhere

    page = user_client.get("/").content.decode()

    assert "The lab is up, without ZooKeeper" in page
    assert f"ZooKeeper does not answer at <code>{nowhere}</code>" in page
    assert "make run" in page
    assert "apt-get install -y zookeeper" in page
    assert "keep their metadata in memory" in page


def test_home_points_to_the_managed_server_log_when_it_is_down(
    user_client: Client, settings: Settings
) -> None:
    settings.LAB_ZOOKEEPER = f"127.0.0.1:{free_port()}"
    settings.LAB_ZOOKEEPER_MANAGED_DIR = "/srv/lab/var/zookeeper"

    page = user_client.get("/").content.decode()

    assert "<code>/srv/lab/var/zookeeper/zookeeper.log</code>" in page


def test_home_without_any_zookeeper_configured(user_client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    page = user_client.get("/").content.decode()
    assert "No ZooKeeper configured" in page
    assert "LAB_ZOOKEEPER=host:port" in page


def test_home_lists_only_the_persons_own_labs(user_client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    me = user_client.get("/").wsgi_request.user  # type: ignore[attr-defined]
    make_lab(me, "Mine")
    make_lab(make_user("grace"), "Theirs")
    page = user_client.get("/").content.decode()
    assert '<a href="/labs/mine/">Mine</a>' in page
    assert "Theirs" not in page
    assert "No cluster is running in this server." in page  # neither lab was started


def test_home_lists_running_clusters_and_their_brokers(
    user_client: Client, settings: Settings, running_lab: LabSummary
) -> None:
    settings.LAB_ZOOKEEPER = ""
    me = user_client.get("/").wsgi_request.user  # type: ignore[attr-defined]
    Lab.objects.create(
        name="Orders", slug="orders-demo", owner=me, data_dir="/x", zookeeper_chroot="/kafka-lab/x"
    )

    page = user_client.get("/").content.decode()

    assert '<th scope="row">orders-demo</th>' in page
    assert "broker 1" in page
    assert '<span class="broker-pill broker-alive">1 alive</span>' in page
    assert '<span class="broker-pill broker-killed">2 killed</span>' in page
    assert "No cluster is running" not in page


def test_a_new_lab_from_the_home_page_starts_and_opens(user_client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    response = user_client.post(
        "/labs/new/", {"name": "Failover drill", "brokers": "3", "session_timeout_ms": "1500"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/labs/failover-drill/"
    lab = Lab.objects.get(slug="failover-drill")
    assert lab.settings["config"] == {"zookeeper.session.timeout.ms": "1500"}

    refused = user_client.post("/labs/new/", {"name": "Too many", "brokers": "40"})
    assert refused.status_code == 400
    assert "ILLEGAL_ARGUMENT: a lab has 1 to 12 brokers, not 40" in refused.content.decode()
    assert not Lab.objects.filter(name="Too many").exists()


def test_a_new_lab_can_listen_with_sasl_and_tls_besides_plaintext(
    user_client: Client, settings: Settings
) -> None:
    settings.LAB_ZOOKEEPER = ""
    home = user_client.get("/").content.decode()
    for protocol in ("SASL_PLAINTEXT", "SSL", "SASL_SSL"):
        assert f'name="listeners" value="{protocol}"' in home
    response = user_client.post("/labs/new/", {"name": "Locked", "brokers": "1", "listeners": ["SASL_SSL"]})
    assert response.status_code == 302
    lab = Lab.objects.get(slug="locked")
    assert list(lab.settings["listeners"]) == ["SASL_SSL"]
    refused = user_client.post("/labs/new/", {"name": "Odd", "brokers": "1", "listeners": ["GSSAPI", "SSL"]})
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "not GSSAPI" in page
    assert 'value="SSL" checked' in page  # what was chosen stays chosen
    assert not Lab.objects.filter(name="Odd").exists()


def test_the_form_past_the_persons_limit_says_so_on_the_page_and_keeps_what_was_typed(
    user_client: Client, settings: Settings
) -> None:
    settings.LAB_ZOOKEEPER = ""
    settings.LAB_MAX_LABS_PER_USER = 2
    me = user_client.get("/").wsgi_request.user  # type: ignore[attr-defined]
    make_lab(me, "One")
    assert "1 of your 2 labs." in user_client.get("/").content.decode()
    make_lab(me, "Two")
    refused = user_client.post("/labs/new/", {"name": "Three", "brokers": "2", "session_timeout_ms": "4000"})
    assert refused.status_code == 409
    page = refused.content.decode()
    assert re.search(
        r'<p class="banner bad" role="alert" id="new-lab-error">You have 2 labs already, the most a student may '
        r"have: delete one you no longer need \(Your labs, on the home page\) first.</p>",
        page,
    )
    assert 'name="name" required maxlength="100" placeholder="failover drill" value="Three"' in page
    assert 'value="4000"' in page
    assert "2 of your 2 labs: delete one to make another." in page
    assert Lab.objects.filter(owner=me).count() == 2


def test_the_form_on_a_full_server_tells_a_student_to_ask_the_instructor(
    user_client: Client, settings: Settings
) -> None:
    settings.LAB_ZOOKEEPER = ""
    settings.LAB_MAX_LIVE_LABS = 1
    make_lab(make_user("grace"), "Grace's")
    home = user_client.get("/").content.decode()
    assert "The class server is full (1 lab running): no new lab can start until some are deleted." in home
    refused = user_client.post("/labs/new/", {"name": "Mine", "brokers": "1"})
    assert refused.status_code == 409
    assert (
        "The class server is full (1 lab running, the most it takes: LAB_MAX_LIVE_LABS); ask your instructor."
        in refused.content.decode()
    )
    assert Lab.objects.count() == 1


def test_deleting_a_lab_from_the_home_page_removes_it_with_its_data(
    user_client: Client, settings: Settings
) -> None:
    settings.LAB_ZOOKEEPER = ""
    settings.LAB_MAX_LABS_PER_USER = 1
    me = user_client.get("/").wsgi_request.user  # type: ignore[attr-defined]
    lab = make_lab(me, "Old drill")
    live_of(lab).ready.result(30)
    data = Path(lab.data_dir)
    assert data.is_dir()
    page = user_client.get("/").content.decode()
    assert 'hx-confirm="Delete the lab Old drill with its cluster and data? This cannot be undone."' in page
    theirs = make_lab(make_user("grace"), "Theirs")
    assert user_client.post(f"/labs/{theirs.slug}/delete/").status_code == 404
    assert user_client.post(f"/labs/{lab.slug}/delete/")["Location"] == "/"
    assert not Lab.objects.filter(pk=lab.pk).exists()
    assert not data.exists()
    assert runtime.get(lab.slug) is None
    assert "Old drill" not in user_client.get("/").content.decode()
    # Room again under the limit; an htmx click is sent home by the browser.
    assert user_client.post("/labs/new/", {"name": "New drill", "brokers": "1"}).status_code == 302
    again = user_client.post("/labs/new-drill/delete/", headers={"HX-Request": "true"})
    assert again["HX-Redirect"] == "/"
    assert Lab.objects.filter(owner=me).count() == 0
    assert Lab.objects.filter(pk=theirs.pk).exists()


def test_zookeeper_card_alone_for_htmx_refresh(
    user_client: Client, settings: Settings, zookeeper: str
) -> None:
    settings.LAB_ZOOKEEPER = zookeeper

    card = user_client.get("/status/zookeeper/", headers={"HX-Request": "true"}).content.decode()

    assert card.lstrip().startswith('<section class="card" id="zookeeper-status"')
    assert "<html" not in card
    assert "ZooKeeper answers at" in card
    assert 'hx-get="/status/zookeeper/"' in card


def test_base_loads_vendored_htmx_and_the_labs_script(user_client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""

    page = user_client.get("/").content.decode()

    for script in ("vendor/htmx.min.js", "vendor/htmx-ext-ws.min.js", "lab.js"):
        assert f'<script src="/static/{script}" defer></script>' in page
        assert finders.find(script), f"{script} is not in lab/static"


def test_htmx_requests_carry_a_csrf_token_django_accepts(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(make_user())  # type: ignore[arg-type]
    page = browser.get("/").content.decode()
    found = re.search(r"""<body hx-headers='\{"X-CSRFToken": "([^"]+)"\}'>""", page)
    assert found, "htmx requests must carry the CSRF token"

    without = browser.post("/status/zookeeper/", headers={"HX-Request": "true"})
    with_token = browser.post(
        "/status/zookeeper/", headers={"HX-Request": "true", "X-CSRFToken": found.group(1)}
    )

    assert without.status_code == 403
    # Past the CSRF check, the read-only view itself refuses the POST.
    assert with_token.status_code == 405


def test_vendored_versions_are_pinned() -> None:
    versions = (finders.find("vendor/VERSIONS") or "").strip()
    assert versions, "lab/static/vendor/VERSIONS is missing"
    with open(versions) as listing:
        text = listing.read()
    assert re.search(r"^htmx\.org\s+2\.0\.\d+\s", text, re.M)
    assert re.search(r"^htmx-ext-ws\s+2\.\d+\.\d+\s", text, re.M)
