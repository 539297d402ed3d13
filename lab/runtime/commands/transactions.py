"""A transactional producer driven from the page or the API: Kafka's KafkaProducer calls, one command each.

``txn-init`` makes a dashboard producer with a ``transactional.id`` (acks=all, idempotent, as Kafka
requires) and calls ``init_transactions`` (FindCoordinator, InitProducerId: a second producer with
the same id fences the first); ``txn-begin``, ``txn-send`` (N records to a topic), ``txn-commit`` and
``txn-abort`` are the calls of the same names; ``txn-close`` closes it (what a fenced producer can
only do). A call out of order gets Kafka's error by name, from the client's own state machine
(``lab/engine/txn_client.py``: ILLEGAL_STATE "Invalid transition attempted from state READY to state
COMMITTING_TRANSACTION"; PRODUCER_FENCED once a newer producer has the id), and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lab.engine import limits
from lab.engine.clients import Producer
from lab.engine.errors import IllegalArgument, IllegalState, KafkaError
from lab.engine.snapshot import clients_view, transactions_view
from lab.engine.tasks import Task
from lab.runtime.actions import (
    Act,
    Waiting,
    _int,
    _optional_int,
    _text,
    acks_waiting,
    register,
    register_read,
)
from lab.runtime.commands.records import _partition_checked
from lab.visuals.clock import clock_label

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

WAIT_S = 5.0  # how long a call waits for the coordinator's answer before saying it is still on its way


def _name(p: Mapping[str, Any]) -> str:
    return _text(p, "producer", limits.CLIENT_NAME)


def transactional_producer(lab: LiveLab, name: str) -> Producer:
    client = lab.cluster.clients.get(name)
    if not isinstance(client, Producer) or client.txn is None or client.closed:
        # As Kafka's client answers a transactional call before initTransactions.
        raise IllegalState(f"there is no transactional producer {name!r} in this lab: Init one first")
    return client


def _answer(task: Task[None], said: Callable[[], str], what: str) -> Waiting:
    """The call's answer once its Task ends: ``said()``, or Kafka's error it ended with."""

    def result() -> str:
        error = task.outcome.failed_with()
        if isinstance(error, KafkaError):
            raise error
        if error is not None:
            raise IllegalState(str(error))
        return said()

    def still() -> str:
        return (
            f"{what} asked; no answer within {WAIT_S:g} s (is the clock paused, or the coordinator down?): "
            "the Transactions view shows when it is done."
        )

    return Waiting(
        ready=task.outcome.done, result=result, on_timeout=still, deadline=time.monotonic() + WAIT_S
    )


def _describe(producer: Producer) -> str:
    assert producer.txn is not None
    return (
        f"{producer.client_id} (transactional.id {producer.txn.transactional_id}, producer id "
        f"{producer.producer_id}, epoch {producer.producer_epoch})"
    )


def _init(p: Mapping[str, Any]) -> Act:
    name = _name(p)
    transactional_id = _text(p, "transactional_id", limits.TRANSACTIONAL_ID)
    timeout = _optional_int(p, "transaction_timeout_ms", limits.TRANSACTION_TIMEOUT_MS)

    def run(lab: LiveLab) -> Waiting:
        existing = lab.cluster.clients.get(name)
        if existing is not None and not getattr(existing, "closed", False):
            if not isinstance(existing, Producer) or existing.txn is None:
                raise IllegalArgument(
                    f"there is a client named {name!r} already, and it is not transactional"
                )
            if existing.txn.transactional_id != transactional_id:
                raise IllegalArgument(
                    f"{name} has transactional.id {existing.txn.transactional_id}; a producer's id is fixed "
                    "when it is made: Init another producer for another id"
                )
            producer = existing  # init_transactions again: Kafka's answer depends on its state
        else:
            if existing is not None:
                lab.cluster.clients.pop(name, None)  # closed: its name is free again
            config: dict[str, Any] = {"transactional_id": transactional_id}
            if timeout is not None:
                config["transaction_timeout_ms"] = timeout
            producer = lab.cluster.producer(acks="all", client_id=name, **config)
        assert producer.txn is not None
        task = producer.txn.start_init()
        return _answer(
            task,
            lambda: f"init_transactions: {_describe(producer)}; any older producer with this id is fenced.",
            "init_transactions",
        )

    return run


def _begin(p: Mapping[str, Any]) -> Act:
    name = _name(p)

    def run(lab: LiveLab) -> str:
        producer = transactional_producer(lab, name)
        producer.begin_transaction()
        return (
            f"begin_transaction: {name} has a transaction open on its side (nothing is sent until its first "
            "record: AddPartitionsToTxn)."
        )

    return run


def _send(p: Mapping[str, Any]) -> Act:
    name = _name(p)
    topic = _text(p, "topic", limits.TOPIC_NAME)
    count = _int(p, "count", limits.RECORDS, default=1)
    key = _text(p, "key", limits.KEY, required=False, strip=False) or None
    partition = _optional_int(p, "partition", limits.PARTITION)

    def run(lab: LiveLab) -> Waiting:
        producer = transactional_producer(lab, name)
        if topic not in lab.cluster.topics():
            raise IllegalArgument(f"there is no topic {topic!r}; create it first")
        _partition_checked(lab, topic, [partition])
        assert producer.txn is not None
        producer.txn.check_send()  # Kafka's error for the producer's state, before any record is taken
        stamp = clock_label(lab.cluster.now_ms)
        futures = [
            producer.send(topic, f"txn record {i + 1} at {stamp}", key=key, partition=partition)
            for i in range(count)
        ]
        waiting = acks_waiting(futures, topic=topic, acks="all", deadline=time.monotonic() + WAIT_S)
        written = waiting.result

        def result() -> str:
            return (
                f"{written()} They are in the log, in an open transaction: read_committed consumers see them "
                "once it commits, never if it aborts."
            )

        waiting.result = result
        return waiting

    return run


def _end(commit: bool) -> Callable[[Mapping[str, Any]], Act]:
    word = "commit_transaction" if commit else "abort_transaction"

    def parse(p: Mapping[str, Any]) -> Act:
        name = _name(p)

        def run(lab: LiveLab) -> Waiting:
            producer = transactional_producer(lab, name)
            assert producer.txn is not None
            task = producer.txn.start_commit() if commit else producer.txn.start_abort()
            markers = "COMMIT" if commit else "ABORT"
            return _answer(
                task,
                lambda: (
                    f"{word}: EndTxn answered; the coordinator writes {markers} markers to the "
                    f"transaction's partitions ({name})."
                ),
                word,
            )

        return run

    return parse


def _close(p: Mapping[str, Any]) -> Act:
    name = _name(p)

    def run(lab: LiveLab) -> str:
        producer = transactional_producer(lab, name)
        producer.close()
        lab.cluster.clients.pop(name, None)
        return f"{name} closed."

    return run


def _list(p: Mapping[str, Any]) -> Act:
    def run(lab: LiveLab) -> list[dict[str, Any]]:
        holders: dict[str, list[dict[str, Any]]] = {}
        for client in clients_view(lab.cluster):
            txn = client.get("transaction")
            if txn and client["state"] != "closed":
                holders.setdefault(txn["transactional_id"], []).append({"producer": client["name"], **txn})
        return [
            {"transactional_id": tid, **meta, "producers": holders.get(tid, [])}
            for tid, meta in transactions_view(lab.cluster).items()
        ]

    return run


register_read("transactions", _list)
register("txn-init", _init)
register("txn-begin", _begin)
register("txn-send", _send)
register("txn-commit", _end(True))
register("txn-abort", _end(False))
register("txn-close", _close)
