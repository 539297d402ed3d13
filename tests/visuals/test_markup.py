"""The fragments drawn in every frame, as the page gets them: every value escaped, what a student reads there."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from html.parser import HTMLParser

from django.template.defaultfilters import floatformat

from lab.visuals.clients import ClientStats
from lab.visuals.clock import ClockTime
from lab.visuals.markup import (
    PLAIN,
    charts_html,
    client_stats_html,
    clock_time_html,
    dom_id,
    frame_html,
    groups_html,
    offset_cells,
    partition_html,
    tenths,
)
from lab.visuals.partition_log import partition_log, partition_logs
from tests.visuals.snapshots import log, partition, three_brokers


class Tags(HTMLParser):
    """Every start tag's attributes, and the text, as a browser reads them (entities decoded)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.open: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.depth = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open.append((tag, dict(attrs)))
        self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def with_class(self, name: str) -> list[dict[str, str | None]]:
        return [a for _, a in self.open if name in (a.get("class") or "").split()]


def _topic(parts: list[dict], **snap: object) -> object:
    snapshot = three_brokers(topics={"orders": {"config": {}, "partitions": parts}}, **snap)
    (topic,) = partition_logs(snapshot, {}, rate=1.0).topics
    return topic


def test_offset_cells_are_one_element_per_offset() -> None:
    assert offset_cells("cue") == '<i class="kc"></i><i class="ku"></i><i class="ke"></i>'
    assert offset_cells("") == ""


def test_a_partition_shows_each_replicas_offsets_role_and_lag() -> None:
    part = partition(
        1,
        [1, 2, 3],
        leader=1,
        isr=[1, 2],
        logs={1: log(0, 3, 5, role="leader"), 2: log(0, 3, 4), 3: log(0, 2, 2)},
    )
    topic = _topic([part])
    (p,) = topic.partitions  # type: ignore[attr-defined]
    html = partition_html(topic, p, {"leader_epoch": "the leader's epoch"})  # type: ignore[arg-type]
    page = Tags(html)
    assert page.depth == 0  # every element closed
    (box,) = page.with_class("partition-log")
    assert box["id"] == "plog-orders-1"
    rows = page.with_class("rlog")
    assert [(r["data-broker"], r["data-hw"], r["data-leo"]) for r in rows] == [
        ("1", "3", "5"),
        ("2", "3", "4"),
        ("3", "2", "2"),
    ]
    assert "role-leader" in (rows[0]["class"] or "")
    assert "out-isr" in (rows[2]["class"] or "")
    assert "out-isr" not in (rows[1]["class"] or "")
    text = "".join(page.text)
    assert "orders-1" in text
    assert "leader 1" in text
    assert "\N{MINUS SIGN}3" in text  # broker 3 is three records behind the leader's log end
    assert len(page.with_class("kc")) == 3 + 3 + 2  # the committed offsets of each replica


def test_an_offline_partition_and_flights_in_a_paused_lab_say_so() -> None:
    part = partition(0, [1, 2, 3], leader=-1, isr=[], logs={1: log(0, 3, 3), 2: log(0, 3, 3)})
    topic = _topic([part])
    (p,) = topic.partitions  # type: ignore[attr-defined]
    html = partition_html(topic, p, {})  # type: ignore[arg-type]
    assert "✕ offline" in html
    view = partition_log(
        "orders",
        partition(0, [1, 2], leader=1, isr=[1, 2], logs={1: log(0, 3, 3, role="leader"), 2: log(0, 3, 3)}),
        in_flight=[
            {"id": 7, "kind": "Fetch", "src": 2, "dst": 1, "sent_ms": 0, "deliver_ms": 10, "response": False}
        ],
        now_ms=5,
        rate=0.0,  # paused: the fetch stands still
        config={},
    )
    drawn = Tags(partition_html(topic, view, {}))  # type: ignore[arg-type]
    assert drawn.depth == 0
    flights = drawn.with_class("flight")
    assert [(f["data-src"], f["data-dst"]) for f in flights] == [("2", "1")]
    assert "still" in (flights[0]["class"] or "")
    assert "--dur: 0s" in (flights[0]["style"] or "")


def test_every_value_is_escaped() -> None:
    part = partition(0, [1], leader=1, isr=[1], logs={1: log(0, 1, 1, role="leader")})
    topic = _topic([part])
    (p,) = topic.partitions  # type: ignore[attr-defined]
    evil = '"><script>alert(1)</script>&'
    (replica,) = p.replicas
    marked = replace(
        p,
        replicas=(
            replace(replica, title=evil, role=evil, markers=(replace(replica.markers[0], label=evil),)),
        ),
        min_isr_title=evil,
        under_min_isr=True,
    )
    html = partition_html(topic, marked, {"leader_epoch": evil, "in_flight": evil})  # type: ignore[arg-type]
    assert "<script>" not in html
    page = Tags(html)
    assert page.depth == 0
    assert evil in [a.get("title") for _, a in page.open]  # the browser reads back exactly what was meant
    assert evil in page.text
    assert re.search(r"&quot;&gt;&lt;script&gt;alert\(1\)&lt;/script&gt;&amp;", html)


def test_a_topic_name_becomes_an_id_a_browser_can_find() -> None:
    assert dom_id("orders.v1_x-y") == "orders.v1_x-y"
    assert dom_id("a b/c") == "a_b_c"


def test_the_clock_says_the_virtual_time_and_the_rate_the_page_runs_it_on_at() -> None:
    running = Tags(clock_time_html(ClockTime(time_ms=214_019, paused=False, rate=0.1)))
    ((tag, attrs),) = running.open
    assert (tag, attrs["id"], attrs["hx-swap-oob"]) == ("span", "clock-time", "true")
    assert (attrs["data-time-ms"], attrs["data-rate"], attrs["class"]) == ("214019", "0.1", "clock-time")
    assert "".join(running.text).strip() == "3:34.019"
    ((_, paused),) = Tags(clock_time_html(ClockTime(time_ms=0, paused=True, rate=0.0))).open
    assert paused["class"] == "clock-time paused"


def test_the_frames_marker_carries_its_number_and_when_its_state_was_read() -> None:
    @dataclass(frozen=True)
    class Meta:
        seq: int = 12
        time_ms: int = 5_000
        made_at: float = 1764669600.1234567
        event_at: float = 1764669600.0

    ((tag, attrs),) = Tags(frame_html(Meta())).open
    assert (tag, attrs["id"], attrs["data-frame"], attrs["data-time-ms"]) == (
        "div",
        "lab-frame",
        "12",
        "5000",
    )
    assert (attrs["data-made-at"], attrs["data-event-at"]) == ("1764669600.123457", "1764669600.000000")
    assert "hidden" in attrs


def test_each_clients_counters_are_swapped_by_their_own_id_and_escaped() -> None:
    evil = '<b>"x"</b>'
    html = client_stats_html(
        ClientStats(rows=(("orders-app", (("sent", "12"), ("acked", "10"))), ("odd name", ((evil, evil),))))
    )
    page = Tags(html)
    assert page.depth == 0
    assert [a["id"] for _, a in page.open if a.get("class") == "stats"] == [
        "client-stats-orders-app",
        "client-stats-odd_name",
    ]
    assert '<b>"x"</b>' not in html
    assert evil in "".join(page.text)
    assert "12 sent" in " ".join("".join(page.text).split())


def test_the_renderer_draws_these_fragments_here() -> None:
    assert set(PLAIN) == {"clock-time", "frame", "client-stats", "charts", "groups"}


def test_the_charts_show_each_series_its_last_value_and_the_scale() -> None:
    from lab.visuals.charts import Sample, charts

    samples = [
        Sample(time_ms=t, produced=t // 200, consumed=t // 250, hw_gap=t // 1000 % 3, lag=(("billing", 2),))
        for t in range(0, 10_000, 100)
    ]
    page = Tags(charts_html(charts(samples)))
    assert page.depth == 0
    figures = [a for tag, a in page.open if tag == "figure"]
    assert [f["id"] for f in figures] == ["chart-throughput", "chart-hw-gap", "chart-lag"]
    assert figures[0]["data-last"] == "5.0,4.0"  # records a second, produced and consumed
    assert len([a for tag, a in page.open if tag == "polyline"]) == 4
    text = " ".join("".join(page.text).split())
    assert "5 produced" in text
    assert "2 billing" in text
    assert "\N{MINUS SIGN}30 s" in text
    assert "no group yet" in charts_html(charts(()))


def test_tenths_write_a_number_as_floatformat_minus_one_does_in_english() -> None:
    values: list[object] = [0, 3, -3, 0.0, 2.5, 2.96, 2.94, 0.05, 0.15, 0.25, 1.35, -1.25, -0.04, 12345.65]
    values += [n / 100 for n in range(-300, 300, 7)] + [n / 3 for n in range(50)] + [10**7 + 0.45, "7"]
    for value in values:
        assert tenths(value) == floatformat(value, "-1"), value
    assert tenths(None) == ""
    assert tenths("not a number") == ""


def test_a_group_shows_its_owners_offsets_lag_members_and_rebalances_escaped() -> None:
    from lab.engine.events import Event
    from lab.visuals.groups import groups_view

    evil = '<i>"m"</i>'
    snapshot = three_brokers(
        groups={
            "billing": {
                "state": "Stable",
                "generation": 2,
                "assignor": "range",
                "coordinator": 1,
                "members": [
                    {
                        "member_id": f"{evil}-1",
                        "client_id": evil,
                        "assignment": [["orders", 0], ["orders", 1]],
                    },
                ],
                "committed": {"orders/0": 4},
                "lag": {"orders/0": 1},
                "total_lag": 1,
            }
        }
    )
    rebalance = Event(
        seq=3,
        time_ms=2_019,
        kind="rebalance",
        text="billing rebalanced",
        group="billing",
        data={
            "generation": 2,
            "reason": evil,
            "members": [f"{evil}-1"],
            "assigned": {f"{evil}-1": [["orders", 0]]},
        },
    )
    html = groups_html(groups_view(snapshot, (rebalance,), {}))
    page = Tags(html)
    assert page.depth == 0
    assert "<i>" not in html
    (group,) = [a for tag, a in page.open if tag == "article"]
    assert (group["id"], group["data-generation"], group["data-state"]) == ("group-billing", "2", "Stable")
    text = " ".join("".join(page.text).split())
    assert "lag 1" in text
    escaped = "&lt;i&gt;&quot;m&quot;&lt;/i&gt;"
    # partition, owner, committed, lag
    assert (
        f'<th scope="row">orders-0</th><td>{escaped}</td><td class="num">4</td><td class="num">1</td>' in html
    )
    assert '<th scope="row">orders-1</th><td>' + escaped + '</td><td class="num">—</td>' in html
    assert evil + " …" in text
    assert "gen 2 0:02.019" in text
    assert "1 member: " + evil + "-1" in text
    assert "received orders-0" in text
    assert "No consumer group yet" in groups_html(groups_view(three_brokers(), (), {}))
