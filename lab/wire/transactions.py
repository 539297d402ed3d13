"""Producer ids and transactions over the wire: InitProducerId (an idempotent producer's, or a
transactional one's with its transactional.id), and the transaction coordinator's APIs as Kafka 3.x
serves them: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit (the group coordinator's),
WriteTxnMarkers (the partition leaders'), DescribeTransactions and ListTransactions. Fetch carries
isolation_level and aborted_transactions (data.py); FindCoordinator key_type 1 (groups.py)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from lab.engine import protocol as p
from lab.engine.ids import TopicPartition
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import by_topic, committed_offsets, field, make, millis


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


def _tps(topics: Any, name: str = "name", parts: str = "partitions") -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(getattr(t, name), int(i)) for t in topics for i in getattr(t, parts))


def _partition_errors(
    errors: Mapping[TopicPartition, str | None], key: str = "error_code"
) -> dict[str, list[dict[str, Any]]]:
    """Each partition's error under its topic, topics and partitions in order."""
    return by_topic((tp, {"partition_index": tp.partition, key: e}) for tp, e in sorted(errors.items()))


@serves(24, "AddPartitionsToTxn", 0, 3)
async def add_partitions_to_txn(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.AddPartitionsToTxnResponse = await conn.call(
        p.AddPartitionsToTxnRequest(
            transactional_id=body.v3_and_below_transactional_id,
            producer_id=body.v3_and_below_producer_id,
            producer_epoch=body.v3_and_below_producer_epoch,
            partitions=_tps(body.v3_and_below_topics),
        )
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "results_by_topic_v3_and_below": [
                {"name": topic, "results_by_partition": parts}
                for topic, parts in _partition_errors(answer.partitions, "partition_error_code").items()
            ],
        },
    )


@serves(25, "AddOffsetsToTxn", 0, 3)
async def add_offsets_to_txn(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.AddOffsetsToTxnResponse = await conn.call(
        p.AddOffsetsToTxnRequest(
            transactional_id=body.transactional_id,
            producer_id=body.producer_id,
            producer_epoch=body.producer_epoch,
            group_id=body.group_id,
        )
    )
    return make(request.response_schema, {"throttle_time": 0, "error_code": answer.error})


@serves(26, "EndTxn", 0, 3)
async def end_txn(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.EndTxnResponse = await conn.call(
        p.EndTxnRequest(
            transactional_id=body.transactional_id,
            producer_id=body.producer_id,
            producer_epoch=body.producer_epoch,
            committed=bool(body.committed),
        )
    )
    return make(request.response_schema, {"throttle_time": 0, "error_code": answer.error})


@serves(28, "TxnOffsetCommit", 0, 3)
async def txn_offset_commit(conn: Connection, request: Request) -> Any:
    body = request.body
    offsets = committed_offsets(body.topics)
    answer: p.TxnOffsetCommitResponse = await conn.call(
        p.TxnOffsetCommitRequest(
            transactional_id=body.transactional_id,
            group_id=body.group_id,
            producer_id=body.producer_id,
            producer_epoch=body.producer_epoch,
            offsets=offsets,
            generation_id=int(field(body, "generation_id", -1)),
            member_id=field(body, "member_id", "") or "",
            group_instance_id=field(body, "group_instance_id"),
        )
    )
    errors = dict(answer.partitions) or dict.fromkeys(offsets, answer.error)
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "topics": [
                {"name": topic, "partitions": parts} for topic, parts in _partition_errors(errors).items()
            ],
        },
    )


@serves(27, "WriteTxnMarkers", 1, 1)
async def write_txn_markers(conn: Connection, request: Request) -> Any:
    """Coordinators send these to partition leaders (a broker's own request; a tool may send it too)."""
    body = request.body
    answer: p.WriteTxnMarkersResponse = await conn.call(
        p.WriteTxnMarkersRequest(
            markers=tuple(
                p.TxnMarkerEntry(
                    producer_id=m.producer_id,
                    producer_epoch=m.producer_epoch,
                    committed=bool(m.transaction_result),
                    coordinator_epoch=m.coordinator_epoch,
                    partitions=_tps(m.topics, parts="partition_indexes"),
                )
                for m in body.markers
            )
        )
    )
    return make(
        request.response_schema,
        {
            "markers": [
                {
                    "producer_id": pid,
                    "topics": [
                        {"name": topic, "partitions": parts}
                        for topic, parts in _partition_errors(results).items()
                    ],
                }
                for pid, results in answer.results.items()
            ]
        },
    )


@serves(65, "DescribeTransactions", 0, 0)
async def describe_transactions(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.DescribeTransactionsResponse = await conn.call(
        p.DescribeTransactionsRequest(transactional_ids=tuple(body.transactional_ids))
    )
    states = []
    for t in answer.transactions:
        by_topic: dict[str, list[int]] = {}
        for tp in t.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        states.append(
            {
                "error_code": t.error,
                "transactional_id": t.transactional_id,
                "transaction_state": t.state,
                "transaction_timeout": t.timeout_ms,
                # Kafka sends -1 for none; kio's timestamps cannot be negative, so the epoch stands for it.
                "transaction_start_time": datetime.datetime.fromtimestamp(
                    (conn.server.cluster.ctx.epoch_ms + t.start_ms if t.start_ms >= 0 else 0) / 1000,
                    tz=datetime.UTC,
                ),
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "topics": [{"topic": name, "partitions": parts} for name, parts in sorted(by_topic.items())],
            }
        )
    return make(request.response_schema, {"throttle_time": 0, "transaction_states": states})


@serves(66, "ListTransactions", 0, 0)
async def list_transactions(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.ListTransactionsResponse = await conn.call(
        p.ListTransactionsRequest(
            state_filters=tuple(body.state_filters), producer_id_filters=tuple(body.producer_id_filters)
        )
    )
    known = {
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "PrepareEpochFence",
        "Dead",
    }
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "unknown_state_filters": [s for s in body.state_filters if s not in known],
            "transaction_states": [
                {
                    "transactional_id": t.transactional_id,
                    "producer_id": t.producer_id,
                    "transaction_state": t.state,
                }
                for t in answer.transactions
            ],
        },
    )
