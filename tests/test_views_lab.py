"""A lab's page and its controls, through Django's test client."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from lab.labs import live_of
from lab.models import Lab
from lab.runtime.live import LiveLab
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


@pytest.fixture
def owner_client(client: Client, settings: Settings) -> Client:
    settings.LAB_ZOOKEEPER = ""  # the memory store: fast, and the page must say so
    user = make_user()
    client.force_login(user)  # type: ignore[arg-type]
    client.lab = make_lab(user)  # type: ignore[attr-defined]
    return client


def _running(lab: Lab) -> None:
    live = live_of(lab)
    live.ready.result(30)
    live.wait_for_frame(lambda f: "plog:orders" in f.views)


def test_the_owner_sees_every_view_and_the_kafka_it_models(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    page = owner_client.get(f"/labs/{lab.slug}/").content.decode()
    assert f'ws-connect="/ws/labs/{lab.slug}/"' in page
    for heading in ("Cluster map", "Partition log", "Consumer groups", "ZooKeeper", "Timeline", "Charts"):
        assert heading in page
    for dom_id in (
        "cluster-map",
        "plogs",
        "plog-orders",
        "groups",
        "clients",
        "zookeeper",
        "timeline",
        "charts",
    ):
        assert f'id="{dom_id}"' in page
    assert "Kafka 3.x in ZooKeeper mode" in page
    assert "In-memory metadata: ZooKeeper is not running." in page
    assert "apt-get install -y zookeeper" in page
    # The map: three broker columns, each replica cell in words.
    assert len(re.findall(r'<th scope="col" id="broker-\d"', page)) == 3
    assert "leader, in ISR" in page
    assert "follower, in ISR" in page
    # A control that does not apply is disabled, with the reason as its title.
    assert re.search(
        r'title="broker 1 is running; kill it or shut it down first"[^>]*>Restart</button>', page
    )


def test_the_log_start_is_called_log_start_never_lso(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    page = owner_client.get(f"/labs/{lab.slug}/").content.decode()
    assert ">log start HW LEO</span>" in page  # an empty log: the three markers at offset 0
    assert "log start 0, HW 0, LEO 0" in page
    # In Kafka the LSO is the last stable offset (transactions): the page names it only to say so.
    assert page.count("LSO") > 0
    assert page.count("LSO") == page.count("not the LSO, which in Kafka is the last stable offset")


def test_a_partition_below_its_topics_min_insync_replicas_is_badged_where_it_is_drawn(
    owner_client: Client,
) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    live = live_of(lab)

    def break_it(live: LiveLab) -> None:
        live.cluster.alter_topic_config("orders", {"min.insync.replicas": "3"})
        live.cluster.kill_broker(3)
        live.cluster.run_for(10_000, pace=False)  # broker 3's session expires: it leaves every ISR

    live.submit(break_it).result(30)
    live.wait_for_frame(lambda f: f.views["cluster-map"].topics[0].under_min_isr == 3)  # type: ignore[attr-defined]
    page = owner_client.get(f"/labs/{lab.slug}/").content.decode()
    assert page.count('data-under-min-isr="true"') == 3  # the map's rows
    assert page.count("✕ under min ISR</span>") == 3
    assert "✕ 3 under min ISR</span>" in page  # the topic's line on the map
    assert page.count("under min ISR: acks=all fails</span>") == 3  # the partition log
    assert "min.insync.replicas 3 (topic)" in page
    # The HW's tooltip gives the value the topic runs with, not only the broker's.
    assert "min.insync.replicas: topic 3 (lab 1, Kafka 1)" in page


def test_a_paused_broker_shows_its_session_as_zookeeper_sees_it(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    live = live_of(lab)
    assert owner_client.post(f"/labs/{lab.slug}/act/pause/", {"broker": "2"}).status_code == 200
    frame = live.wait_for_frame(
        lambda f: f.views["sessions"].by_id[2].state == "expired",  # type: ignore[attr-defined]
        timeout_s=20,
    )
    page = live.render_full(frame)
    line = re.search(r'<div id="session-2"[^>]*data-session="(\w+)"[^>]*>(.*?)</div>', page)
    assert line is not None
    assert line.group(1) == "expired"
    assert "session expired: /brokers/ids/2 gone" in line.group(2)
    assert "session connected" not in line.group(2)  # what the paused broker itself still believes


def test_someone_elses_lab_is_not_found(owner_client: Client) -> None:
    theirs = make_lab(make_user("grace"), "Theirs")
    assert owner_client.get(f"/labs/{theirs.slug}/").status_code == 404
    assert owner_client.post(f"/labs/{theirs.slug}/act/kill/", {"broker": "1"}).status_code == 404
    assert owner_client.get("/labs/no-such-lab/").status_code == 404


def test_a_control_answers_done_and_the_next_frame_shows_it(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    response = owner_client.post(
        f"/labs/{lab.slug}/act/kill/", {"broker": "2"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert '<div class="toast ok" data-ok="true">' in response.content.decode()
    assert "Broker 2 killed." in response.content.decode()
    live = live_of(lab)
    frame = live.wait_for_frame(lambda f: f.views["cluster-map"].brokers[1].state == "killed")  # type: ignore[attr-defined]
    assert 'data-state="killed"' in live.render_full(frame)


def test_a_control_that_does_not_apply_answers_with_kafkas_error(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    refused = owner_client.post(f"/labs/{lab.slug}/act/restart/", {"broker": "1"})
    assert refused.status_code == 409
    assert "ILLEGAL_STATE: broker 1 is running" in refused.content.decode()
    bad = owner_client.post(f"/labs/{lab.slug}/act/produce/", {"topic": "orders", "count": "many"})
    assert bad.status_code == 400
    assert "ILLEGAL_ARGUMENT: count must be a whole number, not &#x27;many&#x27;" in bad.content.decode()
    assert owner_client.post(f"/labs/{lab.slug}/act/explode/", {}).status_code == 404
    assert owner_client.get(f"/labs/{lab.slug}/act/kill/").status_code == 405


def test_a_topic_made_on_the_page_is_saved_with_the_lab(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    ok = owner_client.post(
        f"/labs/{lab.slug}/act/topic-create/",
        {"name": "payments", "partitions": "2", "replication_factor": "3"},
    )
    assert "Topic payments created: 2 partition(s), replication factor 3." in ok.content.decode()
    saved = Lab.objects.get(pk=lab.pk).settings["topics"]
    assert [t["name"] for t in saved] == ["orders", "payments"]
    bad = owner_client.post(f"/labs/{lab.slug}/act/topic-create/", {"name": "bad name!"})
    assert bad.status_code == 409
    assert "INVALID_TOPIC" in bad.content.decode()


def test_controls_need_a_login_and_a_csrf_token(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    user = make_user()
    lab = make_lab(user)
    anonymous = Client()
    assert (
        anonymous.post(
            f"/labs/{lab.slug}/act/kill/", {"broker": "1"}, headers={"HX-Request": "true"}
        ).status_code
        == 401
    )
    assert anonymous.post(f"/labs/{lab.slug}/act/kill/", {"broker": "1"}).status_code == 302
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)  # type: ignore[arg-type]
    assert strict.post(f"/labs/{lab.slug}/act/kill/", {"broker": "1"}).status_code == 403
