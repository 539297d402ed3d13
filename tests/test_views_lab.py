"""A lab's page and its controls, through Django's test client."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from lab.classroom.models import ExerciseProgress
from lab.labs import live_of
from lab.models import Lab
from lab.runtime.live import LiveLab
from tests.labhelpers import make_lab, make_user
from tests.zkoutage import KillableZooKeeper

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


def test_the_add_consumer_form_offers_the_labs_session_beside_kafkas(owner_client: Client) -> None:
    lab = owner_client.lab  # type: ignore[attr-defined]
    _running(lab)
    page = owner_client.get(f"/labs/{lab.slug}/").content.decode()
    form = page[page.index('id="form-add-consumer"') :]
    form = form[: form.index("</form>")]
    field = re.search(
        r'<label title="([^"]*)">session.timeout.ms <input ([^>]*)> <small[^>]*>([^<]*)</small>', form
    )
    assert field is not None
    tip, attributes, beside = field.groups()
    assert 'placeholder="6000"' in attributes  # left empty, the consumer gets the lab's 6 s
    assert beside == "lab 6000, Kafka 45000"
    assert "session.timeout.ms: lab 6000, Kafka 45000" in tip


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
    act = f"/labs/{lab.slug}/act/topic-create/"

    def said(response: object) -> str:
        return response.content.decode().replace("&#x27;", "'")  # type: ignore[attr-defined]

    internal = owner_client.post(act, {"name": "__consumer_offsets", "partitions": "1"})
    assert internal.status_code == 409
    assert "INVALID_TOPIC_EXCEPTION: Topic '__consumer_offsets' is an internal topic" in said(internal)
    assert "Topic pay_ments created" in said(owner_client.post(act, {"name": "pay_ments", "partitions": "1"}))
    colliding = owner_client.post(act, {"name": "pay.ments", "partitions": "1"})
    assert colliding.status_code == 409
    assert "INVALID_TOPIC_EXCEPTION: Topic 'pay.ments' collides with existing topics: pay_ments" in said(
        colliding
    )
    assert "pay.ments" not in [t["name"] for t in Lab.objects.get(pk=lab.pk).settings["topics"]]


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


@pytest.mark.django_db(transaction=True)  # the exercise's grading saves from its own thread
def test_every_page_of_a_lab_says_when_zookeeper_is_not_answering(
    client: Client, settings: Settings, killable_zookeeper: KillableZooKeeper
) -> None:
    settings.LAB_ZOOKEEPER = killable_zookeeper.hosts
    user = make_user()
    client.force_login(user)  # type: ignore[arg-type]
    lab = make_lab(user, config={"zookeeper.session.timeout.ms": "6000"})
    _running(lab)
    live = live_of(lab)
    ExerciseProgress.objects.create(user=user, exercise="1-partitions-and-offsets", lab=lab)
    pages = (f"/labs/{lab.slug}/", f"/labs/{lab.slug}/admin/", "/exercises/1-partitions-and-offsets/")
    for url in pages:
        assert 'data-zookeeper="not-answering"' not in client.get(url).content.decode()

    killable_zookeeper.kill()
    live.wait_for_frame(lambda f: bool(f.views["status"].zookeeper_outage), 10)  # type: ignore[attr-defined]
    said = f"ZooKeeper is not answering: the lab lost every connection to {killable_zookeeper.hosts}."
    for url in pages:
        page = client.get(url).content.decode()
        assert 'data-zookeeper="not-answering"' in page, url
        assert said in page, url
        assert "The lab resumes by itself when it does." in page
    # The lab page's banner is its live status fragment: the websocket carries it to open pages.
    assert said in live.render_full()
    # A control that needs ZooKeeper answers at once, by name.
    answer = client.post(f"/labs/{lab.slug}/act/restart/", {"broker": "1"})
    assert answer.status_code == 409  # broker 1 runs: the state refuses it first
    client.post(f"/labs/{lab.slug}/act/kill/", {"broker": "1"})
    answer = client.post(f"/labs/{lab.slug}/act/restart/", {"broker": "1"})
    assert answer.status_code == 503
    assert "ZOOKEEPER_NOT_AVAILABLE: ZooKeeper is not answering" in answer.content.decode()
    assert "broker 1 cannot start without it" in answer.content.decode()

    killable_zookeeper.back()
    live.wait_for_frame(lambda f: not f.views["status"].zookeeper_outage, 30)  # type: ignore[attr-defined]
    for url in pages:  # the banner goes (the timeline keeps what happened)
        assert 'data-zookeeper="not-answering"' not in client.get(url).content.decode()
    assert client.post(f"/labs/{lab.slug}/act/restart/", {"broker": "1"}).status_code == 200
