"""The live dashboard in real Chromium: watch the cluster, break it, watch it recover.

Each test saves screenshots of the views it checks under test-artifacts/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import create_topic, log_in, new_lab
from tests.lab_server import LabServer

pytestmark = pytest.mark.long(240)

# Every page of the lab shows the three HW/LEO rows of a partition's replicas in sync.
IN_SYNC = """({topic, total: expected}) => {
  const parts = document.querySelectorAll(`#plog-${topic} .partition-log`);
  if (parts.length === 0) return false;
  let total = 0;
  for (const part of parts) {
    const rows = part.querySelectorAll('.rlog');
    if (rows.length !== 3) return false;
    const leo = rows[0].dataset.leo;
    for (const row of rows) {
      if (row.dataset.hw !== row.dataset.leo || row.dataset.leo !== leo) return false;
    }
    total += Number(leo);
  }
  return total === expected;
}"""


def _shot(page: Page, artifacts: Path, name: str, selector: str | None = None) -> None:
    if selector is None:
        page.screenshot(path=artifacts / f"{name}.png", full_page=True)
    else:
        page.locator(selector).screenshot(path=artifacts / f"{name}.png")


def test_kill_the_leader_and_watch_the_failover_then_the_rejoin(
    page: Page, browser: Browser, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    url = new_lab(page, live_lab, "Failover", session_timeout_ms=1000)
    expect(page.get_by_text("Kafka 3.x in ZooKeeper mode").first).to_be_visible()
    expect(page.locator("#lab-status")).to_have_attribute("data-store", "zookeeper")
    create_topic(page, "orders", 3, 3)

    # Produce and see the HW reach the LEO on every replica.
    form = page.locator("#form-produce")
    form.get_by_label("Topic").fill("orders")
    form.get_by_label("Records").fill("30")
    form.get_by_role("button", name="Produce").click()
    expect(page.locator("#toast")).to_contain_text("30 of 30 record(s) acknowledged (acks=all)")
    page.wait_for_function(IN_SYNC, arg={"topic": "orders", "total": 30}, timeout=10_000)
    _shot(page, artifacts, "dashboard-produced")
    _shot(page, artifacts, "view-partition-log", "#view-log")

    # A second page on the same lab, to check both stay consistent.
    other = page.context.new_page()
    other.goto(url)
    expect(other.locator("#live-status")).to_have_text("● live")
    page.bring_to_front()  # a background tab gets no animation frames, and clicks wait for them

    row = page.locator("#map-orders-0")
    leader = row.get_attribute("data-leader")
    assert leader in ("1", "2", "3")
    page.locator(f"#broker-{leader} button[data-action=kill]").click()
    # Without reloading: a new leader and a smaller ISR. How soon is the dashboard bench's figure
    # (`python -m lab.bench dashboard`), not a wall-clock bound here that a loaded machine misses.
    not_leader = re.compile(rf"^(?!{leader}$)\d$")
    smaller_isr = re.compile(rf"^(?!.*{leader})\d,\d$")
    expect(row).to_have_attribute("data-leader", not_leader, timeout=10_000)
    expect(row).to_have_attribute("data-isr", smaller_isr, timeout=10_000)
    expect(page.locator("#toast")).to_contain_text(f"Broker {leader} killed.")
    expect(page.locator(f"#broker-{leader}")).to_have_attribute("data-state", "killed")
    expect(page.locator(f"#broker-{leader} button[data-action=kill]")).to_be_disabled()
    expect(page.locator(f"#broker-{leader} .act").first).to_have_attribute(
        "title", f"broker {leader} is not running (killed)"
    )
    new_leader = row.get_attribute("data-leader")
    other_row = other.locator("#map-orders-0")
    expect(other_row).to_have_attribute("data-leader", new_leader or "", timeout=2000)
    expect(other_row).to_have_attribute("data-isr", smaller_isr)
    # Its ephemeral /brokers/ids znode vanished with its session; the timeline says why.
    expect(page.locator(f'#zookeeper li.zn:not(.gone)[data-path="/brokers/ids/{leader}"]')).to_have_count(
        0, timeout=5000
    )
    expect(page.locator("#timeline .ev[data-kind=broker_killed]").first).to_be_visible()
    # The timeline filters by broker, in the page, and keeps the filter as new events arrive.
    page.locator(f'#timeline-filters .chip[data-filter=broker][data-value="{leader}"]').click()
    expect(page.locator(f'#timeline .ev:not([hidden]):not([data-brokers~="{leader}"])')).to_have_count(0)
    expect(page.locator(f'#timeline .ev:not([hidden])[data-brokers~="{leader}"]').first).to_be_visible()
    # Among them the election that moved orders-0 away from it (recorded by the controller).
    expect(
        page.locator("#timeline .ev:not([hidden])[data-kind=leader_election][data-topic=orders]").first
    ).to_be_visible()
    # Each marker explains itself, with the lab's value beside Kafka's default.
    expect(page.locator(f"#broker-{new_leader} .session")).to_have_attribute(
        "title", re.compile(r"zookeeper\.session\.timeout\.ms: lab 1000, Kafka 18000")
    )
    _shot(page, artifacts, "dashboard-failover")
    _shot(page, artifacts, "view-cluster-map", "#view-map")
    _shot(page, artifacts, "view-zookeeper", "#view-zookeeper")
    _shot(page, artifacts, "view-timeline", "#view-timeline")
    other.close()

    # Restart it: it recovers its log, registers, and rejoins the ISR.
    page.locator(f"#broker-{leader} button[data-action=restart]").click()
    expect(row).to_have_attribute("data-isr", re.compile(rf"^(?=.*{leader})\d,\d,\d$"), timeout=15_000)
    expect(page.locator(f"#broker-{leader}")).to_have_attribute("data-state", "alive")
    expect(page.locator(f'#zookeeper li.zn.eph:not(.gone)[data-path="/brokers/ids/{leader}"]')).to_have_count(
        1, timeout=5000
    )
    page.wait_for_function(IN_SYNC, arg={"topic": "orders", "total": 30}, timeout=10_000)
    _shot(page, artifacts, "dashboard-rejoined")
    _shot(page, artifacts, "view-charts", "#view-charts")
    page.emulate_media(color_scheme="dark")
    _shot(page, artifacts, "dashboard-dark")
    # The projector mode: larger text, one column; the choice survives a reload.
    page.get_by_role("button", name="Large").click()
    expect(page.locator("html")).to_have_attribute("data-size", "large")
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-size", "large")
    expect(page.locator("#live-status")).to_have_text("● live")
    _shot(page, artifacts, "dashboard-large")


def test_a_consumer_crash_shows_as_a_rebalance(page: Page, live_lab: LabServer, artifacts: Path) -> None:
    log_in(page, live_lab)
    new_lab(page, live_lab, "Groups", session_timeout_ms=3000)
    create_topic(page, "orders", 3, 3)

    producer = page.locator("#form-add-producer")
    producer.get_by_label("Topic").fill("orders")
    producer.get_by_label("Records/s").fill("20")
    producer.get_by_role("button", name="Add producer").click()
    expect(page.locator("#toast")).to_contain_text("writes 20 record(s)/s to orders")
    # The session field is empty: the lab's 6 s, shown beside Kafka's 45 s.
    session = page.locator("#form-add-consumer").get_by_label("session.timeout.ms")
    expect(session).to_have_attribute("placeholder", "6000")
    expect(page.locator("#form-add-consumer")).to_contain_text("lab 6000, Kafka 45000")
    for name in ("c1", "c2"):
        consumer = page.locator("#form-add-consumer")
        consumer.get_by_label("Group").fill("billing")
        consumer.get_by_label("Topics").fill("orders")
        consumer.get_by_label("session.timeout.ms").fill("3000")
        consumer.get_by_label("Name").fill(name)
        consumer.get_by_role("button", name="Add consumer").click()
        expect(page.locator("#toast")).to_contain_text(f"Simulated consumer {name} joins group billing")

    group = page.locator("#group-billing")
    expect(group).to_have_attribute("data-state", "Stable", timeout=15_000)
    expect(group.locator(".members li")).to_have_count(2, timeout=15_000)
    expect(page.locator("#client-c2 .stats")).to_contain_text("consumed", timeout=5000)
    generation = int(group.get_attribute("data-generation") or "0")
    # By the title's start: a text match on "c2" also finds c1 when its random member id holds "c2".
    c2_member = (
        group.locator('.members li[title^="member id c2-"]').get_attribute("title") or ""
    ).removeprefix("member id ")
    assert c2_member.startswith("c2-")
    _shot(page, artifacts, "view-groups-before-crash", "#view-groups")

    page.locator("#client-c2 button[data-action=client-crash]").click()
    expect(page.locator("#toast")).to_contain_text("c2 crashed.")
    expect(page.locator("#client-c2")).to_have_attribute("data-state", "crashed")
    # The coordinator notices after c2's session times out, and the group rebalances without it.
    latest = group.locator(f'.rebalance[data-generation="{generation + 1}"]')
    expect(latest).to_be_visible(timeout=15_000)
    expect(latest.locator(f'li[data-member="{c2_member}"]')).to_contain_text(f"{c2_member} left")
    expect(latest).to_contain_text("gave up")
    expect(latest).to_contain_text("received")
    expect(group.locator(".members li")).to_have_count(1)
    expect(group).to_have_attribute("data-state", "Stable", timeout=10_000)
    _shot(page, artifacts, "view-groups-after-crash", "#view-groups")


def test_the_page_reconnects_and_resyncs_after_a_server_restart(
    page: Page, zookeeper: str, tmp_path: Path, artifacts: Path
) -> None:
    server = LabServer(tmp_path / "restart", zookeeper=zookeeper)
    try:
        server.start()
        log_in(page, server)
        page.goto(server.url + "/labs/demo/")
        expect(page.locator("#live-status")).to_have_text("● live")
        frame = page.locator("#lab-frame")
        expect(frame).to_have_attribute("data-frame", re.compile(r"\d+"))
        assert server.stop() == 0, server.output()
        expect(page.locator("#live-status")).to_have_text("reconnecting…", timeout=10_000)
        server.start()
        expect(page.locator("#live-status")).to_have_text("● live", timeout=20_000)
        # The server's frames count from 1 again: a resync shows its full state, live.
        expect(page.locator("#cluster-map th.broker")).to_have_count(3, timeout=20_000)
        start = page.locator("#clock-time").get_attribute("data-time-ms")
        expect(page.locator("#clock-time")).not_to_have_attribute("data-time-ms", start or "", timeout=5000)
        _shot(page, artifacts, "dashboard-after-restart")
    finally:
        server.stop()
        (artifacts / "restart-server.log").write_text(server.output())


def test_lost_records_stay_on_the_page_after_their_offsets_are_written_again(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    page.goto(live_lab.url + "/scenarios/")
    page.locator('[data-scenario="unclean-election"]').get_by_role("button", name="Open as a lab").click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/$"))
    expect(page.locator("#live-status")).to_have_text("● live", timeout=20_000)
    panel = page.locator("#lost-records")
    expect(panel).to_be_hidden()
    player = page.locator("#scenario-player")
    expect(player).to_have_attribute("data-status", "ready", timeout=20_000)
    page.locator("button[data-player=play]").click()
    expect(player).to_have_attribute("data-status", "passed", timeout=90_000)

    expect(panel).to_be_visible()
    expect(panel).to_contain_text("4 acknowledged records lost")
    lost = panel.locator('details[data-partition="t-0"]')
    expect(lost).to_have_attribute("data-offsets", "3..6")
    expect(lost.locator("tbody tr")).to_have_count(4)
    _shot(page, artifacts, "lost-records", "#lost-records")

    # The new leader takes writes at the lost offsets: the panel keeps every loss.
    form = page.locator("#form-produce")
    form.get_by_label("Topic").fill("t")
    form.get_by_label("Records").fill("6")
    form.get_by_role("button", name="Produce").click()
    expect(page.locator("#toast")).to_contain_text("6 of 6 record(s) acknowledged")
    # A frame drawn after the writes: the leader's log of t-0 ends at 9 (3 kept + 6 new).
    page.wait_for_function(
        "() => [...document.querySelectorAll('#plog-t .rlog')].some(r => r.dataset.leo === '9')",
        timeout=10_000,
    )
    expect(lost).to_have_attribute("data-offsets", "3..6")
    expect(panel).to_contain_text("4 acknowledged records lost")
    _shot(page, artifacts, "lost-records-after-reuse", "#lost-records")


SECONDS_LEFT = re.compile(r"expires in (\d+\.\d) s")


def _seconds_left(page: Page, broker: int) -> float:
    match = SECONDS_LEFT.search(page.locator(f"#session-{broker}").inner_text())
    assert match, page.locator(f"#session-{broker}").inner_text()
    return float(match.group(1))


def test_a_killed_or_paused_brokers_session_is_shown_as_zookeeper_sees_it(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    new_lab(page, live_lab, "Sessions", session_timeout_ms=4000)
    two, three = page.locator("#session-2"), page.locator("#session-3")
    expect(two).to_have_attribute("data-session", "connected", timeout=10_000)
    expect(two).to_have_text(re.compile(r"session connected$"))

    # A kill: ZooKeeper hears nothing more, and the line counts down to the session's expiry, live.
    page.locator("#broker-2 button[data-action=kill]").click()
    expect(two).to_have_attribute("data-session", "unheard")
    first = _seconds_left(page, 2)
    assert 2.0 <= first <= 4.0  # zookeeper.session.timeout.ms from when ZooKeeper last heard it
    page.wait_for_function(
        """(limit) => { const m = /expires in (\\d+\\.\\d) s/.exec(document.querySelector('#session-2').textContent);
                       return m !== null && Number(m[1]) <= limit; }""",
        arg=first - 1.0,
        timeout=3000,
    )
    _shot(page, artifacts, "session-countdown", "#view-map")
    # The real server expires it: the znode goes, and the line says so.
    expect(two).to_have_attribute("data-session", "expired", timeout=8000)
    expect(two).to_have_text(re.compile(r"session expired: /brokers/ids/2 gone$"))
    expect(page.locator('#zookeeper li.zn:not(.gone)[data-path="/brokers/ids/2"]')).to_have_count(0)

    # A pause: the broker still believes its session is connected; ZooKeeper expires it all the same.
    page.locator("#broker-3 button[data-action=pause]").click()
    expect(page.locator("#broker-3")).to_have_attribute("data-state", "paused")
    expect(three).to_have_attribute("data-session", "unheard")
    expect(three).to_have_attribute("data-session", "expired", timeout=8000)
    expect(three).to_have_text(re.compile(r"session expired: /brokers/ids/3 gone$"))
    expect(three).to_have_attribute("title", re.compile(r"the paused broker does not know yet"))
    expect(page.locator("#broker-3")).to_have_attribute("data-state", "paused")
    _shot(page, artifacts, "session-expired", "#view-map")


def test_a_partition_under_its_topics_min_insync_replicas_is_badged_and_placement_reads_off_the_map(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    lab_url = new_lab(page, live_lab, "Min ISR", session_timeout_ms=2000)
    form = page.locator("#form-topic")
    form.get_by_label("Name").fill("orders")
    form.get_by_label("Partitions").fill("3")
    form.get_by_label("Replication factor").fill("3")
    form.get_by_label("min.insync.replicas").fill("3")
    form.get_by_role("button", name="Create topic").click()
    expect(page.locator("#toast")).to_contain_text("Topic orders created")
    topic = page.locator("#cluster-map tbody[data-topic=orders] tr.topic-row")
    expect(topic).to_contain_text("min.insync.replicas 3 (topic)")
    # The placement rule by index in id order, worked through on this lab's own topic.
    corner = page.locator("#cluster-map th.corner")
    expect(corner).to_contain_text(
        "on the broker at index (i + j) mod 3 in id order (0: broker 1, 1: broker 2, 2: broker 3)"
    )
    expect(corner).to_contain_text("e.g. orders-1, replica 2: (1 + 2) mod 3 = 0 → broker 1")
    expect(page.locator("#map-orders-1 td[data-broker='1']")).to_contain_text("r2")

    page.locator("#broker-3 button[data-action=kill]").click()
    rows = page.locator("#cluster-map tr.partition[data-under-min-isr=true]")
    expect(rows).to_have_count(3, timeout=10_000)
    expect(page.locator("#map-orders-0 .under-min-isr")).to_have_attribute(
        "title", re.compile(r"min\.insync\.replicas 3\. Under min ISR: .*NOT_ENOUGH_REPLICAS")
    )
    expect(topic).to_contain_text("3 under min ISR")
    log = page.locator("#plog-orders-0")
    expect(log.locator(".under-min-isr")).to_contain_text("under min ISR: acks=all fails")
    expect(log.locator(".nums span").first).to_have_attribute(
        "title", re.compile(r"min\.insync\.replicas: topic 3 \(lab 1, Kafka 1\)")
    )
    _shot(page, artifacts, "under-min-isr", "#view-map")

    page.goto(lab_url + "admin/")
    row = page.locator("#topic-orders")
    expect(row).to_have_attribute("data-under-min-isr", "3")
    expect(row.locator(".under-min-isr")).to_have_text("✕ under min ISR: 3")
    _shot(page, artifacts, "adminpanel-under-min-isr")


def test_the_timeline_shows_what_a_student_follows_and_producers_say_what_they_do(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    new_lab(page, live_lab, "Timeline", session_timeout_ms=2000)
    create_topic(page, "orders", 3, 3)
    producer = page.locator("#form-add-producer")
    producer.get_by_label("Topic").fill("orders")
    producer.get_by_label("Name").fill("checkout")
    producer.get_by_role("button", name="Add producer").click()
    expect(page.locator("#toast")).to_contain_text("orders")
    consumer = page.locator("#form-add-consumer")
    consumer.get_by_label("Group").fill("billing")
    consumer.get_by_label("Topics").fill("orders")
    consumer.get_by_role("button", name="Add consumer").click()  # the first group makes __consumer_offsets
    form = page.locator("#form-produce")
    form.get_by_label("Topic").fill("orders")
    form.get_by_label("Records").fill("5")
    form.get_by_role("button", name="Produce").click()
    expect(page.locator("#toast")).to_contain_text("5 of 5 record(s) acknowledged")

    # Producers: their own tooltips, and the topic each wrote to (the produce form's one included).
    checkout = page.locator("#client-checkout")
    expect(checkout.locator("button[data-action=client-stop]").locator("..")).to_have_attribute(
        "title", "Stop checkout: it sends no new records; those already sent still get their answers"
    )
    expect(checkout.locator("button[data-action=client-crash]").locator("..")).to_have_attribute(
        "title", re.compile(r"^Crash checkout: records it had not sent yet are lost")
    )
    expect(page.locator("#client-dashboard-acks-all td").first).to_have_text("orders · acks=all")

    # All: no housekeeping; the Housekeeping filter shows it apart.
    timeline = page.locator("#timeline")
    expect(timeline.locator(".ev[data-housekeeping=true]").first).to_be_attached(timeout=10_000)
    expect(timeline.locator(".ev[data-housekeeping=true]:not([hidden])")).to_have_count(0)
    expect(timeline.locator(".ev:not([hidden])").first).to_be_visible()
    expect(timeline.locator(".ev:not([hidden]) .t").first).to_have_text(re.compile(r"^\d+:\d\d\.\d{3}$"))
    page.locator("#timeline-filters .chip[data-filter=housekeeping]").click()
    expect(timeline.locator(".ev[data-housekeeping=false]:not([hidden])")).to_have_count(0)
    expect(timeline.locator(".ev:not([hidden])[data-topic=__consumer_offsets]").first).to_be_visible()
    _shot(page, artifacts, "timeline-housekeeping", "#view-timeline")

    # A broker's filter keeps the elections of the partitions it led.
    led = page.locator("#map-orders-1").get_attribute("data-leader")
    page.locator(f"#broker-{led} button[data-action=kill]").click()
    expect(page.locator("#map-orders-1")).not_to_have_attribute("data-leader", led or "", timeout=10_000)
    page.locator(f'#timeline-filters .chip[data-filter=broker][data-value="{led}"]').click()
    election = timeline.locator(".ev:not([hidden])[data-kind=leader_election][data-topic=orders]")
    expect(election.first).to_be_visible()
    expect(election.first).to_contain_text(f"leader {led} -> ")
    expect(timeline.locator(f'.ev:not([hidden]):not([data-brokers~="{led}"])')).to_have_count(0)
    _shot(page, artifacts, "timeline-broker-filter", "#view-timeline")


def test_a_partitions_idempotent_producers_are_shown_under_its_log(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    new_lab(page, live_lab, "Idempotence", session_timeout_ms=2000)
    create_topic(page, "orders", 1, 3)
    form = page.locator("#form-produce")
    form.get_by_label("Topic").fill("orders")
    form.get_by_label("Records").fill("5")
    form.get_by_role("button", name="Produce").click()
    expect(page.locator("#toast")).to_contain_text("5 of 5 record(s) acknowledged")
    # The page's producer is idempotent (Kafka 3.x's default): the leader knows its id, epoch and sequence.
    row = page.locator("#plog-orders-0 .producers .producer")
    expect(row).to_have_count(1, timeout=10_000)
    expect(row).to_have_attribute("data-producer-epoch", "0")
    expect(row).to_have_attribute("data-last-sequence", "4")
    expect(row).to_contain_text("last sequence 4")
    expect(row).to_have_attribute("title", re.compile(r"its next batch must start at sequence 5"))
    expect(page.locator("#plog-orders-0 .producers")).to_have_attribute(
        "title", re.compile(r"the leader keeps each one's last five batches")
    )
    # (A screenshot scrolls to what it takes; scrolling first could catch the log mid-redraw, detached.)
    _shot(page, artifacts, "idempotent-producers", "#plogs")
