"""The data plane: Metadata, Produce, Fetch, ListOffsets, OffsetForLeaderEpoch.

Each handler reads the kio request, asks the connection's broker with the engine's own
request (so the broker's gate, faults and purgatories apply), and answers in Kafka's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lab.engine import protocol as p
from lab.engine.errors import CorruptRecord, KafkaError
from lab.engine.ids import TopicPartition
from lab.engine.records import iter_headers
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    authorized_operations,
    by_topic,
    field,
    make,
    millis,
)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


# ---------------------------------------------------------------------------- Metadata


@serves(3, "Metadata", 0, 12)
async def metadata(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = body.topics
    if asked is None or (request.header.api_version == 0 and not asked):
        names: tuple[str, ...] | None = None  # every topic
    else:
        names = tuple(t.name for t in asked if t.name is not None)
    # Before v4 a request cannot say; Kafka takes it as allowed.
    allow = bool(field(body, "allow_auto_topic_creation", True))
    answer: p.MetadataResponse = await conn.call(
        p.MetadataRequest(topics=names, allow_auto_topic_creation=allow and names is not None)
    )
    advertised = conn.advertised
    brokers = [
        {"node_id": b, "host": advertised[b][0], "port": advertised[b][1], "rack": None}
        for b in answer.brokers
        if b in advertised
    ]
    topic_operations = authorized_operations(
        field(body, "include_topic_authorized_operations", False), TOPIC_OPERATIONS
    )
    topics = []
    for name, topic in answer.topics.items():
        partitions = [
            {
                "error_code": part.error,
                "partition_index": part.partition,
                "leader_id": part.leader,
                "leader_epoch": part.leader_epoch,
                "replica_nodes": part.replicas,
                "isr_nodes": part.isr,
                "offline_replicas": tuple(r for r in part.replicas if r not in answer.brokers),
            }
            for part in topic.partitions
        ]
        topics.append(
            {
                "error_code": topic.error,
                "name": name,
                "topic_id": conn.server.topic_id(name),
                "is_internal": name in INTERNAL_TOPICS,
                "partitions": partitions,
                "topic_authorized_operations": topic_operations,
            }
        )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "brokers": brokers,
            "cluster_id": conn.server.cluster_id,
            "controller_id": answer.controller_id,
            "topics": topics,
            "cluster_authorized_operations": authorized_operations(
                field(body, "include_cluster_authorized_operations", False), CLUSTER_OPERATIONS
            ),
        },
    )


# ---------------------------------------------------------------------------- Produce


def _by_topic_sum(counts: Mapping[TopicPartition, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for tp, n in counts.items():
        out[tp.topic] = out.get(tp.topic, 0) + n
    return out


def _stored(answer: p.ProduceResponse, tp: TopicPartition) -> bool:
    result = answer.partitions.get(tp)
    return result is not None and not result.error


def _record_count(batches: bytes) -> int:
    try:
        return sum(h.record_count for _, h in iter_headers(batches))
    except CorruptRecord:
        return 0  # the broker will refuse it, with the reason


@serves(0, "Produce", 3, 9)
async def produce(conn: Connection, request: Request) -> Any:
    body = request.body
    partitions: dict[TopicPartition, bytes] = {}
    for topic in body.topic_data:
        for part in topic.partition_data:
            partitions[TopicPartition(topic.name, part.index)] = bytes(part.records or b"")
    counts = {tp: _record_count(batches) for tp, batches in partitions.items()}
    engine_request = p.ProduceRequest(
        acks=body.acks,
        timeout_ms=millis(body.timeout),
        partitions=partitions,
        records=sum(counts.values()),
        transactional_id=body.transactional_id,
    )
    if body.acks == 0:
        conn.send_oneway(engine_request)
        conn.server.count_produced(conn, _by_topic_sum(counts))  # sent: nobody will know more
        return None
    # The broker answers by the produce's own timeout; the network's only if the broker is gone.
    answer: p.ProduceResponse = await conn.call(engine_request, timeout_ms=millis(body.timeout) + 30_000)
    conn.server.count_produced(
        conn, _by_topic_sum({tp: n for tp, n in counts.items() if _stored(answer, tp)})
    )
    results = []
    for tp, result in answer.partitions.items():
        results.append(
            (
                tp,
                {
                    "index": tp.partition,
                    "error_code": result.error,
                    "base_offset": result.base_offset,
                    "log_append_time": None,
                    "log_start_offset": result.log_start_offset,
                    "record_errors": (),
                    "error_message": result.message if result.error else None,
                },
            )
        )
    return make(
        request.response_schema,
        {
            "responses": [
                {"name": name, "partition_responses": parts} for name, parts in by_topic(results).items()
            ],
            "throttle_time": 0,
        },
    )


# ---------------------------------------------------------------------------- Fetch


@serves(1, "Fetch", 4, 12)
async def fetch(conn: Connection, request: Request) -> Any:
    body = request.body
    partitions: dict[TopicPartition, p.FetchPartition] = {}
    for topic in body.topics:
        for part in topic.partitions:
            partitions[TopicPartition(topic.topic, part.partition)] = p.FetchPartition(
                fetch_offset=part.fetch_offset,
                current_leader_epoch=field(part, "current_leader_epoch", -1),
                log_start_offset=field(part, "log_start_offset", -1),
                max_bytes=part.partition_max_bytes,
            )
    max_wait_ms = millis(body.max_wait)
    answer: p.FetchResponse = await conn.call(
        p.FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=body.min_bytes,
            partitions=partitions,
            max_bytes=field(body, "max_bytes", 2147483647),
            isolation_level=field(body, "isolation_level", 0),
        ),
        timeout_ms=max_wait_ms + 30_000,
    )
    results = []
    for tp, data in answer.partitions.items():
        results.append(
            (
                tp,
                {
                    "partition_index": tp.partition,
                    "error_code": data.error,
                    "high_watermark": data.high_watermark,
                    "last_stable_offset": data.last_stable_offset,
                    "log_start_offset": data.log_start_offset,
                    # read_committed: the aborted transactions the records overlap (KIP-98).
                    "aborted_transactions": None
                    if data.aborted_transactions is None
                    else [
                        {"producer_id": pid, "first_offset": first}
                        for pid, first in data.aborted_transactions
                    ],
                    "preferred_read_replica": -1,
                    "records": data.records,
                },
            )
        )
    conn.server.count_fetched(
        conn, _by_topic_sum({tp: d.record_count for tp, d in answer.partitions.items()})
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": None,
            "session_id": 0,  # no fetch session (KIP-227 lets a broker decline one): full fetches
            "responses": [{"topic": name, "partitions": parts} for name, parts in by_topic(results).items()],
        },
    )


# ---------------------------------------------------------------------------- ListOffsets


@serves(2, "ListOffsets", 1, 7)
async def list_offsets(conn: Connection, request: Request) -> Any:
    body = request.body
    asked: dict[TopicPartition, int] = {}
    epochs: dict[TopicPartition, int] = {}
    for topic in body.topics:
        for part in topic.partitions:
            tp = TopicPartition(topic.name, part.partition_index)
            asked[tp] = part.timestamp
            epochs[tp] = field(part, "current_leader_epoch", -1)
    answer: p.ListOffsetsResponse = await conn.call(
        p.ListOffsetsRequest(
            partitions=asked, current_leader_epochs=epochs, isolation_level=field(body, "isolation_level", 0)
        )
    )
    results = [
        (
            tp,
            {
                "partition_index": tp.partition,
                "error_code": r.error,
                "timestamp": r.timestamp,
                "offset": r.offset,
                "leader_epoch": r.leader_epoch,
            },
        )
        for tp, r in answer.partitions.items()
    ]
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "topics": [{"name": n, "partitions": ps} for n, ps in by_topic(results).items()],
        },
    )


# ---------------------------------------------------------------------------- OffsetForLeaderEpoch


@serves(23, "OffsetForLeaderEpoch", 2, 4)
async def offset_for_leader_epoch(conn: Connection, request: Request) -> Any:
    body = request.body
    asked: dict[TopicPartition, tuple[int, int]] = {}
    for topic in body.topics:
        for part in topic.partitions:
            asked[TopicPartition(topic.topic, part.partition)] = (
                field(part, "current_leader_epoch", -1),
                part.leader_epoch,
            )
    answer: p.OffsetsForLeaderEpochResponse = await conn.call(
        p.OffsetsForLeaderEpochRequest(replica_id=-1, partitions=asked)
    )
    results = [
        (
            tp,
            {
                "error_code": r.error,
                "partition": tp.partition,
                "leader_epoch": r.leader_epoch,
                "end_offset": r.end_offset,
            },
        )
        for tp, r in answer.partitions.items()
    ]
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "topics": [{"topic": n, "partitions": ps} for n, ps in by_topic(results).items()],
        },
    )


__all__ = ["KafkaError"]
