"""Reassignment plans: replication-factor targets, typed replica lists, and where the leader goes."""

from __future__ import annotations

import pytest

from lab.adminpanel import plan
from lab.engine.errors import IllegalArgument, InvalidReplicaAssignment, InvalidReplicationFactor

BROKERS = (1, 2, 3)


def test_a_higher_replication_factor_adds_brokers_in_placement_order() -> None:
    current = {0: (1,), 1: (2,), 2: (3,)}
    assert plan.for_replication_factor(current, BROKERS, 2) == {0: (1, 2), 1: (2, 3), 2: (3, 1)}
    assert plan.for_replication_factor(current, BROKERS, 3) == {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}
    # A partition placed by hand keeps its replicas and gains the next ones the rule offers.
    assert plan.for_replication_factor({0: (3,)}, BROKERS, 2) == {0: (3, 1)}


def test_a_lower_replication_factor_keeps_the_first_replicas() -> None:
    current = {0: (1, 2, 3), 1: (2, 3, 1)}
    assert plan.for_replication_factor(current, BROKERS, 1) == {0: (1,), 1: (2,)}


@pytest.mark.parametrize(
    ("rf", "message"),
    [
        (4, "Replication factor: 4 larger than available brokers: 3."),
        (0, "Replication factor must be larger than 0."),
        (-2, "Replication factor must be larger than 0."),
    ],
)
def test_an_impossible_replication_factor_is_kafkas_error(rf: int, message: str) -> None:
    with pytest.raises(InvalidReplicationFactor) as caught:
        plan.for_replication_factor({0: (1, 2)}, BROKERS, rf)
    assert caught.value.message == message


def test_typed_replicas_are_checked() -> None:
    assert plan.parse_replicas(" 3, 1 2 ", BROKERS, partition=0) == (3, 1, 2)
    cases = {
        "": "partition 4 needs at least one replica",
        "1,1": "partition 4 lists a broker twice: [1, 1]",
        "1,9": "partition 4: there is no broker 9 (brokers: 1, 2, 3)",
        "1;2": "partition 4: replicas are broker ids separated by commas, not '1;2'",
    }
    for text, message in cases.items():
        with pytest.raises(InvalidReplicaAssignment) as caught:
            plan.parse_replicas(text, BROKERS, partition=4)
        assert caught.value.message == message


def test_moves_say_what_is_added_and_removed_and_where_the_leader_goes() -> None:
    current = {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}
    targets = {0: (1, 2), 1: (3, 1), 2: (3, 1, 2)}
    leaders = {0: 1, 1: 2, 2: 3}
    m0, m1, m2 = plan.moves(current, targets, leaders, live=BROKERS)
    assert (m0.added, m0.removed, m0.leader_after, m0.leader_moves) == ((), (3,), 1, False)
    # The leader is not in the new set: the first live replica of it takes over.
    assert (m1.added, m1.removed, m1.leader_after, m1.leader_moves) == ((), (2,), 3, True)
    assert not m2.changes
    # With broker 3 dead, the next live target replica leads.
    assert plan.leader_after(2, (3, 1), live=(1, 2)) == 1
    assert plan.leader_after(2, (3,), live=(1, 2)) == -1
    with pytest.raises(InvalidReplicaAssignment, match="there is no partition 7"):
        plan.moves(current, {7: (1,)}, leaders, live=BROKERS)


def test_a_plan_goes_to_the_page_and_back_checked() -> None:
    targets = {1: (3, 1), 0: (1, 2)}
    encoded = plan.encode(targets)
    assert encoded == '{"0":[1,2],"1":[3,1]}'
    assert plan.decode(encoded, BROKERS) == {0: (1, 2), 1: (3, 1)}
    for bad in ("", "[1]", "{}", '{"x": [1]}', '{"0": 1}'):
        with pytest.raises(IllegalArgument):
            plan.decode(bad, BROKERS)
    with pytest.raises(InvalidReplicaAssignment, match="there is no broker 8"):
        plan.decode('{"0": [1, 8]}', BROKERS)
