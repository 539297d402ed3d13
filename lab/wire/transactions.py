"""Producer ids over the wire: InitProducerId, which an idempotent producer sends before its first
Produce (Kafka 3.x serves versions 0 to 4). The transaction coordinator's APIs will join it here."""

from __future__ import annotations

from typing import Any

from lab.engine import protocol as p
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import field, make, millis


@serves(22, "InitProducerId", 0, 4)
async def init_producer_id(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.InitProducerIdResponse = await conn.call(
        p.InitProducerIdRequest(
            transactional_id=body.transactional_id,
            transaction_timeout_ms=millis(body.transaction_timeout),
            producer_id=int(field(body, "producer_id", -1)),
            producer_epoch=int(field(body, "producer_epoch", -1)),
        )
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "producer_id": answer.producer_id,
            "producer_epoch": answer.producer_epoch,
        },
    )
