"""Ownership of labs by workers, on the real ZooKeeper: registration, leases, the cap, failover."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from lab.engine.errors import PolicyViolation
from lab.runtime.ownership import Ownership, rendezvous
from tests.processes import wait_until


@pytest.fixture
def installation() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def opened(zookeeper: str, installation: str) -> Iterator[list[Ownership]]:
    made: list[Ownership] = []
    yield made
    for ownership in made:
        ownership.close()


def _worker(zookeeper: str, installation: str, opened: list[Ownership], name: str, cap: int = 5) -> Ownership:
    ownership = Ownership(zookeeper, installation, timeout_s=2.0)
    opened.append(ownership)
    ownership.register(name, channel=f"channel-of-{name}", cap=cap)
    return ownership


def test_rendezvous_is_deterministic_and_moves_only_a_gone_workers_labs() -> None:
    slugs = [f"lab-{n}" for n in range(200)]
    three = {s: rendezvous(s, ["1", "2", "3"])[0] for s in slugs}
    assert three == {s: rendezvous(s, ["3", "1", "2"])[0] for s in slugs}  # any order of names
    assert set(three.values()) == {"1", "2", "3"}  # spread, not all on one
    two = {s: rendezvous(s, ["1", "2"])[0] for s in slugs}
    assert all(two[s] == three[s] for s in slugs if three[s] != "3"), "a lab moved that did not have to"


def test_workers_register_and_a_lab_has_one_owner(
    zookeeper: str, installation: str, opened: list[Ownership]
) -> None:
    one = _worker(zookeeper, installation, opened, "1")
    two = _worker(zookeeper, installation, opened, "2")
    assert [(w.name, w.channel) for w in one.workers()] == [("1", "channel-of-1"), ("2", "channel-of-2")]
    assert one.claim("orders") == (True, "")
    assert two.claim("orders") == (False, "")  # the lease is one's
    assert two.lease("orders") is not None
    assert two.lease("orders").worker == "1"
    assert one.owned() == ["orders"]
    assert two.owned() == []


def test_over_its_cap_a_worker_refuses_and_the_class_server_is_full(
    zookeeper: str, installation: str, opened: list[Ownership]
) -> None:
    one = _worker(zookeeper, installation, opened, "1", cap=2)
    assert one.claim("a") == (True, "")
    assert one.claim("b") == (True, "")
    with pytest.raises(PolicyViolation, match="the class server is full") as refused:
        one.claim("c")
    assert refused.value.name == "POLICY_VIOLATION"
    assert "LAB_MAX_LABS_PER_WORKER" in refused.value.message
    with pytest.raises(PolicyViolation, match="the class server is full"):
        one.candidates("c")
    two = _worker(zookeeper, installation, opened, "2", cap=2)
    assert [w.name for w in two.candidates("c")] == ["2"]  # the full worker is skipped


def test_a_dead_workers_leases_vanish_and_a_survivor_takes_its_labs(
    zookeeper: str, installation: str, opened: list[Ownership]
) -> None:
    one = _worker(zookeeper, installation, opened, "1", cap=10)
    two = _worker(zookeeper, installation, opened, "2", cap=10)
    slugs = [f"lab-{n}" for n in range(6)]
    for slug in slugs:
        assert one.claim(slug)[0]
    assert two.orphans() == []
    opened.remove(one)
    one.close()  # its session ends: registration and leases go with it
    assert wait_until(lambda: two.leases() == [], 10)
    assert [w.name for w in two.workers()] == ["2"]
    assert sorted(two.orphans()) == slugs
    assert two.claim(slugs[0]) == (True, "1")  # it knows where the lab came from
    assert two.claim(slugs[0]) == (True, "")  # already its own
    two.forget(slugs[1])
    assert slugs[1] not in two.orphans()


def test_a_restarted_worker_takes_its_name_again(
    zookeeper: str, installation: str, opened: list[Ownership]
) -> None:
    first = _worker(zookeeper, installation, opened, "1")
    # Another process with the same name (a restarted worker) waits for the old registration to go.
    second = Ownership(zookeeper, installation, timeout_s=2.0)
    opened.append(second)
    opened.remove(first)
    first.close()
    assert second.register("1", channel="new", cap=3).channel == "new"
    assert [w.channel for w in second.workers()] == ["new"]


def test_a_survivor_takes_no_more_orphans_than_its_cap(
    zookeeper: str, installation: str, opened: list[Ownership]
) -> None:
    one = _worker(zookeeper, installation, opened, "1", cap=10)
    two = _worker(zookeeper, installation, opened, "2", cap=3)
    for n in range(6):
        assert one.claim(f"lab-{n}")[0]
    opened.remove(one)
    one.close()
    assert wait_until(lambda: two.leases() == [], 10)
    assert len(two.orphans()) == 3  # the rest wait for a worker with room
    two.forget("lab-0")
    assert "lab-0" not in two.placed()


def test_a_web_process_knows_each_labs_owner_without_asking_zookeeper_until_something_moves(
    zookeeper: str, installation: str, opened: list[Ownership]
) -> None:
    web = Ownership(zookeeper, installation, timeout_s=2.0)
    opened.append(web)
    one = _worker(zookeeper, installation, opened, "1", cap=10)
    two = _worker(zookeeper, installation, opened, "2", cap=10)
    assert one.claim("orders")[0]
    owners = web.cached()
    assert owners.known("orders") is None  # not read yet: the web process reads ZooKeeper (off its loop)
    assert wait_until(lambda: (o := owners.owner("orders")) is not None and o.name == "1", 10)
    known = owners.known("orders")  # read: answered from the cache, on the loop
    assert known is not None
    assert known.name == "1"
    assert owners.owner("payments") is None  # nobody runs it

    # Known now: the answer needs no ZooKeeper, so it holds while the client is cut off from it.
    reads: list[str] = []
    real_get = web.client.get

    def counted_get(path: str, *args: object, **kwargs: object) -> object:
        reads.append(path)
        return real_get(path, *args, **kwargs)

    web.client.get = counted_get  # type: ignore[method-assign]
    for _ in range(20):
        owner = owners.owner("orders")
        assert owner is not None
        assert owner.channel == "channel-of-1"
    assert reads == []
    web.client.get = real_get  # type: ignore[method-assign]

    # Worker 1 dies: its lease goes, and the web process follows at once, then to the lab's new owner.
    opened.remove(one)
    one.close()
    assert wait_until(lambda: owners.owner("orders") is None, 10)
    assert owners.known("orders") is None
    assert two.claim("orders") == (True, "1")
    assert wait_until(lambda: (o := owners.owner("orders")) is not None and o.name == "2", 10)
    assert [w.name for w in owners.workers().values()] == ["2"]
