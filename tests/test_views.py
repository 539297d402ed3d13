"""The home page tells the truth about ZooKeeper and the running clusters."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from pytest_django.fixtures import Settings

from lab.runtime.registry import BrokerSummary, LabSummary, register_lab, unregister_lab
from lab.zookeeper_server import free_port, zookeeper_status


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


def test_home_shows_zookeeper_answering(client: Client, settings: Settings, zookeeper: str) -> None:
    settings.LAB_ZOOKEEPER = zookeeper
    status = zookeeper_status(zookeeper)

    page = client.get("/").content.decode()

    assert "<h1>The lab is up</h1>" in page
    assert f"ZooKeeper answers at <code>{status.address}</code>" in page
    assert f"<dt>Version</dt><dd>{status.version}</dd>" in page
    assert f"<code>LAB_ZOOKEEPER={zookeeper}</code>" in page
    assert "Kafka 3.x in ZooKeeper mode" in page
    assert "does not answer" not in page


def test_home_says_when_zookeeper_does_not_answer(client: Client, settings: Settings) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    settings.LAB_ZOOKEEPER = nowhere

    page = client.get("/").content.decode()

    assert "The lab is up, without ZooKeeper" in page
    assert f"ZooKeeper does not answer at <code>{nowhere}</code>" in page
    assert "make run" in page
    assert "apt-get install -y zookeeper" in page
    assert "ZooKeeper answers" not in page


def test_home_points_to_the_managed_server_log_when_it_is_down(client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = f"127.0.0.1:{free_port()}"
    settings.LAB_ZOOKEEPER_MANAGED_DIR = "/srv/lab/var/zookeeper"

    page = client.get("/").content.decode()

    assert "<code>/srv/lab/var/zookeeper/zookeeper.log</code>" in page


def test_home_without_any_zookeeper_configured(client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""

    page = client.get("/").content.decode()

    assert "No ZooKeeper configured" in page
    assert "LAB_ZOOKEEPER=host:port" in page


def test_home_lists_no_cluster_when_none_runs(client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    assert "No cluster is running in this server." in client.get("/").content.decode()


def test_home_lists_running_clusters_and_their_brokers(
    client: Client, settings: Settings, running_lab: LabSummary
) -> None:
    settings.LAB_ZOOKEEPER = ""

    page = client.get("/").content.decode()

    assert '<th scope="row">orders-demo</th>' in page
    assert "broker 1" in page
    assert '<span class="broker broker-alive">1 alive</span>' in page
    assert '<span class="broker broker-killed">2 killed</span>' in page
    assert "No cluster is running" not in page


def test_zookeeper_card_alone_for_htmx_refresh(client: Client, settings: Settings, zookeeper: str) -> None:
    settings.LAB_ZOOKEEPER = zookeeper

    card = client.get("/status/zookeeper/", headers={"HX-Request": "true"}).content.decode()

    assert card.lstrip().startswith('<section class="card" id="zookeeper-status"')
    assert "<html" not in card
    assert "ZooKeeper answers at" in card
    assert 'hx-get="/status/zookeeper/"' in card


def test_base_loads_vendored_htmx(client: Client, settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""

    page = client.get("/").content.decode()

    for script in ("vendor/htmx.min.js", "vendor/htmx-ext-ws.min.js"):
        assert f'<script src="/static/{script}" defer></script>' in page
        assert finders.find(script), f"{script} is not in lab/static"


def test_htmx_requests_carry_a_csrf_token_django_accepts(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    browser = Client(enforce_csrf_checks=True)
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
