"""Consumer groups over the wire: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, translated to the engine's group coordinator requests.

The coordinator holds a JoinGroup until the rebalance completes (up to the rebalance timeout),
so the connection waits that long for the answer, as a Kafka client does.
"""

from __future__ import annotations

from typing import Any

from lab.engine import protocol as p
from lab.engine.ids import TopicPartition
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import by_topic, committed_offsets, field, make, millis

GROUP, TRANSACTION = 0, 1
WAIT_MARGIN_MS = 30_000  # beyond a request's own timeout, before the lab gives up on its broker


@serves(10, "FindCoordinator", 0, 4)
async def find_coordinator(conn: Connection, request: Request) -> Any:
    body = request.body
    key_type = field(body, "key_type", GROUP)
    keys = list(field(body, "coordinator_keys", ()) or ()) or [field(body, "key", "")]
    found = []
    for key in keys:
        answer: p.FindCoordinatorResponse = await conn.call(
            p.FindCoordinatorRequest(key=key, key_type=TRANSACTION if key_type == TRANSACTION else GROUP)
        )
        host, port = conn.advertised.get(answer.node_id, ("", -1))
        error = answer.error
        if error is None and port < 0:
            error = "COORDINATOR_NOT_AVAILABLE"  # its broker has no open listener right now
        found.append(
            {
                "key": key,
                "error_code": error,
                "error_message": answer.message if error else None,
                "node_id": answer.node_id if error is None else -1,
                "host": host if error is None else "",
                "port": port if error is None else -1,
            }
        )
    if request.header.api_version >= 4:
        return make(request.response_schema, {"throttle_time": 0, "coordinators": found})
    return make(request.response_schema, {"throttle_time": 0, **found[0]})


@serves(11, "JoinGroup", 0, 9)
async def join_group(conn: Connection, request: Request) -> Any:
    body = request.body
    session_ms = millis(body.session_timeout)
    rebalance_ms = millis(field(body, "rebalance_timeout", body.session_timeout))
    answer: p.JoinGroupResponse = await conn.call(
        p.JoinGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            group_instance_id=field(body, "group_instance_id"),
            client_id=conn.client_id or "",
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            protocol_type=body.protocol_type,
            protocols=tuple((proto.name, bytes(proto.metadata)) for proto in body.protocols),
            reason=field(body, "reason") or "",
            client_host=conn.peer.rsplit(":", 1)[0],
        ),
        timeout_ms=rebalance_ms + WAIT_MARGIN_MS,
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "generation_id": answer.generation_id,
            "protocol_type": body.protocol_type,
            # Nullable from v7; before, an error answer carries an empty name.
            "protocol_name": answer.protocol_name or (None if request.header.api_version >= 7 else ""),
            "leader": answer.leader,
            "skip_assignment": False,
            "member_id": answer.member_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                for m in answer.members
            ],
        },
    )


@serves(14, "SyncGroup", 0, 5)
async def sync_group(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.SyncGroupResponse = await conn.call(
        p.SyncGroupRequest(
            group_id=body.group_id,
            generation_id=body.generation_id,
            member_id=body.member_id,
            group_instance_id=field(body, "group_instance_id"),
            assignments=tuple((a.member_id, bytes(a.assignment)) for a in body.assignments),
        ),
        timeout_ms=300_000 + WAIT_MARGIN_MS,  # a follower waits for the leader's assignment
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "protocol_type": field(body, "protocol_type"),
            "protocol_name": field(body, "protocol_name"),
            "assignment": answer.assignment,
        },
    )


@serves(12, "Heartbeat", 0, 4)
async def heartbeat(conn: Connection, request: Request) -> Any:
    body = request.body
    answer: p.HeartbeatResponse = await conn.call(
        p.HeartbeatRequest(
            group_id=body.group_id,
            generation_id=body.generation_id,
            member_id=body.member_id,
            group_instance_id=field(body, "group_instance_id"),
        )
    )
    return make(request.response_schema, {"throttle_time": 0, "error_code": answer.error})


@serves(13, "LeaveGroup", 0, 5)
async def leave_group(conn: Connection, request: Request) -> Any:
    body = request.body
    members = field(body, "members")
    identities = (
        [(m.member_id, field(m, "group_instance_id"), field(m, "reason") or "") for m in members]
        if members is not None
        else [(body.member_id, None, "")]
    )
    results = []
    for member_id, instance_id, reason in identities:
        answer: p.LeaveGroupResponse = await conn.call(
            p.LeaveGroupRequest(
                group_id=body.group_id,
                member_id=member_id,
                group_instance_id=instance_id,
                reason=reason or "the client left",
            )
        )
        results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": answer.error})
    top_error = results[0]["error_code"] if members is None else None
    return make(request.response_schema, {"throttle_time": 0, "error_code": top_error, "members": results})


@serves(8, "OffsetCommit", 2, 8)
async def offset_commit(conn: Connection, request: Request) -> Any:
    body = request.body
    offsets = committed_offsets(body.topics)
    answer: p.OffsetCommitResponse = await conn.call(
        p.OffsetCommitRequest(
            group_id=body.group_id,
            generation_id=field(body, "generation_id_or_member_epoch", field(body, "generation_id", -1)),
            member_id=field(body, "member_id", ""),
            group_instance_id=field(body, "group_instance_id"),
            offsets=offsets,
        )
    )
    topics = by_topic(
        (tp, {"partition_index": tp.partition, "error_code": answer.partitions.get(tp, answer.error)})
        for tp in offsets
    )
    return make(
        request.response_schema,
        {"throttle_time": 0, "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]},
    )


@serves(9, "OffsetFetch", 1, 7)
async def offset_fetch(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = (
        None
        if body.topics is None
        else tuple(TopicPartition(t.name, i) for t in body.topics for i in t.partition_indexes)
    )
    answer: p.OffsetFetchResponse = await conn.call(
        p.OffsetFetchRequest(group_id=body.group_id, partitions=asked)
    )
    shown = asked if asked is not None else tuple(sorted(answer.offsets))
    # Before v2 the answer has no error of its own: Kafka puts the group's on every partition.
    whole = answer.error if request.header.api_version < 2 else None
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in shown:
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": answer.offsets.get(tp, -1),
                "committed_leader_epoch": -1,
                "metadata": "",
                "error_code": answer.errors.get(tp, whole),
            }
        )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
            "error_code": answer.error,
        },
    )
