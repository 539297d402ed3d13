"""The admin API over the wire: topics, partitions, configs, elections, reassignments, log dirs, the
cluster, and consumer groups, translated to the engine's admin requests.

CreateTopics and its kin go to the controller: a client sends them there (the Metadata answer names
it), and any other broker answers NOT_CONTROLLER, as Kafka's do, so the client looks again.
"""

from __future__ import annotations

from typing import Any

from lab.engine import protocol as p
from lab.engine.ids import TopicPartition
from lab.wire.codec import Request
from lab.wire.connection import Connection, topic_uuid
from lab.wire.registry import serves
from lab.wire.shape import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    authorized_operations,
    by_topic,
    field,
    make,
    millis,
)

# Kafka's ConfigType ids (DescribeConfigs v3+).
CONFIG_TYPES = {"bool": 1, "str": 2, "int": 3, "long": 5, "double": 6, "list": 7, "password": 9}


def _error_message(error: str | None, message: str) -> str | None:
    return message if error else None


# ---------------------------------------------------------------------------- topics


@serves(19, "CreateTopics", 2, 7)
async def create_topics(conn: Connection, request: Request) -> Any:
    body = request.body
    topics = []
    for t in body.topics:
        assignments = {a.partition_index: tuple(a.broker_ids) for a in t.assignments} or None
        topics.append(
            p.NewTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignments=assignments,
                configs={c.name: c.value for c in t.configs if c.value is not None},
            )
        )
    timeout_ms = millis(body.timeout)
    answer: p.CreateTopicsResponse = await conn.call(
        p.CreateTopicsRequest(
            topics=tuple(topics), timeout_ms=timeout_ms, validate_only=field(body, "validate_only", False)
        ),
        timeout_ms=timeout_ms + 30_000,
    )
    results = []
    for name, r in answer.topics.items():
        results.append(
            {
                "name": name,
                "topic_id": topic_uuid(r.topic_id),
                "error_code": r.error,
                "error_message": _error_message(r.error, r.message),
                "topic_config_error_code": 0,
                "num_partitions": r.num_partitions,
                "replication_factor": r.replication_factor,
                "configs": [
                    {
                        "name": c.name,
                        "value": c.value,
                        "read_only": c.read_only,
                        "config_source": c.source,
                        "is_sensitive": c.sensitive,
                    }
                    for c in r.configs
                ]
                if r.error is None
                else None,
            }
        )
    return make(request.response_schema, {"throttle_time": 0, "topics": results})


@serves(20, "DeleteTopics", 1, 5)
async def delete_topics(conn: Connection, request: Request) -> Any:
    body = request.body
    timeout_ms = millis(body.timeout)
    answer: p.DeleteTopicsResponse = await conn.call(
        p.DeleteTopicsRequest(names=tuple(body.topic_names), timeout_ms=timeout_ms),
        timeout_ms=timeout_ms + 30_000,
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "responses": [
                {"name": n, "error_code": r.error, "error_message": _error_message(r.error, r.message)}
                for n, r in answer.topics.items()
            ],
        },
    )


@serves(37, "CreatePartitions", 0, 3)
async def create_partitions(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = {
        t.name: (
            t.count,
            None if t.assignments is None else tuple(tuple(a.broker_ids) for a in t.assignments),
        )
        for t in body.topics
    }
    timeout_ms = millis(body.timeout)
    answer: p.CreatePartitionsResponse = await conn.call(
        p.CreatePartitionsRequest(topics=asked, timeout_ms=timeout_ms, validate_only=body.validate_only),
        timeout_ms=timeout_ms + 30_000,
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "results": [
                {"name": n, "error_code": r.error, "error_message": _error_message(r.error, r.message)}
                for n, r in answer.topics.items()
            ],
        },
    )


# ---------------------------------------------------------------------------- configs


@serves(32, "DescribeConfigs", 1, 4)
async def describe_configs(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = tuple(
        (
            r.resource_type,
            r.resource_name,
            None if r.configuration_keys is None else tuple(r.configuration_keys),
        )
        for r in body.resources
    )
    answer: p.DescribeConfigsResponse = await conn.call(p.DescribeConfigsRequest(resources=asked))
    documented = field(body, "include_documentation", False)
    results = []
    for r in answer.resources:
        configs: list[dict[str, Any]] = [
            {
                "name": c.name,
                "value": c.value,
                "read_only": c.read_only,
                "config_source": c.source,
                "is_default": c.source == 5,  # v0's flag
                "is_sensitive": c.sensitive,
                "synonyms": [],
                "config_type": CONFIG_TYPES.get(c.kind, 0),  # "": UNKNOWN, as Kafka has a plugin's key
                "documentation": c.documentation if documented else None,
            }
            for c in r.entries
        ]
        results.append(
            {
                "error_code": r.error,
                "error_message": _error_message(r.error, r.message),
                "resource_type": r.resource_type,
                "resource_name": r.name,
                "configs": configs,
            }
        )
    return make(request.response_schema, {"throttle_time": 0, "results": results})


async def _alter(conn: Connection, request: Request, *, incremental: bool) -> Any:
    body = request.body
    resources = tuple(
        (
            r.resource_type,
            r.resource_name,
            tuple((c.name, field(c, "config_operation", p.SET), c.value) for c in r.configs),
        )
        for r in body.resources
    )
    answer: p.AlterConfigsResponse = await conn.call(
        p.AlterConfigsRequest(resources=resources, incremental=incremental, validate_only=body.validate_only)
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "responses": [
                {
                    "error_code": result.error,
                    "error_message": _error_message(result.error, result.message),
                    "resource_type": kind,
                    "resource_name": name,
                }
                for kind, name, result in answer.resources
            ],
        },
    )


@serves(33, "AlterConfigs", 0, 2)
async def alter_configs(conn: Connection, request: Request) -> Any:
    return await _alter(conn, request, incremental=False)


@serves(44, "IncrementalAlterConfigs", 0, 1)
async def incremental_alter_configs(conn: Connection, request: Request) -> Any:
    return await _alter(conn, request, incremental=True)


# ---------------------------------------------------------------------------- leaders and replicas


@serves(43, "ElectLeaders", 0, 2)
async def elect_leaders(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = (
        None
        if body.topic_partitions is None
        else tuple(TopicPartition(t.topic, part) for t in body.topic_partitions for part in t.partitions)
    )
    timeout_ms = millis(body.timeout)
    answer: p.ElectLeadersResponse = await conn.call(
        p.ElectLeadersRequest(
            election_type=field(body, "election_type", p.PREFERRED), partitions=asked, timeout_ms=timeout_ms
        ),
        timeout_ms=timeout_ms + 30_000,
    )
    results = [
        (
            tp,
            {
                "partition_id": tp.partition,
                "error_code": r.error,
                "error_message": _error_message(r.error, r.message),
            },
        )
        for tp, r in answer.partitions.items()
    ]
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "replica_election_results": [
                {"topic": t, "partition_result": ps} for t, ps in by_topic(results).items()
            ],
        },
    )


@serves(45, "AlterPartitionReassignments", 0, 0)
async def alter_partition_reassignments(conn: Connection, request: Request) -> Any:
    body = request.body
    plan = {
        TopicPartition(t.name, part.partition_index): None if part.replicas is None else tuple(part.replicas)
        for t in body.topics
        for part in t.partitions
    }
    answer: p.AlterPartitionReassignmentsResponse = await conn.call(
        p.AlterPartitionReassignmentsRequest(plan=plan, timeout_ms=millis(body.timeout))
    )
    results = [
        (
            tp,
            {
                "partition_index": tp.partition,
                "error_code": r.error,
                "error_message": _error_message(r.error, r.message),
            },
        )
        for tp, r in answer.partitions.items()
    ]
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "error_message": _error_message(answer.error, answer.message),
            "responses": [{"name": t, "partitions": ps} for t, ps in by_topic(results).items()],
        },
    )


@serves(46, "ListPartitionReassignments", 0, 0)
async def list_partition_reassignments(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = (
        None
        if body.topics is None
        else tuple(TopicPartition(t.name, part) for t in body.topics for part in t.partition_indexes)
    )
    answer: p.ListPartitionReassignmentsResponse = await conn.call(
        p.ListPartitionReassignmentsRequest(partitions=asked)
    )
    ongoing = [
        (
            tp,
            {
                "partition_index": tp.partition,
                "replicas": r.replicas,
                "adding_replicas": r.adding,
                "removing_replicas": r.removing,
            },
        )
        for tp, r in answer.reassignments.items()
    ]
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "error_message": _error_message(answer.error, answer.message),
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic(ongoing).items()],
        },
    )


@serves(35, "DescribeLogDirs", 0, 4)  # v0 read as v1 (codec.SAME_AS)
async def describe_log_dirs(conn: Connection, request: Request) -> Any:
    body = request.body
    asked = (
        None
        if body.topics is None
        else tuple(TopicPartition(t.topic, part) for t in body.topics for part in t.partitions)
    )
    answer: p.DescribeLogDirsResponse = await conn.call(p.DescribeLogDirsRequest(partitions=asked))
    parts = [
        (
            tp,
            {
                "partition_index": tp.partition,
                "partition_size": d.size,
                "offset_lag": d.offset_lag,
                "is_future_key": False,
            },
        )
        for tp, d in answer.partitions.items()
    ]
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,  # v3+; before, a denied request is told by no results
            "results": []
            if answer.error
            else [
                {
                    "error_code": None,
                    "log_dir": answer.log_dir,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic(parts).items()],
                    "total_bytes": answer.total_bytes,
                    "usable_bytes": answer.usable_bytes,
                }
            ],
        },
    )


@serves(60, "DescribeCluster", 0, 1)
async def describe_cluster(conn: Connection, request: Request) -> Any:
    answer: p.MetadataResponse = await conn.call(p.MetadataRequest(topics=()))
    advertised = conn.advertised
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": None,
            "error_message": None,
            "endpoint_type": 1,  # brokers
            "cluster_id": conn.server.cluster_id or "",
            "controller_id": answer.controller_id,
            "brokers": [
                {"broker_id": b, "host": advertised[b][0], "port": advertised[b][1], "rack": None}
                for b in answer.brokers
                if b in advertised
            ],
            "cluster_authorized_operations": authorized_operations(
                field(request.body, "include_cluster_authorized_operations", False), CLUSTER_OPERATIONS
            ),
        },
    )


# ---------------------------------------------------------------------------- consumer groups


@serves(16, "ListGroups", 0, 4)
async def list_groups(conn: Connection, request: Request) -> Any:
    states = tuple(field(request.body, "states_filter", ()) or ())
    answer: p.ListGroupsResponse = await conn.call(p.ListGroupsRequest(states=states))
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "groups": [
                {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state}
                for g in answer.groups
            ],
        },
    )


@serves(15, "DescribeGroups", 0, 5)
async def describe_groups(conn: Connection, request: Request) -> Any:
    answer: p.DescribeGroupsResponse = await conn.call(
        p.DescribeGroupsRequest(group_ids=tuple(request.body.groups))
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "groups": [
                {
                    "error_code": g.error,
                    "group_id": g.group_id,
                    "group_state": g.state,
                    "protocol_type": g.protocol_type,
                    "protocol_data": g.protocol,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": f"/{m.client_host or '127.0.0.1'}",
                            "member_metadata": m.metadata,
                            "member_assignment": m.assignment,
                        }
                        for m in g.members
                    ],
                    "authorized_operations": authorized_operations(
                        field(request.body, "include_authorized_operations", False), GROUP_OPERATIONS
                    ),
                }
                for g in answer.groups
            ],
        },
    )


@serves(42, "DeleteGroups", 0, 2)
async def delete_groups(conn: Connection, request: Request) -> Any:
    answer: p.DeleteGroupsResponse = await conn.call(
        p.DeleteGroupsRequest(group_ids=tuple(request.body.groups_names))
    )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "results": [{"group_id": g, "error_code": r.error} for g, r in answer.groups.items()],
        },
    )
