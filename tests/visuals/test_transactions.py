"""The Transactions view, drawn from a real engine's snapshot: each transactional id's coordinator state,
producer id and epoch, partitions, coordinator and countdown; each producer's sequences per partition."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.engine.cluster import Cluster
from lab.engine.errors import ProducerFenced
from lab.visuals.transactions import TransactionsView, transactions_view
from tests.engine.helpers import checked_cluster


@pytest.fixture
def c() -> Iterator[Cluster]:
    with checked_cluster(3) as cluster:
        cluster.create_topic("orders", partitions=2, replication_factor=3)
        yield cluster


def _view(c: Cluster) -> TransactionsView:
    return transactions_view(c.snapshot(), {})


def test_nothing_transactional_is_an_empty_view_with_its_tips(c: Cluster) -> None:
    view = _view(c)
    assert view.empty
    assert "transaction.state.log.num.partitions: lab 5, Kafka 50" in view.tip["txn_coordinator"]
    assert "transaction.timeout.ms (the producer's: lab 60000, Kafka 60000" in view.tip["txn_timeout"]
    assert "cleanup.interval.ms: lab 1000, Kafka 10000" in view.tip["txn_timeout"]


def test_an_open_transaction_shows_its_state_partitions_coordinator_and_countdown(c: Cluster) -> None:
    p = c.producer(client_id="tp", transactional_id="orders-tx", transaction_timeout_ms=20_000)
    p.init_transactions()
    (row,) = _view(c).transactions
    assert (row.transactional_id, row.state, row.producer_epoch, row.partitions) == (
        "orders-tx",
        "Empty",
        0,
        (),
    )
    assert row.aborts_in_s is None
    assert [(h.name, h.state) for h in row.holders] == [("tp", "READY")]
    p.begin_transaction()
    p.send("orders", b"a", partition=1)
    assert p.flush()
    (row,) = _view(c).transactions
    assert (row.state, row.partitions) == ("Ongoing", ("orders-1",))
    assert row.open
    assert 19 <= row.aborts_in_s <= 20  # type: ignore[operator]
    # The coordinator is the leader of the __transaction_state partition the id hashes to.
    number = int(row.state_partition.rsplit("-", 1)[1])
    assert row.state_partition.startswith("__transaction_state-")
    assert c.leader_of("__transaction_state", number) == row.coordinator
    c.run_for(5_000)
    (later,) = _view(c).transactions
    assert later.aborts_in_s == row.aborts_in_s - 5  # type: ignore[operator]
    (line,) = _view(c).producers
    assert (line.producer_id, line.transactional_id) == (p.producer_id, "orders-tx")
    (seq,) = line.partitions
    assert (seq.partition, seq.last_sequence, seq.in_transaction) == ("orders-1", 0, True)
    p.commit_transaction()
    c.run_for(500)
    (row,) = _view(c).transactions
    assert (row.state, row.partitions, row.aborts_in_s) == ("CompleteCommit", (), None)
    assert row.holders[0].committed == 1


def test_a_transaction_left_open_counts_down_to_its_abort_and_the_fenced_producer_says_so(c: Cluster) -> None:
    p = c.producer(client_id="zombie", transactional_id="orders-tx", transaction_timeout_ms=3_000)
    p.init_transactions()
    p.begin_transaction()
    p.send("orders", b"a", partition=0)
    assert p.flush()
    c.run_for(4_500)  # past the timeout, and the coordinator's next look (cleanup interval: lab 1000 ms)
    (row,) = _view(c).transactions
    assert row.state == "CompleteAbort"
    assert row.producer_epoch == 1  # aborted under a bumped epoch: the producer that left it open is fenced
    successor = c.producer(client_id="successor", transactional_id="orders-tx")
    successor.init_transactions()
    with pytest.raises(ProducerFenced):
        p.commit_transaction()
    (row,) = _view(c).transactions
    states = {h.name: (h.state, h.error) for h in row.holders}
    assert states["successor"] == ("READY", None)
    assert states["zombie"] == ("FATAL_ERROR", "PRODUCER_FENCED")


def test_an_idempotent_producer_without_transactions_shows_its_sequences(c: Cluster) -> None:
    p = c.producer()
    for i in range(3):
        p.send("orders", b"x%d" % i, partition=0)
    p.send("orders", b"y", partition=1)
    assert p.flush()
    view = _view(c)
    assert view.transactions == ()
    (line,) = view.producers
    assert line.transactional_id is None
    assert [(s.partition, s.last_sequence) for s in line.partitions] == [("orders-0", 2), ("orders-1", 0)]
