"""A transactional producer from the page or the API: Kafka's calls by name, Kafka's errors by name when
they come out of order, and bad input refused where it arrives with nothing changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.engine.errors import (
    IllegalArgument,
    IllegalState,
    InvalidProducerEpoch,
    KafkaError,
    ProducerFenced,
)
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.walltime import FakeWall, still_lab, until_done


@pytest.fixture
def lab(tmp_path: Path) -> Any:
    live, wall = still_lab(
        tmp_path, "txn", topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),)
    )
    try:
        yield live, wall
    finally:
        live.stop()


def _call(lab: LiveLab, wall: FakeWall, name: str, **args: Any) -> Any:
    return until_done(lab, wall, lab.act(name, args))


def _refused(lab: LiveLab, wall: FakeWall, name: str, **args: Any) -> KafkaError:
    with pytest.raises(KafkaError) as raised:
        _call(lab, wall, name, **args)
    return raised.value


def _snapshot(lab: LiveLab) -> dict[str, Any]:
    return dict(lab.submit(lambda lab: lab.cluster.snapshot()).result(10))


def _coordinator_state(lab: LiveLab, transactional_id: str) -> str:
    return str(_snapshot(lab)["transactions"][transactional_id]["state"])


def _values(lab: LiveLab, isolation: str) -> list[str]:
    def read(lab: LiveLab) -> list[str]:
        consumer = lab.cluster.consumer(isolation_level=isolation, auto_offset_reset="earliest")
        consumer.assign([("orders", 0)])
        seen: list[str] = []
        for _ in range(20):
            seen += [(r.value or b"").decode() for r in consumer.poll(100)]
        consumer.close()
        return seen

    return list(lab.submit(read).result(30))


def test_a_transaction_driven_by_commands_commits_and_read_committed_sees_it_only_then(lab: Any) -> None:
    live, wall = lab
    said = _call(live, wall, "txn-init", producer="tp", transactional_id="orders-tx")
    assert "producer id" in said
    assert "epoch 0" in said
    assert _coordinator_state(live, "orders-tx") == "Empty"
    _call(live, wall, "txn-begin", producer="tp")
    sent = _call(live, wall, "txn-send", producer="tp", topic="orders", count=3)
    assert "3 of 3 record(s) acknowledged" in sent
    assert "open transaction" in sent
    assert _coordinator_state(live, "orders-tx") == "Ongoing"
    assert len(_values(live, "read_uncommitted")) == 3
    assert _values(live, "read_committed") == []  # the LSO holds them back
    said = _call(live, wall, "txn-commit", producer="tp")
    assert "COMMIT markers" in said
    until_done(live, wall, live.submit(lambda lab: None))
    assert len(_values(live, "read_committed")) == 3


def test_an_aborted_transaction_is_never_read_committed(lab: Any) -> None:
    live, wall = lab
    _call(live, wall, "txn-init", producer="tp", transactional_id="orders-tx")
    _call(live, wall, "txn-begin", producer="tp")
    _call(live, wall, "txn-send", producer="tp", topic="orders", count=2)
    _call(live, wall, "txn-abort", producer="tp")
    _call(live, wall, "txn-begin", producer="tp")
    _call(live, wall, "txn-send", producer="tp", topic="orders", count=1)
    _call(live, wall, "txn-commit", producer="tp")
    committed = _values(live, "read_committed")
    assert len(committed) == 1
    assert len(_values(live, "read_uncommitted")) == 3


def test_calls_out_of_order_get_kafkas_error_by_name(lab: Any) -> None:
    live, wall = lab
    error = _refused(live, wall, "txn-begin", producer="tp")
    assert isinstance(error, IllegalState)
    assert "Init one first" in error.message
    _call(live, wall, "txn-init", producer="tp", transactional_id="orders-tx")
    error = _refused(live, wall, "txn-commit", producer="tp")
    assert isinstance(error, IllegalState)
    assert "Invalid transition attempted from state READY to state COMMITTING_TRANSACTION" in error.message
    error = _refused(live, wall, "txn-send", producer="tp", topic="orders", count=1)
    assert isinstance(error, IllegalState)
    assert "Cannot call send in state READY" in error.message
    _call(live, wall, "txn-begin", producer="tp")
    error = _refused(live, wall, "txn-begin", producer="tp")
    assert "from state IN_TRANSACTION to state IN_TRANSACTION" in error.message
    assert _coordinator_state(live, "orders-tx") == "Empty"  # nothing reached the coordinator


def test_a_second_producer_with_the_same_id_fences_the_first(lab: Any) -> None:
    live, wall = lab
    _call(live, wall, "txn-init", producer="zombie", transactional_id="orders-tx")
    _call(live, wall, "txn-begin", producer="zombie")
    _call(live, wall, "txn-send", producer="zombie", topic="orders", count=2)
    said = _call(live, wall, "txn-init", producer="successor", transactional_id="orders-tx")
    # The open transaction was aborted under a bumped epoch (1), then the successor got the next (2).
    assert "epoch 2" in said
    # The partition's leader refuses the old epoch (INVALID_PRODUCER_EPOCH, abortable since KIP-588: an epoch
    # bumped by a timeout looks the same); commit then fails with it, and the abort hears PRODUCER_FENCED.
    error = _refused(live, wall, "txn-send", producer="zombie", topic="orders", count=1)
    assert isinstance(error, InvalidProducerEpoch)
    error = _refused(live, wall, "txn-commit", producer="zombie")
    assert isinstance(error, InvalidProducerEpoch)
    error = _refused(live, wall, "txn-abort", producer="zombie")
    assert isinstance(error, ProducerFenced)
    error = _refused(live, wall, "txn-begin", producer="zombie")
    assert isinstance(error, ProducerFenced)  # fatal: every call says so now
    clients = {c["name"]: c for c in _snapshot(live)["clients"]}
    assert clients["zombie"]["transaction"]["state"] == "FATAL_ERROR"
    assert clients["zombie"]["transaction"]["error"] == "PRODUCER_FENCED"
    assert _values(live, "read_committed") == []  # the zombie's records were aborted
    _call(live, wall, "txn-close", producer="zombie")
    assert "zombie" not in {c["name"] for c in _snapshot(live)["clients"]}


@pytest.mark.parametrize(
    ("name", "args", "words"),
    [
        ("txn-init", {"producer": "tp"}, "transactional_id"),
        ("txn-init", {"producer": "bad name!", "transactional_id": "x"}, "a client name"),
        ("txn-init", {"producer": "tp", "transactional_id": "   "}, "transactional_id"),
        ("txn-init", {"producer": "tp", "transactional_id": "x", "transaction_timeout_ms": 5}, "between"),
        ("txn-send", {"producer": "tp", "topic": "orders", "count": 0}, "count must be between"),
        ("txn-send", {"producer": "tp", "topic": "", "count": 1}, "topic"),
    ],
)
def test_bad_input_is_refused_where_it_arrives_and_changes_nothing(
    lab: Any, name: str, args: dict[str, Any], words: str
) -> None:
    live, _ = lab
    future = live.act(name, args)
    assert future.done()  # refused before it reached the lab
    error = future.exception()
    assert isinstance(error, IllegalArgument)
    assert words in error.message
    assert _snapshot(live)["transactions"] == {}
    assert not [c for c in _snapshot(live)["clients"] if c.get("transaction")]


def test_a_send_to_a_topic_that_does_not_exist_takes_no_record(lab: Any) -> None:
    live, wall = lab
    _call(live, wall, "txn-init", producer="tp", transactional_id="orders-tx")
    _call(live, wall, "txn-begin", producer="tp")
    error = _refused(live, wall, "txn-send", producer="tp", topic="nope", count=1)
    assert isinstance(error, IllegalArgument)
    assert "no topic 'nope'" in error.message
    (client,) = [c for c in _snapshot(live)["clients"] if c["name"] == "tp"]
    assert client["sent"] == 0
    assert client["transaction"]["partitions"] == []
