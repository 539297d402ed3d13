"""A lab's spec: checked when made, and round-tripped through the Lab row's JSON."""

from __future__ import annotations

import pytest

from lab.engine.errors import IllegalArgument, InvalidConfig
from lab.runtime.spec import ClientSpec, LabSpec, TopicSpec, check_rate

BASE = {"slug": "s", "name": "S", "data_dir": "/d", "chroot": "/kafka-lab/s"}


def test_settings_round_trip() -> None:
    spec = LabSpec(
        **BASE,
        brokers=5,
        config={"zookeeper.session.timeout.ms": "1500"},
        rate=0.5,
        topics=(
            TopicSpec(name="orders", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}),
        ),
        clients=(
            ClientSpec(kind="consumer", name="b1", topics=("orders",), group="billing", processing_ms=20),
        ),
    )
    again = LabSpec.from_settings(
        slug="s", name="S", data_dir="/d", chroot="/kafka-lab/s", brokers=5, settings=spec.settings()
    )
    assert again == spec


def test_changes_make_new_specs() -> None:
    spec = LabSpec(**BASE)
    added = spec.with_topic(TopicSpec(name="a")).with_client(
        ClientSpec(kind="producer", name="p", topics=("a",))
    )
    assert [t.name for t in added.topics] == ["a"]
    assert [c.name for c in added.clients] == ["p"]
    assert added.without_client("p").clients == ()
    assert spec.topics == ()
    assert added.with_rate(2).rate == 2


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"brokers": 13}, IllegalArgument, "a lab has 1 to 12 brokers, not 13"),
        ({"rate": 0.01}, IllegalArgument, "the clock runs at 0.1x to 10x, not 0.01x"),
        ({"config": {"zookeeper.session.timeout.ms": "5"}}, InvalidConfig, "must be at least 1000"),
    ],
)
def test_a_bad_spec_is_refused(kw: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        LabSpec(**BASE, **kw)


def test_rates_at_the_ends_are_allowed() -> None:
    assert check_rate(0.1) == 0.1
    assert check_rate(10) == 10
