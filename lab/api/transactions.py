"""Transactions: the transactional ids as their coordinators hold them, and a transactional producer
driven call by call (init, begin, send, commit, abort, close), as the lab page's form drives it.

Each call is the lab's command of the same name (``lab/runtime/commands/transactions.py``); a call out
of order answers 409 with Kafka's error by name (ILLEGAL_STATE, PRODUCER_FENCED, INVALID_PRODUCER_EPOCH).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import MessageOut, TransactionOut, TxnInitIn, TxnSendIn, path
from lab.engine import limits

router = Router(tags=["transactions"])

ProducerName = path(limits.CLIENT_NAME)


@router.get(
    "/labs/{slug}/transactions", response={200: list[TransactionOut], **ERRORS}, summary="Transactions"
)
async def list_transactions(request: HttpRequest, slug: str) -> Any:
    """Each transactional id as its coordinator holds it (state, producer id and epoch, partitions, the
    coordinator and its __transaction_state partition, when an open transaction times out), with the
    dashboard producers that hold it."""
    return await driver.read(request, slug, "transactions")


@router.post(
    "/labs/{slug}/transactional-producers", response={200: MessageOut, **ERRORS}, summary="init_transactions"
)
async def init(request: HttpRequest, slug: str, body: TxnInitIn) -> Any:
    """A producer with ``transactional.id`` (acks=all, idempotent) calls ``init_transactions``: an older
    producer with the same id is fenced, and a transaction it left open aborted. Again on the same
    producer: Kafka's ILLEGAL_STATE."""
    args = {
        "producer": body.producer,
        "transactional_id": body.transactional_id,
        "transaction_timeout_ms": body.transaction_timeout_ms,
    }
    return {"message": str(await driver.act(request, slug, "txn-init", args))}


async def _call(request: HttpRequest, slug: str, name: str, producer: str, **args: Any) -> Any:
    return {"message": str(await driver.act(request, slug, name, {"producer": producer, **args}))}


@router.post(
    "/labs/{slug}/transactional-producers/{producer}/begin",
    response={200: MessageOut, **ERRORS},
    summary="begin_transaction",
)
async def begin(request: HttpRequest, slug: str, producer: str = ProducerName) -> Any:
    return await _call(request, slug, "txn-begin", producer)


@router.post(
    "/labs/{slug}/transactional-producers/{producer}/send",
    response={200: MessageOut, **ERRORS},
    summary="send records in the transaction",
)
async def send(request: HttpRequest, slug: str, body: TxnSendIn, producer: str = ProducerName) -> Any:
    """``count`` records to ``topic``, answered once acknowledged (acks=all): they are in the log, and read
    by read_committed consumers only once the transaction commits."""
    return await _call(
        request,
        slug,
        "txn-send",
        producer,
        topic=body.topic,
        count=body.count,
        key=body.key,
        partition=body.partition,
    )


@router.post(
    "/labs/{slug}/transactional-producers/{producer}/commit",
    response={200: MessageOut, **ERRORS},
    summary="commit_transaction",
)
async def commit(request: HttpRequest, slug: str, producer: str = ProducerName) -> Any:
    return await _call(request, slug, "txn-commit", producer)


@router.post(
    "/labs/{slug}/transactional-producers/{producer}/abort",
    response={200: MessageOut, **ERRORS},
    summary="abort_transaction",
)
async def abort(request: HttpRequest, slug: str, producer: str = ProducerName) -> Any:
    return await _call(request, slug, "txn-abort", producer)


@router.delete(
    "/labs/{slug}/transactional-producers/{producer}", response={200: MessageOut, **ERRORS}, summary="close"
)
async def close(request: HttpRequest, slug: str, producer: str = ProducerName) -> Any:
    return await _call(request, slug, "txn-close", producer)
