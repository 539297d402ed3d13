"""Rows to runtime: creating labs, choosing the store, the demo user and lab, restoring after a restart."""

from __future__ import annotations

import logging
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from pytest_django.fixtures import Settings as SettingsWrapper

from lab import labs
from lab.engine.errors import IllegalArgument, InvalidConfig
from lab.listening import LISTENERS_VIEW
from lab.managed_server import free_port
from lab.models import Lab, LabPort
from lab.runtime.manager import runtime
from lab.runtime.spec import TopicSpec
from lab.visuals.frame import plog_key
from lab.visuals.markup import PLAIN
from tests.labhelpers import make_lab, make_user
from tests.processes import wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def test_a_new_lab_gets_its_own_slug_data_dir_and_chroot() -> None:
    owner = make_user()
    first = labs.create_lab(
        owner, "Failover drill", brokers=3, config={"zookeeper.session.timeout.ms": "1500"}
    )
    second = labs.create_lab(owner, "Failover drill")
    assert (first.slug, second.slug) == ("failover-drill", "failover-drill-2")
    assert first.data_dir == str(Path(settings.LAB_DATA_DIR) / "labs" / "failover-drill")
    assert first.zookeeper_chroot == f"/kafka-lab/{labs.instance_id()}/failover-drill"
    assert (Path(settings.LAB_DATA_DIR) / "instance-id").read_text().strip() == labs.instance_id()
    assert first.settings["config"] == {"zookeeper.session.timeout.ms": "1500"}


@pytest.mark.parametrize(
    ("name", "kw", "error"),
    [
        ("", {}, IllegalArgument),
        ("x", {"brokers": 0}, IllegalArgument),
        ("x", {"config": {"zookeeper.session.timeout.ms": "10"}}, InvalidConfig),
        ("x", {"config": {"no.such.key": "1"}}, InvalidConfig),
    ],
)
def test_a_bad_lab_is_refused_and_nothing_is_created(name: str, kw: dict, error: type) -> None:
    with pytest.raises(error):
        labs.create_lab(make_user(), name, **kw)
    assert Lab.objects.count() == 0


def test_two_installations_sharing_a_zookeeper_get_different_chroots(
    settings: SettingsWrapper, tmp_path: Path
) -> None:
    owner = make_user()
    settings.LAB_DATA_DIR = tmp_path / "one"
    one = labs.create_lab(owner, "Demo")
    settings.LAB_DATA_DIR = tmp_path / "two"
    Lab.objects.all().delete()
    two = labs.create_lab(owner, "Demo")
    assert one.slug == two.slug
    assert one.zookeeper_chroot != two.zookeeper_chroot


def test_without_zookeeper_labs_use_the_memory_store_and_say_how_to_get_it(settings: SettingsWrapper) -> None:
    settings.LAB_ZOOKEEPER = ""
    store = labs.store_for_labs()
    assert store.zookeeper is None
    assert "apt-get install -y zookeeper" in store.fallback_reason
    settings.LAB_ZOOKEEPER = f"127.0.0.1:{free_port()}"
    store = labs.store_for_labs()
    assert store.zookeeper is None
    assert "does not answer" in store.fallback_reason


@pytest.mark.zookeeper
def test_with_zookeeper_answering_labs_use_it(settings: SettingsWrapper, zookeeper: str) -> None:
    settings.LAB_ZOOKEEPER = zookeeper
    assert labs.store_for_labs() == labs.Store(zookeeper=zookeeper, fallback_reason="")


def test_the_demo_user_gets_a_generated_password_kept_in_the_data_dir(
    settings: SettingsWrapper, tmp_path: Path
) -> None:
    settings.LAB_DATA_DIR = tmp_path
    user, password = labs.ensure_demo_user()
    path = tmp_path / "demo-password"
    assert path.read_text().strip() == password
    assert len(password) >= 16
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert user.check_password(password)
    assert labs.ensure_demo_user() == (user, password)  # a second start keeps it
    path.unlink()
    _, new = labs.ensure_demo_user()  # a lost file: a new password, saved again
    assert new != password
    assert path.read_text().strip() == new


def test_the_demo_lab_has_orders_a_producer_and_a_consumer_group() -> None:
    owner = make_user("demo")
    demo = labs.ensure_demo_lab(owner)
    assert demo is not None
    assert labs.ensure_demo_lab(owner) == demo
    spec = labs.spec_of(demo)
    assert (demo.slug, spec.brokers) == ("demo", 3)
    assert [(t.name, t.partitions, t.replication_factor) for t in spec.topics] == [("orders", 3, 3)]
    assert {(c.kind, c.group) for c in spec.clients} == {("producer", ""), ("consumer", "billing")}
    assert {c.session_timeout_ms for c in spec.clients if c.kind == "consumer"} == {6000}


def test_a_full_server_makes_no_demo_lab_and_says_why(
    settings: SettingsWrapper, caplog: pytest.LogCaptureFixture
) -> None:
    settings.LAB_MAX_LIVE_LABS = 1
    make_lab(make_user("ada"), "Ada's")
    with caplog.at_level(logging.WARNING, logger="lab.labs"):
        assert labs.ensure_demo_lab(make_user("demo")) is None
    assert "The demo lab was not made: The class server is full (1 lab running" in caplog.text
    assert not Lab.objects.filter(slug="demo").exists()


def test_live_of_starts_a_lab_once_and_renders_its_fragments(settings: SettingsWrapper) -> None:
    settings.LAB_ZOOKEEPER = ""
    lab = make_lab(make_user())
    live = labs.live_of(lab)
    assert labs.live_of(lab) is live
    assert runtime.get(lab.slug) is live
    live.ready.result(30)
    frame = live.wait_for_frame(lambda f: plog_key("orders") in f.views)
    html = live.render_full(frame)
    for dom_id in (
        "lab-status",
        "clock-time",
        "cluster-map",
        "plogs",
        "plog-orders",
        "groups",
        "zookeeper",
        "timeline",
        "charts",
        "lab-frame",
        "lost-records",
    ):
        assert f'id="{dom_id}" hx-swap-oob="true"' in html, dom_id
    assert "In-memory metadata: ZooKeeper is not running." in html
    assert "apt-get install -y zookeeper" in html


def test_a_page_connecting_gets_the_full_state_drawn_only_where_the_frames_did_not_draw_it(
    settings: SettingsWrapper,
) -> None:
    settings.LAB_ZOOKEEPER = ""
    lab = make_lab(make_user())
    live = labs.live_of(lab)
    live.ready.result(30)
    live.subscribe()  # the first page: it gets every fragment drawn, and each frame draws what changed
    live.render_full(live.wait_for_frame(lambda f: plog_key("orders") in f.views))
    live.act("client-producer", {"topic": "orders", "rate": "20"}).result(10)
    first = live.frame.seq
    live.wait_for_frame(lambda f: f.seq >= first + 3)
    # The clock paused, frames stop (nothing changes): the latest frame is the one a page connects to.
    live.act("clock-pause", {}).result(10)
    frame = live.wait_for_frame(lambda f: f.views["clock-time"].paused)  # type: ignore[attr-defined]
    renderer = live.renderer
    assert isinstance(renderer, labs.TemplateRenderer)
    # The frame is published before the lab's thread draws it for the pages (its "frame" fragment
    # last): a page connecting in between draws those fragments itself, and so would this test.
    assert wait_until(lambda: renderer.is_drawn("frame", frame.views), 10)
    drawn: list[str] = []
    draw = renderer.draw

    def counted(key: str, views: Any) -> str:
        drawn.append(key)
        return draw(key, views)

    renderer.draw = counted  # type: ignore[method-assign]
    partitions = renderer.partitions_drawn
    full = live.render_full(frame)
    renderer.draw = draw  # type: ignore[method-assign]
    # A topic's section is joined from its partitions' drawings.
    assert renderer.partitions_drawn == partitions
    # The same page as every fragment drawn afresh...
    assert full == "".join(draw(key, frame.views) for key in frame.views)
    # ...drawn again only where a fragment's inputs changed since a frame drew it: those drawn from
    # other fragments' views too (the partition-log index holds every topic's block, the cluster map
    # the sessions, the clients their counters: frames draw only the fragment whose view changed), and
    # the lab's listeners (drawn from the whole frame), and a topic's section (frames send the
    # partitions that changed, each alone). Not the timeline, the tree, the charts...
    assert set(drawn) <= {"plogs", plog_key("orders"), "cluster-map", "clients", LISTENERS_VIEW}, drawn


def test_fragments_are_drawn_as_django_would_localize_them() -> None:
    # The renderer skips Django's localization of numbers (a third of a frame's cost); with the lab's
    # settings (no thousands separator, English) the page is the same, large numbers included.
    from django.template.loader import render_to_string

    from lab.engine import Cluster
    from lab.visuals.clock import LabStatus
    from lab.visuals.frame import FrameInputs, build

    c = Cluster.create(brokers=3, seed=7)
    try:
        c.create_topic("orders", partitions=3, replication_factor=3)
        p = c.producer(acks="all")
        for i in range(1500):
            p.send("orders", key=f"k{i % 7}".encode(), value=b"v" * 1200)
        p.flush()
        c.run_for(2_000)
        snap = c.snapshot()
        views = build(
            FrameInputs(
                snapshot=snap,
                config=dict(c.config.values),
                events=tuple(c.events(0)),
                rebalances=(),
                tree=c.zookeeper_tree(),
                tree_previous=None,
                tree_error=None,
                samples=(),
                rate=1.0,
                paused=False,
                status=LabStatus(
                    state="running", store="memory", zookeeper="", chroot="/t", error="", fallback_reason=""
                ),
                simulated_clients=True,
            )
        )
    finally:
        c.close()
    renderer = labs.TemplateRenderer("t")
    for key in views:
        if key in PLAIN:
            continue  # no template: plain strings (tests/visuals/test_markup.py)
        name = "plog" if key.startswith("plog:") else key
        context = renderer.context(key, views)
        if name == "plog":
            context["t"] = context["v"]
        assert renderer.draw(key, views) == render_to_string(f"lab/live.html#{name}", context), key


def test_runtime_changes_are_saved_to_the_row(settings: SettingsWrapper) -> None:
    settings.LAB_ZOOKEEPER = ""
    lab = make_lab(make_user())
    live = labs.live_of(lab)
    live.ready.result(30)
    live.act("clock-speed", {"rate": "0.5"}).result(10)
    labs.save_spec(lab, live.spec)
    assert Lab.objects.get(pk=lab.pk).settings["rate"] == 0.5


@pytest.mark.django_db(transaction=True)  # the spec's writer thread saves beside the test
def test_an_acl_or_user_made_without_a_command_is_saved_to_the_row(settings: SettingsWrapper) -> None:
    """What a Kafka client stores (CreateAcls, AlterUserScramCredentials) reaches the lab's row with no
    page or API call after it: a restarted server or another worker starts the lab with it."""
    from lab.engine.acl import parse_binding
    from lab.runtime.commands.users import credentials

    settings.LAB_ZOOKEEPER = ""
    lab = make_lab(make_user(), "Kept", topics=[])
    live = labs.live_of(lab)
    live.ready.result(30)
    binding = parse_binding(resource_type="topic", name="orders", principal="User:alice", operation="read")
    credential = credentials("alice-secret", ["SCRAM-SHA-256"])[0]
    live.submit(lambda running: running.cluster.begin_create_acls([binding])).result(10)
    live.submit(lambda running: running.cluster.begin_scram(lambda s: s.upsert("alice", credential), "alice"))

    def row() -> dict[str, Any]:
        return Lab.objects.get(pk=lab.pk).settings  # type: ignore[no-any-return]

    assert wait_until(lambda: row().get("acls") and row().get("users"), 20)
    assert row()["acls"][0]["principal"] == "User:alice"
    assert row()["users"] == {"alice": {"SCRAM-SHA-256": credential.to_text()}}
    assert "alice-secret" not in str(row())


def test_an_older_spec_saved_after_a_newer_one_does_not_overwrite_it() -> None:
    lab = make_lab(make_user(), "Ordered")
    older = labs.spec_of(lab)
    newer = replace(older, rate=0.5)
    assert labs.save_spec(lab, newer, 20)
    stale = Lab.objects.get(pk=lab.pk)
    assert not labs.save_spec(stale, older, 10)  # the slower save lands last: dropped
    row = Lab.objects.get(pk=lab.pk)
    assert (row.settings["rate"], row.spec_version) == (0.5, 20)
    assert not async_to_sync(labs.asave_spec)(row, older, 10)
    assert Lab.objects.get(pk=lab.pk).settings["rate"] == 0.5
    assert async_to_sync(labs.asave_spec)(row, replace(newer, rate=2.0), 30)
    assert Lab.objects.get(pk=lab.pk).settings["rate"] == 2.0


@pytest.mark.django_db(transaction=True)  # the spec's writer thread saves beside the test
def test_a_commands_save_that_lands_after_a_client_made_acl_was_saved_keeps_the_acl(
    settings: SettingsWrapper,
) -> None:
    """A command's save took the spec before a Kafka client's CreateAcls changed it; ``save_soon`` wrote
    the newer spec first. The command's save, older, arriving last, leaves the ACL in the row."""
    from lab.engine.acl import parse_binding

    settings.LAB_ZOOKEEPER = ""
    lab = make_lab(make_user(), "Raced", topics=[])
    live = labs.live_of(lab)
    live.ready.result(30)
    taken_by_the_command = live.versioned_spec
    binding = parse_binding(resource_type="topic", name="orders", principal="User:alice", operation="read")
    live.submit(lambda running: running.cluster.begin_create_acls([binding])).result(10)

    def acls() -> list[dict[str, Any]]:
        return list(Lab.objects.get(pk=lab.pk).settings.get("acls") or [])

    assert wait_until(lambda: bool(acls()), 20)  # save_soon, on the writer thread
    assert live.versioned_spec[1] > taken_by_the_command[1]
    assert not labs.save_spec(Lab.objects.get(pk=lab.pk), *taken_by_the_command)
    assert [a["principal"] for a in acls()] == ["User:alice"]
    runtime.stop_all()


@pytest.mark.django_db(transaction=True)  # the spec's writer thread saves beside the test
def test_a_reassignment_that_changes_the_replica_count_is_kept_in_the_row(settings: SettingsWrapper) -> None:
    """A reassignment made without a command (a Kafka client's AlterPartitionReassignments, a script's
    admin call) reaches the lab's row once the controller has carried it out: a lab started again from
    its row (the memory store forgets its metadata) has the new replicas, not the old replication."""
    settings.LAB_ZOOKEEPER = ""
    lab = make_lab(
        make_user(), "Reassigned", topics=[TopicSpec(name="orders", partitions=2, replication_factor=1)]
    )
    live = labs.live_of(lab)
    live.ready.result(30)
    plan = {("orders", 0): [2, 3, 1], ("orders", 1): [3, 1]}
    live.submit(lambda running: running.cluster.begin_reassign_partitions(plan)).result(10)

    def kept() -> list[dict[str, Any]]:
        return list(Lab.objects.get(pk=lab.pk).settings["topics"])

    assert wait_until(lambda: kept()[0].get("replicas") == [[2, 3, 1], [3, 1]], 30), kept()
    assert kept()[0]["replication_factor"] == 3
    runtime.stop_all()  # the server stops

    again = labs.live_of(Lab.objects.get(pk=lab.pk))  # ...and starts, from the row
    assert again is not live
    again.ready.result(30)
    described = again.act("topic-describe", {"topic": "orders"}).result(10)
    assert [p["replicas"] for p in described["partitions"]] == [[2, 3, 1], [3, 1]]
    runtime.stop_all()


@pytest.mark.zookeeper
def test_a_lab_comes_back_from_its_row_with_its_data(settings: SettingsWrapper, zookeeper: str) -> None:
    settings.LAB_ZOOKEEPER = zookeeper
    lab = make_lab(make_user(), "Restore me")
    live = labs.live_of(lab)
    live.ready.result(60)
    assert live.store == "zookeeper"
    assert (
        live.act("produce", {"topic": "orders", "count": "7", "key": "k", "acks": "all"})
        .result(30)
        .startswith("7 of 7")
    )
    runtime.stop_all()  # the server stops

    again = labs.live_of(Lab.objects.get(pk=lab.pk))  # ...and starts
    assert again is not live
    again.ready.result(60)

    def leo(frame: object) -> int:
        log = frame.views.get(plog_key("orders"))  # type: ignore[attr-defined]
        return -1 if log is None else sum(max(r.log_end_offset for r in p.replicas) for p in log.partitions)

    again.wait_for_frame(lambda f: leo(f) == 7, 30)
    runtime.stop_all()
    from lab.engine.metadata.zookeeper import ZooKeeperStore

    store = ZooKeeperStore(zookeeper, chroot=lab.zookeeper_chroot)
    store.delete_chroot()
    store.close()


def test_the_lost_records_panel_shows_every_loss_and_keeps_it() -> None:
    from lab.engine.cluster import Cluster
    from lab.visuals.lost import lost_records

    c = Cluster.create(brokers=3, seed=1)
    try:
        c.create_topic("t", replication_factor=3, config={"unclean.leader.election.enable": "true"})
        p = c.producer(acks="all", retries=0)
        for i in range(3):
            p.send("t", f"before-{i}")
        p.flush()
        c.isolate_broker(2, from_="brokers")
        c.isolate_broker(3, from_="brokers")
        for i in range(4):
            p.send("t", f"after-{i}")
        p.flush(timeout_ms=30_000)
        c.kill_broker(1)
        c.heal(2)
        c.heal(3)
        c.run_for(15_000)
        again = c.producer(acks="all")
        for i in range(6):
            again.send("t", f"reused-{i}")  # offsets 3..8: the lost ones, written again
        again.flush()
        renderer = labs.TemplateRenderer("some-lab")
        html = renderer.fragment("lost-records", {"lost-records": lost_records(c.snapshot())})
    finally:
        c.close()
    assert 'id="lost-records" hx-swap-oob="true"' in html
    assert "hidden" not in html.split(">", 1)[0]
    assert "4 acknowledged records lost" in html
    assert 'data-partition="t-0" data-count="4" data-offsets="3..6"' in html
    for i in range(4):
        assert f"after-{i}" in html
    assert "reused" not in html


def test_a_lab_deleted_with_its_owners_account_stops_and_its_files_and_ports_go(
    settings: SettingsWrapper, django_capture_on_commit_callbacks: Any
) -> None:
    settings.LAB_ZOOKEEPER = ""
    owner = make_user()
    lab = make_lab(owner)
    live = labs.live_of(lab)
    live.ready.result(30)
    data_dir = Path(lab.data_dir)
    assert data_dir.exists()
    assert LabPort.objects.filter(lab=lab).count() == 3
    with django_capture_on_commit_callbacks(execute=True):
        owner.delete()  # type: ignore[attr-defined]  # the lab goes with the account, not through delete_lab_data
    assert runtime.get(lab.slug) is None
    assert live.state == "stopped"
    assert not data_dir.exists()
    assert not LabPort.objects.exists()


def _views(c: Any) -> dict[str, Any]:
    from lab.visuals.clock import LabStatus
    from lab.visuals.frame import FrameInputs, build

    return build(
        FrameInputs(
            snapshot=c.snapshot(),
            config=dict(c.config.values),
            events=tuple(c.events(0)),
            rebalances=(),
            tree=None,
            tree_previous=None,
            tree_error=None,
            samples=(),
            rate=1.0,
            paused=False,
            status=LabStatus(
                state="running", store="memory", zookeeper="", chroot="/t", error="", fallback_reason=""
            ),
            simulated_clients=True,
        )
    )


def _orders_with_one_record(c: Any) -> Any:
    """Topic orders (3 partitions, RF 3) with one record on partition 0, replicated; the producer."""
    c.create_topic("orders", partitions=3, replication_factor=3)
    producer = c.producer(acks="all")
    producer.send("orders", b"first", partition=0)
    producer.flush()
    c.run_for(1_000)
    return producer


def _sent_and_viewed(c: Any, producer: Any, value: bytes, *, partition: int) -> dict[str, Any]:
    """The lab's views after ``value`` is written to orders-``partition`` and replicated."""
    producer.send("orders", value, partition=partition)
    producer.flush()
    c.run_for(1_000)
    return _views(c)


def test_a_frame_draws_again_only_the_partitions_that_changed() -> None:
    # A busy topic's every partition changes every frame; __consumer_offsets' one a group commits to
    # does, the other four do not: drawing those again was a third of a class's frames.
    from lab.engine import Cluster

    c = Cluster.create(brokers=3, seed=7)
    try:
        producer = _orders_with_one_record(c)
        renderer = labs.TemplateRenderer("t")
        before = _views(c)
        first = renderer.fragment(plog_key("orders"), before)
        assert renderer.partitions_drawn == 3
        after = _sent_and_viewed(c, producer, b"second", partition=1)
    finally:
        c.close()
    assert after[plog_key("orders")] != before[plog_key("orders")]
    drawn = renderer.fragment(plog_key("orders"), after)
    assert renderer.partitions_drawn == 4  # partition 1, alone
    # The page gets what a drawing from scratch gives, the partitions kept and the one drawn again.
    assert drawn == labs.TemplateRenderer("t").fragment(plog_key("orders"), after)
    assert drawn != first
    assert 'id="plog-orders-1"' in drawn
    assert drawn.count('class="partition-log"') == 3


def test_a_frame_after_a_produce_to_one_partition_sends_that_partition_alone() -> None:
    # A page holding the last frame gets only the partition whose records moved, swapped by its own
    # id: not the topic's section of all its partitions (most of a busy lab's bytes, every frame).
    from lab.engine import Cluster

    c = Cluster.create(brokers=3, seed=7)
    try:
        producer = _orders_with_one_record(c)
        renderer = labs.TemplateRenderer("t")
        before = _views(c)
        renderer.fragment(plog_key("orders"), before)
        after = _sent_and_viewed(c, producer, b"second", partition=1)
        c.create_topic("payments", partitions=2, replication_factor=3)
        c.run_for(1_000)
        grown = _views(c)
    finally:
        c.close()
    sent = renderer.changes(plog_key("orders"), after, before)
    assert sent.count('class="partition-log"') == 1
    assert sent.lstrip().startswith('<div class="partition-log" hx-swap-oob="true" id="plog-orders-1"')
    assert 'id="plog-orders"' not in sent  # not the section
    # What the page then shows is what the whole section drawn afresh shows.
    whole = labs.TemplateRenderer("t").fragment(plog_key("orders"), after)
    assert sent.replace(' hx-swap-oob="true"', "", 1) in whole
    # A topic the page does not hold yet gets its section.
    assert 'id="plog-payments" hx-swap-oob="true"' in renderer.changes(plog_key("payments"), grown, after)
    # Anything else is its fragment, as before.
    assert renderer.changes("clock-time", after, before) == renderer.fragment("clock-time", after)
