"""Consumer groups: members, ownership, committed offsets and lag, and the rebalance timeline."""

from __future__ import annotations

from lab.engine.events import Event
from lab.visuals.groups import groups_view
from tests.visuals.snapshots import three_brokers

GROUP = {
    "state": "Stable",
    "generation": 3,
    "assignor": "range",
    "leader": "billing-1-8c0e4f6a",
    "coordinator": 2,
    "members": [
        {
            "member_id": "billing-2-11112222",
            "client_id": "billing-2",
            "instance_id": None,
            "assignment": [["orders", 2]],
        },
        {
            "member_id": "billing-1-8c0e4f6a",
            "client_id": "billing-1",
            "instance_id": None,
            "assignment": [["orders", 1], ["orders", 0]],
        },
    ],
    "committed": {"orders/0": 4, "orders/1": 9},
    "lag": {"orders/0": 1, "orders/1": 0, "orders/2": 5},
    "total_lag": 6,
}


def _rebalance(seq: int, generation: int, revoked: dict, assigned: dict, members: list[str]) -> Event:
    return Event(
        seq=seq,
        time_ms=seq * 100,
        kind="rebalance",
        text=f"group billing generation {generation}",
        group="billing",
        data={
            "generation": generation,
            "protocol": "range",
            "revoked": revoked,
            "assigned": assigned,
            "members": members,
            "reason": "member billing-3 left",
        },
    )


def test_members_own_partitions_with_committed_offsets_and_lag() -> None:
    view = groups_view(three_brokers(groups={"billing": GROUP}), [], {})
    (g,) = view.groups
    assert (g.state, g.generation, g.assignor, g.coordinator, g.total_lag) == ("Stable", 3, "range", 2, 6)
    assert [(m.client_id, m.partitions, m.leader) for m in g.members] == [
        ("billing-1", ("orders-0", "orders-1"), True),
        ("billing-2", ("orders-2",), False),
    ]
    assert g.members[0].short_id == "0e4f6a"
    assert [(o.topic, o.partition, o.owner, o.committed, o.lag) for o in g.partitions] == [
        ("orders", 0, "billing-1", 4, 1),
        ("orders", 1, "billing-1", 9, 0),
        ("orders", 2, "billing-2", None, 5),
    ]


def test_rebalances_say_what_each_member_gave_up_and_received_newest_first() -> None:
    events = [
        _rebalance(
            1,
            1,
            {},
            {"billing-1-8c0e4f6a": [["orders", 0], ["orders", 1], ["orders", 2]]},
            ["billing-1-8c0e4f6a"],
        ),
        _rebalance(
            2,
            2,
            {"billing-1-8c0e4f6a": [["orders", 2]]},
            {"billing-2-11112222": [["orders", 2]]},
            ["billing-1-8c0e4f6a", "billing-2-11112222"],
        ),
        _rebalance(
            3, 3, {"billing-3-99998888": [["orders", 1]]}, {}, ["billing-1-8c0e4f6a", "billing-2-11112222"]
        ),
    ]
    (g,) = groups_view(three_brokers(groups={"billing": GROUP}), events, {}).groups
    assert [r.generation for r in g.rebalances] == [3, 2, 1]
    third, second, _ = g.rebalances
    assert [(c.member_id, c.client, c.gave, c.got, c.left) for c in second.changes] == [
        ("billing-1-8c0e4f6a", "billing-1", ("orders-2",), (), False),
        ("billing-2-11112222", "billing-2", (), ("orders-2",), False),
    ]
    assert second.members == ("billing-1-8c0e4f6a", "billing-2-11112222")
    # A member that is gone is named by its member id, its client id read from it, and marked as having left.
    assert [(c.member_id, c.client, c.gave, c.left) for c in third.changes] == [
        ("billing-3-99998888", "billing-3", ("orders-1",), True)
    ]
    assert third.reason == "member billing-3 left"


def test_a_rebalance_names_clients_as_the_engine_recorded_them() -> None:
    # A member id does not always start with its client id (a static member's may not, in Kafka).
    event = _rebalance(1, 4, {}, {"m-0001-abcdef012345": [["orders", 0]]}, ["m-0001-abcdef012345"])
    event = Event(
        seq=1,
        time_ms=0,
        kind="rebalance",
        text="",
        group="billing",
        data={**event.data, "clients": {"m-0001-abcdef012345": "payments"}},
    )
    (g,) = groups_view(three_brokers(groups={"billing": GROUP}), [event], {}).groups
    (change,) = g.rebalances[0].changes
    assert (change.member_id, change.client, change.got) == ("m-0001-abcdef012345", "payments", ("orders-0",))


def test_no_group_no_view_and_other_groups_rebalances_stay_out() -> None:
    assert groups_view(three_brokers(), [], {}).groups == ()
    other = _rebalance(1, 1, {}, {}, [])
    other = Event(seq=1, time_ms=0, kind="rebalance", text="", group="audit", data=other.data)
    (g,) = groups_view(three_brokers(groups={"billing": GROUP}), [other], {}).groups
    assert g.rebalances == ()


def test_an_abandoned_generation_says_why_and_names_its_members() -> None:
    event = _rebalance(1, 2, {}, {}, ["billing-1-8c0e4f6a", "billing-2-11112222"])
    data = {**event.data, "abandoned": "billing-3-99998888 joined"}
    event = Event(seq=1, time_ms=0, kind="rebalance", text="", group="billing", data=data)
    (g,) = groups_view(three_brokers(groups={"billing": GROUP}), [event], {}).groups
    (r,) = g.rebalances
    assert (r.generation, r.abandoned, r.changes) == (2, "billing-3-99998888 joined", ())
    assert r.members == ("billing-1-8c0e4f6a", "billing-2-11112222")


def test_a_real_clients_member_says_the_host_it_joined_from() -> None:
    real = {**GROUP, "members": [{**GROUP["members"][0], "client_host": "10.0.0.7"}, GROUP["members"][1]]}  # type: ignore[dict-item]
    (g,) = groups_view(three_brokers(groups={"billing": real}), [], {}).groups
    assert [(m.client_id, m.host) for m in g.members] == [("billing-1", ""), ("billing-2", "10.0.0.7")]
