"""Topics in the admin panel: the table, create, configs, partitions, reassignment, elections, delete."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from lab.models import Lab
from lab.runtime.live import LiveLab
from tests.adminpanel.conftest import (
    HTMX,
    commit,
    fast_forward,
    field_error,
    form_errors,
    on_driver,
    replicas,
    running,
    snapshot,
)
from tests.labhelpers import make_lab
from tests.processes import wait_until

pytestmark = pytest.mark.django_db


def url(lab: Lab, rest: str = "") -> str:
    return f"/labs/{lab.slug}/admin/{rest}"


def post(client: Client, lab: Lab, rest: str, data: dict[str, str]) -> tuple[int, str]:
    response = client.post(url(lab, rest), data, headers=HTMX)
    return response.status_code, response.content.decode()


def topic_row(html: str, topic: str) -> dict[str, str]:
    match = re.search(rf'<tr id="topic-{re.escape(topic)}"([^>]*)>', html)
    assert match, f"no row for {topic}"
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', match.group(1)))


# ---------------------------------------------------------------------------- the table


def test_the_table_shows_each_topic_with_its_counts_and_hides_internal_ones(owner: Client, lab: Lab) -> None:
    commit(lab, "billing", {("orders", 0): 0})  # the first group makes __consumer_offsets
    page = owner.get(url(lab)).content.decode()
    assert topic_row(page, "orders") == {
        "topic": "orders",
        "partitions": "3",
        "rf": "3",
        "under-replicated": "0",
        "offline": "0",
        "under-min-isr": "0",
    }
    assert 'id="topic-__consumer_offsets"' not in page
    assert "Show internal topics (1)" in page
    shown = owner.get(url(lab, "?internal=1")).content.decode()
    assert (
        topic_row(shown, "__consumer_offsets")["partitions"] == "5"
    )  # the lab's offsets.topic.num.partitions
    # The table refreshes itself every 2 s and after every change made on the page.
    assert 'hx-trigger="every 2s, lab-changed from:body"' in page


def test_a_dead_broker_shows_as_under_replicated_and_offline_partitions(owner: Client, lab: Lab) -> None:
    on_driver(lab, lambda live: live.cluster.create_topic("solo", partitions=1, replication_factor=1))
    solo_broker = replicas(lab, "solo")[0][0]
    on_driver(lab, lambda live: live.cluster.kill_broker(solo_broker))
    fast_forward(lab, 5_000)  # its ZooKeeper session (1.5 s) expires; the controller moves on
    table = owner.get(url(lab, "table/"), headers=HTMX).content.decode()
    assert topic_row(table, "orders")["under-replicated"] == "3"
    assert topic_row(table, "orders")["offline"] == "0"
    assert topic_row(table, "solo")["offline"] == "1"
    assert '<span class="count bad"><span aria-hidden="true">✕</span> 1</span>' in table


# ---------------------------------------------------------------------------- create


def test_each_config_shows_the_labs_default_beside_kafkas(owner: Client, lab: Lab) -> None:
    lab = running(make_lab(lab.owner, "Strict", config={"min.insync.replicas": "2"}))
    page = owner.get(url(lab)).content.decode()

    def defaults(key: str) -> str:
        row = re.search(
            rf'<tr data-config="{re.escape(key)}">.*?<span class="defaults mono([^"]*)">(.*?</span>)</span>',
            page,
            re.S,
        )
        assert row is not None
        return row.group(1) + ": " + re.sub(r"<[^>]+>", "", row.group(2))

    assert defaults("min.insync.replicas") == " differs: lab 2 · Kafka 1"
    assert defaults("retention.ms") == ": lab 604800000 · Kafka 604800000"
    assert defaults("unclean.leader.election.enable") == ": lab false · Kafka false"
    assert "Segments whose newest record is older than this are deleted (-1: keep forever)." in page
    assert '<option value="">default (delete)</option><option>delete</option>' in page.replace(
        "\n", ""
    ).replace("            ", "")


def test_a_topic_is_created_with_its_configs_and_kept_with_the_lab(owner: Client, lab: Lab) -> None:
    status, html = post(
        owner,
        lab,
        "create/",
        {
            "name": "payments",
            "partitions": "2",
            "replication_factor": "2",
            "retention.ms": "60000",
            "cleanup.policy": "compact",
        },
    )
    assert status == 200
    assert (
        "Topic payments created: 2 partition(s), replication factor 2, cleanup.policy=compact, retention.ms=60000."
        in html
    )
    topic = snapshot(lab)["topics"]["payments"]
    assert len(topic["partitions"]) == 2
    assert all(len(p["replicas"]) == 2 and p["leader"] > 0 for p in topic["partitions"])
    assert on_driver(lab, lambda live: live.cluster.topic_config("payments")) == {
        "retention.ms": "60000",
        "cleanup.policy": "compact",
    }
    saved = {t["name"]: t for t in Lab.objects.get(pk=lab.pk).settings["topics"]}
    assert saved["payments"]["config"] == {"retention.ms": "60000", "cleanup.policy": "compact"}


def test_with_the_clock_paused_the_page_says_the_topic_comes_when_it_runs(owner: Client, lab: Lab) -> None:
    def pause(live: LiveLab) -> None:
        live.clock.pause(live.cluster.now_ms)

    def resume(live: LiveLab) -> None:
        live.clock.resume(live.cluster.now_ms)

    on_driver(lab, pause)
    status, html = post(
        owner, lab, "create/", {"name": "later", "partitions": "1", "replication_factor": "1"}
    )
    assert status == 200
    assert (
        "Topic later asked for: the lab&#x27;s clock is paused, so ZooKeeper answers when it runs again "
        "(resume or step it); the page shows the change then." in html
    )
    assert "later" not in snapshot(lab)["topics"]
    on_driver(lab, resume)
    assert wait_until(lambda: bool(snapshot(lab)["topics"].get("later")), 20)


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"name": "payments", "partitions": "3", "replication_factor": "4"},
            "replication_factor",
            "INVALID_REPLICATION_FACTOR: Replication factor: 4 larger than available brokers: 3.",
        ),
        (
            {"name": "payments", "partitions": "3", "replication_factor": "0"},
            "replication_factor",
            "INVALID_REPLICATION_FACTOR: Replication factor must be larger than 0.",
        ),
        (
            {"name": "orders", "partitions": "3", "replication_factor": "1"},
            "name",
            "TOPIC_ALREADY_EXISTS: Topic 'orders' already exists.",
        ),
        (
            {"name": "bad name!", "partitions": "1", "replication_factor": "1"},
            "name",
            'INVALID_TOPIC_EXCEPTION: Topic name "bad name!" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'",
        ),
        (
            {"name": "", "partitions": "1", "replication_factor": "1"},
            "name",
            "INVALID_TOPIC_EXCEPTION: Topic name is illegal, it can't be empty",
        ),
        (
            {"name": "__consumer_offsets", "partitions": "1", "replication_factor": "1"},
            "name",
            "INVALID_TOPIC_EXCEPTION: Topic '__consumer_offsets' is an internal topic: the group coordinator "
            "creates it, with its own partitions and configs; it cannot be created by hand",
        ),
        (
            {"name": "payments", "partitions": "0", "replication_factor": "1"},
            "partitions",
            "INVALID_PARTITIONS: Number of partitions must be larger than 0.",
        ),
        (
            {"name": "payments", "partitions": "many", "replication_factor": "1"},
            "partitions",
            "Partitions must be a whole number, not 'many'.",
        ),
        (
            {"name": "payments", "partitions": "1", "replication_factor": "1", "retention.ms": "a week"},
            "retention.ms",
            "INVALID_CONFIG: Invalid value 'a week' for configuration retention.ms: not a number",
        ),
        (
            {"name": "payments", "partitions": "1", "replication_factor": "1", "min.insync.replicas": "0"},
            "min.insync.replicas",
            "INVALID_CONFIG: Invalid value 0 for configuration min.insync.replicas: must be at least 1",
        ),
        (
            {"name": "payments", "partitions": "1", "replication_factor": "1", "cleanup.policy": "forever"},
            "cleanup.policy",
            "INVALID_CONFIG: Invalid value 'forever' for configuration cleanup.policy: 'forever' is not one of delete, compact",
        ),
    ],
)
def test_a_bad_topic_gets_its_error_beside_the_field_and_nothing_is_created(
    owner: Client, lab: Lab, data: dict[str, str], field: str, message: str
) -> None:
    before = snapshot(lab)["topics"]
    status, html = post(owner, lab, "create/", data)
    assert status in (400, 409)
    assert field_error(html, field) == message
    assert f'aria-describedby="id_{field}-error"' in html
    assert 'class="toast ok"' not in html
    # What was typed stays in the form, to be corrected.
    assert f'value="{data["partitions"]}"' in html
    assert snapshot(lab)["topics"].keys() == before.keys()
    assert [t["name"] for t in Lab.objects.get(pk=lab.pk).settings["topics"]] == ["orders"]


def test_a_topic_below_its_min_insync_replicas_is_badged_in_the_table_and_on_its_partitions(
    owner: Client, lab: Lab
) -> None:
    def break_it(live: LiveLab) -> None:
        live.cluster.alter_topic_config("orders", {"min.insync.replicas": "3"})
        live.cluster.kill_broker(3)
        live.cluster.run_for(10_000, pace=False)  # broker 3's session expires: it leaves every ISR

    on_driver(lab, break_it)
    page = owner.get(url(lab)).content.decode()
    assert topic_row(page, "orders")["under-min-isr"] == "3"
    assert "under min ISR: 3" in page
    assert re.search(
        r'<td class="num" title="set on this topic">3 <span class="muted small">topic</span></td>', page
    )
    detail = owner.get(url(lab, "topics/orders/")).content.decode()
    assert detail.count('<span aria-hidden="true">✕</span> under min ISR</span>') == 3
    assert "fewer than min.insync.replicas=3: every acks=all write fails with NOT_ENOUGH_REPLICAS" in detail
    assert "min.insync.replicas 3 (this topic's) · 3 under-replicated · 3 under min ISR" in detail


# ---------------------------------------------------------------------------- one topic


def test_a_topic_colliding_with_another_once_dots_are_underscores_is_refused_beside_its_name(
    owner: Client, lab: Lab
) -> None:
    status, _ = post(
        owner, lab, "create/", {"name": "pay_ments", "partitions": "1", "replication_factor": "1"}
    )
    assert status == 200
    status, html = post(
        owner, lab, "create/", {"name": "pay.ments", "partitions": "1", "replication_factor": "1"}
    )
    assert status in (400, 409)
    assert field_error(html, "name") == (
        "INVALID_TOPIC_EXCEPTION: Topic 'pay.ments' collides with existing topics: pay_ments"
    )
    assert "pay.ments" not in snapshot(lab)["topics"]


def test_the_topic_page_shows_partitions_leaders_isr_and_offsets(owner: Client, lab: Lab) -> None:
    page = owner.get(url(lab, "topics/orders/")).content.decode()
    for p, (first, *_rest) in replicas(lab, "orders").items():
        row = re.search(rf'<tr id="partition-{p}"[^>]*data-leader="(\d+)"[^>]*data-isr="([\d,]+)"', page)
        assert row is not None
        assert row.group(1) == str(first)  # the preferred replica leads a fresh topic
        assert sorted(row.group(2).split(",")) == ["1", "2", "3"]
    assert '<span class="badge good"><span aria-hidden="true">✓</span> in sync</span>' in page
    assert "0 · 0 · 0" in page  # log start · HW · LEO of an empty partition
    assert "Log start · HW · LEO" in page
    assert "LSO" not in page  # in Kafka the LSO is the last stable offset (transactions), not the log start
    fragment = owner.get(url(lab, "topics/orders/partitions/"), headers=HTMX)
    assert fragment.status_code == 200
    assert 'hx-trigger="every 1s, lab-changed from:body"' in fragment.content.decode()
    assert owner.get(url(lab, "topics/nope/")).status_code == 404
    gone = owner.get(url(lab, "topics/nope/partitions/"), headers=HTMX)
    assert gone.status_code == 286  # htmx stops polling a topic that is gone
    assert "no longer exists" in gone.content.decode()


def test_configs_are_set_and_removed_and_a_bad_value_changes_nothing(owner: Client, lab: Lab) -> None:
    def config() -> dict[str, str]:
        return on_driver(lab, lambda live: live.cluster.topic_config("orders"))  # type: ignore[no-any-return]

    assert config() == {}
    status, html = post(
        owner, lab, "topics/orders/config/", {"retention.ms": "60000", "min.insync.replicas": "2"}
    )
    assert status == 200
    assert "Topic orders config: min.insync.replicas=2, retention.ms=60000." in html
    assert config() == {"retention.ms": "60000", "min.insync.replicas": "2"}
    assert re.search(r'<tr data-config="retention.ms" class="overridden">.*?value="60000"', html, re.S)

    status, html = post(
        owner, lab, "topics/orders/config/", {"retention.ms": "-5", "min.insync.replicas": "2"}
    )
    assert status == 400
    assert field_error(html, "retention.ms") == (
        "INVALID_CONFIG: Invalid value -5 for configuration retention.ms: must be at least -1"
    )
    assert config() == {"retention.ms": "60000", "min.insync.replicas": "2"}

    status, html = post(
        owner, lab, "topics/orders/config/", {"retention.ms": "60000", "min.insync.replicas": "2"}
    )
    assert status == 400
    assert (
        form_errors(html) == "Nothing to change: edit a value, or empty one to go back to the lab's default."
    )

    # An emptied field goes back to the default.
    status, html = post(owner, lab, "topics/orders/config/", {"min.insync.replicas": "2"})
    assert status == 200
    assert "Topic orders config: retention.ms back to the default." in html
    assert config() == {"min.insync.replicas": "2"}
    saved = {t["name"]: t for t in Lab.objects.get(pk=lab.pk).settings["topics"]}
    assert saved["orders"]["config"] == {"min.insync.replicas": "2"}


def test_partitions_are_added_but_never_removed(owner: Client, lab: Lab) -> None:
    status, html = post(owner, lab, "topics/orders/grow/", {"total": "5"})
    assert status == 200
    assert "Topic orders grows from 3 to 5 partitions" in html
    assert len(replicas(lab, "orders")) == 5
    for total in ("4", "5"):
        status, html = post(owner, lab, "topics/orders/grow/", {"total": total})
        assert status == 409
        assert field_error(html, "total") == (
            f"INVALID_PARTITIONS: Topic currently has 5 partitions, which is higher than the requested {total}."
        )
    status, html = post(owner, lab, "topics/orders/grow/", {"total": "five"})
    assert field_error(html, "total") == "Partitions must be a whole number, not 'five'."
    commit(lab, "billing", {("orders", 0): 0})  # the first group makes __consumer_offsets
    status, html = post(owner, lab, "topics/__consumer_offsets/grow/", {"total": "9"})
    assert field_error(html, "total") == (
        "INVALID_PARTITIONS: The number of partitions for the offsets topic cannot be changed."
    )
    assert len(replicas(lab, "orders")) == 5
    assert len(replicas(lab, "__consumer_offsets")) == 5


def test_a_replication_factor_change_shows_its_plan_first_then_runs(owner: Client, lab: Lab) -> None:
    before = replicas(lab, "orders")
    status, html = post(owner, lab, "topics/orders/reassign/", {"step": "plan-rf", "replication_factor": "2"})
    assert status == 200
    assert "The plan" in html
    for p, current in before.items():
        row = re.search(rf'<tr data-partition="{p}">(.*?)</tr>', html, re.S)
        assert row is not None
        cells = re.sub(r"<[^>]+>", "", row.group(1))
        assert f"{','.join(map(str, current))} → {','.join(map(str, current[:2]))}" in cells
        assert f'data-removed="{current[2]}"' in row.group(1)  # the last replica goes
        assert "data-added" not in row.group(1)
        assert f"stays on broker {current[0]}" in cells
    assert replicas(lab, "orders") == before  # a plan changes nothing
    encoded = re.search(r'name="plan" value="([^"]+)"', html)
    assert encoded is not None

    status, html = post(
        owner, lab, "topics/orders/reassign/", {"step": "apply", "plan": unescape_attr(encoded.group(1))}
    )
    assert status == 200
    assert "Reassignment of 3 partition(s) of orders started" in html
    on_driver(
        lab,
        lambda live: live.cluster.wait_for(
            lambda: all(len(r) == 2 for r in _replicas(live, "orders").values()), 30_000
        ),
    )
    assert replicas(lab, "orders") == {p: r[:2] for p, r in before.items()}
    saved = {t["name"]: t for t in Lab.objects.get(pk=lab.pk).settings["topics"]}
    assert saved["orders"]["replication_factor"] == 2


def test_a_moving_replica_shows_its_progress_until_it_joins_the_isr(owner: Client, lab: Lab) -> None:
    def setup(live: LiveLab) -> int:
        cluster = live.cluster
        cluster.create_topic("solo", partitions=1, replication_factor=1)
        producer = cluster.producer(acks="all")
        for i in range(20):
            producer.send("solo", f"v{i}")
        producer.flush()
        producer.close()
        newcomer = next(b for b in cluster.broker_ids if b not in _replicas(live, "solo")[0])
        cluster.slow_broker(newcomer, 3_000)  # its fetches take seconds: the move can be watched
        return newcomer

    newcomer = on_driver(lab, setup)
    leader = replicas(lab, "solo")[0][0]
    status, html = post(
        owner, lab, "topics/solo/reassign/", {"step": "plan-replicas", "replicas_0": f"{leader},{newcomer}"}
    )
    assert status == 200
    assert f'data-added="{newcomer}"' in html
    plan = unescape_attr(re.search(r'name="plan" value="([^"]+)"', html).group(1))  # type: ignore[union-attr]
    status, html = post(owner, lab, "topics/solo/reassign/", {"step": "apply", "plan": plan})
    assert status == 200, html

    moving = owner.get(url(lab, "topics/solo/partitions/"), headers=HTMX).content.decode()
    assert "Reassignment in progress for 1 partition" in moving
    assert f'data-target="{leader},{newcomer}"' in moving
    assert re.search(
        rf'class="replica out-isr[^"]*adding"[^>]*>{newcomer}<span aria-hidden="true">\+</span>', moving
    )
    assert re.search(rf'<span class="catchup" data-broker="{newcomer}"', moving)
    topics = owner.get(url(lab)).content.decode()
    assert "reassigning 1" in topics

    on_driver(lab, lambda live: live.cluster.heal(newcomer))
    on_driver(
        lab,
        lambda live: live.cluster.wait_for(
            lambda: not live.cluster.snapshot()["topics"]["solo"]["reassigning"], 30_000
        ),
    )
    done = owner.get(url(lab, "topics/solo/partitions/"), headers=HTMX).content.decode()
    assert "Reassignment in progress" not in done
    assert f'data-replicas="{leader},{newcomer}" data-isr="' in done


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"step": "plan-rf", "replication_factor": "4"},
            "replication_factor",
            "INVALID_REPLICATION_FACTOR: Replication factor: 4 larger than available brokers: 3.",
        ),
        (
            {"step": "plan-rf", "replication_factor": "0"},
            "replication_factor",
            "INVALID_REPLICATION_FACTOR: Replication factor must be larger than 0.",
        ),
        (
            {"step": "plan-rf", "replication_factor": "3"},
            None,
            "The plan changes nothing: every partition already has those replicas.",
        ),
        (
            {"step": "plan-replicas", "replicas_0": "1,1", "replicas_1": "2,3,1", "replicas_2": "3,1,2"},
            "replicas_0",
            "INVALID_REPLICA_ASSIGNMENT: partition 0 lists a broker twice: [1, 1]",
        ),
        (
            {"step": "plan-replicas", "replicas_0": "1,2,3", "replicas_1": "2,3,7", "replicas_2": "3,1,2"},
            "replicas_1",
            "INVALID_REPLICA_ASSIGNMENT: partition 1: there is no broker 7 (brokers: 1, 2, 3)",
        ),
        (
            {"step": "plan-replicas", "replicas_0": "one", "replicas_1": "2,3,1", "replicas_2": "3,1,2"},
            "replicas_0",
            "INVALID_REPLICA_ASSIGNMENT: partition 0: replicas are broker ids separated by commas, not 'one'",
        ),
        (
            {"step": "plan-replicas", "replicas_0": "", "replicas_1": "2,3,1", "replicas_2": "3,1,2"},
            "replicas_0",
            "INVALID_REPLICA_ASSIGNMENT: partition 0 needs at least one replica",
        ),
        (
            {"step": "apply", "plan": "{not json"},
            None,
            "ILLEGAL_ARGUMENT: the plan is not valid JSON; show the plan again",
        ),
        (
            {"step": "apply", "plan": '{"9": [1]}'},
            None,
            "INVALID_REPLICA_ASSIGNMENT: there is no partition 9",
        ),
    ],
)
def test_a_bad_reassignment_is_refused_beside_its_field_and_nothing_moves(
    owner: Client, lab: Lab, data: dict[str, str], field: str | None, message: str
) -> None:
    before = replicas(lab, "orders")
    status, html = post(owner, lab, "topics/orders/reassign/", data)
    assert status == 400
    assert (field_error(html, field) if field else form_errors(html)) == message
    assert "The plan</h3>" not in html
    assert replicas(lab, "orders") == before
    assert not snapshot(lab)["topics"]["orders"]["reassigning"]


def test_the_preferred_leader_is_elected_per_partition_and_for_all(owner: Client, lab: Lab) -> None:
    # A lab without automatic leader rebalancing, so only the panel moves leaders back.
    lab = running(
        make_lab(
            lab.owner,
            "Leaders",
            config={"zookeeper.session.timeout.ms": "1500", "auto.leader.rebalance.enable": "false"},
        )
    )
    preferred = replicas(lab, "orders")[0][0]

    def bounce(live: LiveLab) -> None:
        """Kill the preferred leader of orders-0, wait for a new leader, bring it back into the ISR."""
        cluster = live.cluster
        cluster.kill_broker(preferred)
        cluster.wait_for(lambda: cluster.leader_of("orders", 0) not in (None, preferred), 30_000)
        cluster.restart_broker(preferred)
        cluster.wait_for(lambda: preferred in cluster.partition_state("orders", 0)["isr"], 30_000)

    def leaders() -> dict[int, int]:
        return {p["partition"]: p["leader"] for p in snapshot(lab)["topics"]["orders"]["partitions"]}

    on_driver(lab, bounce)
    assert leaders()[0] != preferred
    page = owner.get(url(lab, "topics/orders/")).content.decode()
    assert re.search(r'<tr id="partition-0".*?not preferred</span>', page, re.S)
    status, html = post(owner, lab, "topics/orders/elect/", {"partition": "0"})
    assert status == 200
    assert f"Preferred leaders elected: orders-0 → broker {preferred}." in html
    assert leaders()[0] == preferred

    status, html = post(owner, lab, "topics/orders/elect/", {"partition": "0"})
    assert status == 409
    assert (
        "ELECTION_NOT_NEEDED: Leader election not needed for orders-0: the preferred replica already leads."
        in html
    )
    status, html = post(owner, lab, "topics/orders/elect/", {"partition": "7"})
    assert status == 400
    assert "UNKNOWN_TOPIC_OR_PARTITION: the topic has 3 partition(s); there is no partition 7" in html

    # Every partition of every topic at once (the offsets topic's too).
    on_driver(lab, bounce)
    status, html = post(owner, lab, "elect/", {})
    assert status == 200
    assert f"orders-0 → broker {preferred}" in html
    assert leaders() == {p: r[0] for p, r in replicas(lab, "orders").items()}
    status, html = post(owner, lab, "elect/", {})
    assert status == 409
    assert "ELECTION_NOT_NEEDED" in html


def test_a_topic_is_deleted_only_when_its_name_is_typed(owner: Client, lab: Lab) -> None:
    status, html = post(owner, lab, "topics/orders/delete/", {"confirm": "order"})
    assert status == 400
    assert field_error(html, "confirm") == "Type the topic's name, orders, to delete it."
    assert "orders" in snapshot(lab)["topics"]

    commit(lab, "billing", {("orders", 0): 0})  # the first group makes __consumer_offsets
    status, html = post(owner, lab, "topics/__consumer_offsets/delete/", {"confirm": "__consumer_offsets"})
    assert status == 409
    assert field_error(html, "confirm") == (
        "INVALID_TOPIC_EXCEPTION: Topic __consumer_offsets is a kafka internal topic and is not allowed to be marked for deletion."
    )
    assert "__consumer_offsets" in snapshot(lab)["topics"]

    response = owner.post(url(lab, "topics/orders/delete/"), {"confirm": "orders"}, headers=HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == url(lab, "?deleted=orders")
    assert "orders" not in snapshot(lab)["topics"]
    assert Lab.objects.get(pk=lab.pk).settings["topics"] == []
    page = owner.get(response["HX-Redirect"]).content.decode()
    assert "Topic orders deleted." in page


# ---------------------------------------------------------------------------- helpers


def unescape_attr(text: str) -> str:
    from html import unescape

    return unescape(text)


def _replicas(live: LiveLab, topic: str) -> dict[int, list[int]]:
    cluster = live.cluster
    return {
        p: list(cluster.partition_state(topic, p)["replicas"]) for p in range(cluster.partition_count(topic))
    }
