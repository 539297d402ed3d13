"""Producer ids in blocks of 1000 through /latest_producer_id_block, on both metadata stores."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lab.engine.cluster import Cluster
from lab.engine.invariants import InvariantChecker
from lab.engine.metadata import paths
from lab.engine.metadata.zookeeper import ZooKeeperStore
from lab.engine.network import Endpoint
from lab.engine.protocol import InitProducerIdRequest, InitProducerIdResponse
from tests.engine.helpers import checked_cluster


def init_producer_ids(c: Cluster, brokers: list[int], name: str = "asker") -> list[Any]:
    """Send InitProducerId to each broker at once (over the engine's network); their answers."""
    answers: dict[int, Any] = {}
    endpoint = Endpoint(c.network, c.scheduler, name, lambda env: None)
    try:
        for i, broker in enumerate(brokers):
            endpoint.request(
                broker, InitProducerIdRequest(), lambda r, i=i: answers.__setitem__(i, r), timeout_ms=30_000
            )
        assert c.run_until_true(lambda: len(answers) == len(brokers), 30_000)
    finally:
        endpoint.close()
    return [answers[i] for i in range(len(brokers))]


def block_znode(c: Cluster) -> dict[str, Any]:
    (node,) = [n for n in c.zookeeper_tree() if n["path"] == paths.LATEST_PRODUCER_ID_BLOCK]
    return node


def test_each_broker_takes_its_own_block_of_1000_and_writes_kafkas_json() -> None:
    with checked_cluster(3) as c:
        assert block_znode(c)["data"] == ""  # made empty at start-up, as Kafka's persistent paths
        first = init_producer_ids(c, [1, 1, 2])
        assert all(isinstance(a, InitProducerIdResponse) and a.error is None for a in first)
        assert [(a.producer_id, a.producer_epoch) for a in first] == [(0, 0), (1, 0), (1000, 0)]
        node = block_znode(c)
        assert json.loads(node["data"]) == {
            "version": 1,
            "broker": 2,
            "block_start": "1000",
            "block_end": "1999",
        }
        assert node["data"] == '{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
        assert node["version"] == 2
        taken = [e.text for e in c.journal.of_kind("producer_id_block")]
        assert taken == [
            "broker 1 took producer ids 0-999 from /latest_producer_id_block",
            "broker 2 took producer ids 1000-1999 from /latest_producer_id_block",
        ]


def test_brokers_asking_at_once_lose_the_conditional_set_and_read_again() -> None:
    with checked_cluster(3) as c:
        answers = init_producer_ids(c, [1, 2, 3])
        ids = sorted(a.producer_id for a in answers)
        assert ids == [0, 1000, 2000]  # three distinct blocks, whoever won each race
        assert block_znode(c)["version"] == 3
        assert len(c.journal.of_kind("producer_id_block_retry")) >= 2  # the losers read again


def test_a_block_written_by_another_broker_is_not_reused() -> None:
    with checked_cluster(2) as c:
        # Another cluster member (say broker 9, gone since) took ids up to 41999.
        _set_block(c, 41000)
        (answer,) = init_producer_ids(c, [2])
        assert answer.producer_id == 42000


def _set_block(c: Cluster, start: int) -> None:
    session = c.store.open_session(name="outsider", timeout_ms=6000, on_state=lambda _s: None)
    done = session.set(
        paths.LATEST_PRODUCER_ID_BLOCK,
        paths.encode_producer_id_block(
            paths.ProducerIdBlock(broker=9, block_start=start, block_end=start + 999)
        ),
    )
    assert c.run_until_true(done.done, 10_000)
    done.result()
    session.close()


def test_a_restarted_broker_takes_a_fresh_block() -> None:
    with checked_cluster(2) as c:
        (before,) = init_producer_ids(c, [1])
        c.kill_broker(1)
        c.restart_broker(1)
        assert c.run_until_true(lambda: c.brokers[1].state.value == "running", 60_000)
        (after,) = init_producer_ids(c, [1], name="asker-2")
        assert (before.producer_id, after.producer_id) == (0, 1000)


@pytest.fixture
def zk_cluster(zookeeper: str, tmp_path) -> Iterator[Cluster]:  # type: ignore[no-untyped-def]
    name = f"test-{uuid.uuid4().hex[:8]}"
    cluster = Cluster.create(
        brokers=2,
        seed=1,
        zookeeper=zookeeper,
        name=name,
        data_dir=tmp_path,
        config={"lab.network.latency.ms": "1"},
    )
    InvariantChecker.attach(cluster)
    try:
        yield cluster
    finally:
        cluster.close()
        cleanup = ZooKeeperStore(zookeeper, chroot=f"/kafka-lab/{name}")
        cleanup.delete_chroot()
        cleanup.close()


@pytest.mark.zookeeper
def test_blocks_go_through_a_real_zookeeper(zk_cluster: Cluster) -> None:
    c = zk_cluster
    first, other, second = (a.producer_id for a in init_producer_ids(c, [1, 2, 1]))
    # Whichever broker wrote first took ids 0-999, the other 1000-1999; broker 1's come from its one block.
    assert second == first + 1
    assert {first // 1000, other // 1000} == {0, 1}
    assert first % 1000 == 0
    assert other % 1000 == 0
    data = json.loads(block_znode(c)["data"])
    assert data["version"] == 1
    assert (data["block_start"], data["block_end"]) in (("0", "999"), ("1000", "1999"))
    assert block_znode(c)["version"] == 2
