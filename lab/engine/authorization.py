"""What each request needs, as Kafka's KafkaApis asks its authorizer (Kafka 3.x, ZooKeeper mode).

``screen(broker, env)`` runs before a broker serves a request, when the broker has an authorizer.
A request denied whole is answered here with Kafka's error (CLUSTER_AUTHORIZATION_FAILED,
GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a request denied in part is
served for what it may touch, and the answer gets the rest back with TOPIC_AUTHORIZATION_FAILED
(``Endpoint.finishers``), as Kafka's answers carry them; a list the principal may not see whole
(every topic's metadata, every group) is filtered, without a journal line (Kafka's logIfDenied off).

| API | needs |
|---|---|
| Produce | WRITE Topic (per partition); transactional records: WRITE TransactionalId first |
| Fetch | a follower: CLUSTER_ACTION Cluster; a consumer: READ Topic |
| ListOffsets | DESCRIBE Topic |
| OffsetForLeaderEpoch | CLUSTER_ACTION Cluster, or DESCRIBE Topic |
| Metadata | DESCRIBE Topic (all topics: filtered); auto-creation: CREATE Cluster or CREATE Topic |
| FindCoordinator | DESCRIBE Group (or TransactionalId) |
| JoinGroup, SyncGroup, Heartbeat, LeaveGroup | READ Group |
| OffsetCommit | READ Group, then READ Topic |
| OffsetFetch | DESCRIBE Group, then DESCRIBE Topic (all: filtered) |
| ListGroups | DESCRIBE Cluster, or DESCRIBE Group (filtered) |
| DescribeGroups / DeleteGroups | DESCRIBE / DELETE Group |
| CreateTopics | CREATE Cluster, or CREATE Topic |
| DeleteTopics / CreatePartitions | DELETE / ALTER Topic |
| DescribeConfigs / AlterConfigs | DESCRIBE_CONFIGS / ALTER_CONFIGS on the Topic, or the Cluster for a broker |
| ElectLeaders, AlterPartitionReassignments | ALTER Cluster |
| ListPartitionReassignments, DescribeLogDirs | DESCRIBE Cluster |
| CreateAcls, DeleteAcls / DescribeAcls | ALTER / DESCRIBE Cluster |
| InitProducerId | a transactional id: WRITE TransactionalId; otherwise IDEMPOTENT_WRITE Cluster or WRITE on any Topic (KIP-679) |
| AddPartitionsToTxn | WRITE TransactionalId, then WRITE Topic (the rest: OPERATION_NOT_ATTEMPTED) |
| AddOffsetsToTxn | WRITE TransactionalId, then READ Group |
| EndTxn | WRITE TransactionalId |
| TxnOffsetCommit | WRITE TransactionalId, then READ Group, then READ Topic |
| WriteTxnMarkers | CLUSTER_ACTION Cluster |
| DescribeTransactions | DESCRIBE TransactionalId (each); topics in the answer: DESCRIBE (filtered) |
| ListTransactions | DESCRIBE Cluster, or DESCRIBE TransactionalId (filtered) |
| AlterUserScramCredentials / DescribeUserScramCredentials | ALTER / DESCRIBE Cluster |
| LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown | CLUSTER_ACTION Cluster |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lab.engine import protocol as p
from lab.engine.acl import CLUSTER_NAME, Operation, ResourceType
from lab.engine.errors import (
    ClusterAuthorizationFailed,
    CorruptRecord,
    GroupAuthorizationFailed,
    TopicAuthorizationFailed,
    TransactionalIdAuthorizationFailed,
)
from lab.engine.ids import TopicPartition
from lab.engine.network import Envelope
from lab.engine.records import read_header
from lab.engine.scram_admin import (
    AlterScramRequest,
    AlterScramResponse,
    DescribeScramRequest,
    DescribeScramResponse,
    UserResult,
)

if TYPE_CHECKING:
    from lab.engine.authorizer import BrokerAuthorizer
    from lab.engine.broker import Broker

Op, R = Operation, ResourceType
TOPIC = TopicAuthorizationFailed.name
GROUP = GroupAuthorizationFailed.name
CLUSTER = ClusterAuthorizationFailed.name
TRANSACTIONAL_ID = TransactionalIdAuthorizationFailed.name
Finish = Callable[[Any], Any]
Rule = Callable[["Screen"], "Envelope | None"]


class Screen:
    """One request being screened: the broker's authorizer, who asks, and how to answer."""

    def __init__(self, broker: Broker, env: Envelope) -> None:
        self.broker = broker
        self.env = env
        self.authz: BrokerAuthorizer = broker.authorizer
        self.api = env.kind

    def may(
        self, operation: Operation, kind: ResourceType, name: str = CLUSTER_NAME, *, log: bool = True
    ) -> bool:
        return self.authz.authorize(self.env.context, operation, kind, name, api=self.api, log=log)

    def topics_allowed(self, operation: Operation, topics: Iterable[str], *, log: bool = True) -> set[str]:
        return {t for t in set(topics) if self.may(operation, R.TOPIC, t, log=log)}

    def per_partition(
        self, operation: Operation, denial: Callable[[TopicPartition], Any], response: Callable[..., Any]
    ) -> Envelope | None:
        """A request over ``partitions`` of topics: Kafka answers each partition on its own, so those of
        topics the principal may not ``operation`` get ``denial`` and the rest are served, the answers
        put together (``response(partitions=...)`` when nothing is left to serve)."""
        req = self.env.body
        allowed = self.topics_allowed(operation, (tp.topic for tp in req.partitions))
        denied = {tp: denial(tp) for tp in req.partitions if tp.topic not in allowed}
        if not denied:
            return self.env
        kept = {tp: v for tp, v in req.partitions.items() if tp.topic in allowed}
        if not kept:
            return self.answer(response(partitions=denied))
        return self.serve(
            replace(req, partitions=kept), lambda r: replace(r, partitions={**r.partitions, **denied})
        )

    def answer(self, body: Any) -> Envelope | None:
        self.broker.endpoint.respond(self.env, body)
        return None

    def serve(self, body: Any, finish: Finish | None = None) -> Envelope:
        """Serve ``body`` (the request narrowed to what is allowed); ``finish`` mends its answer."""
        env = self.env if body is self.env.body else self.env._replace(body=body)
        if finish is not None and env.correlation_id:
            self.broker.endpoint.finishers[(env.src, env.correlation_id)] = finish
        return env


def _message(_error: str, what: str) -> str:
    return f"not authorized to {what} (the lab's timeline says why)"


# ---------------------------------------------------------------------------- data


def _has_transactional_records(req: p.ProduceRequest) -> bool:
    try:
        return any(read_header(batches).is_transactional for batches in req.partitions.values() if batches)
    except CorruptRecord:
        return False  # the broker refuses it, with the reason


def _produce(s: Screen) -> Envelope | None:
    req: p.ProduceRequest = s.env.body
    if _has_transactional_records(req) and (
        req.transactional_id is None or not s.may(Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id)
    ):
        why = _message(TRANSACTIONAL_ID, f"write {req.transactional_id}")
        failed = p.ProducePartitionResult(error=TRANSACTIONAL_ID, message=why)
        return s.answer(p.ProduceResponse(partitions=dict.fromkeys(req.partitions, failed)))
    return s.per_partition(
        Op.WRITE,
        lambda tp: p.ProducePartitionResult(error=TOPIC, message=_message(TOPIC, f"write to {tp.topic}")),
        p.ProduceResponse,
    )


def _fetch(s: Screen) -> Envelope | None:
    req: p.FetchRequest = s.env.body
    if req.replica_id >= 0:
        if s.may(Op.CLUSTER_ACTION, R.CLUSTER):
            return s.env
        failed = p.FetchPartitionData(error=CLUSTER, message=_message(CLUSTER, "fetch as a follower"))
        return s.answer(p.FetchResponse(partitions=dict.fromkeys(req.partitions, failed)))
    return s.per_partition(
        Op.READ,
        lambda tp: p.FetchPartitionData(error=TOPIC, message=_message(TOPIC, f"read {tp.topic}")),
        p.FetchResponse,
    )


def _list_offsets(s: Screen) -> Envelope | None:
    return s.per_partition(
        Op.DESCRIBE,
        lambda tp: p.ListOffsetsResult(error=TOPIC, message=_message(TOPIC, f"describe {tp.topic}")),
        p.ListOffsetsResponse,
    )


def _offsets_for_leader_epoch(s: Screen) -> Envelope | None:
    if s.may(Op.CLUSTER_ACTION, R.CLUSTER, log=False):
        return s.env
    return s.per_partition(
        Op.DESCRIBE,
        lambda tp: p.EpochEndOffset(error=TOPIC, message=_message(TOPIC, f"describe {tp.topic}")),
        p.OffsetsForLeaderEpochResponse,
    )


def _metadata(s: Screen) -> Envelope | None:
    req: p.MetadataRequest = s.env.body
    if req.topics is None:
        # Every topic: those the principal may not describe are left out, silently.
        def visible(r: p.MetadataResponse) -> p.MetadataResponse:
            shown = s.topics_allowed(Op.DESCRIBE, r.topics, log=False)
            return replace(r, topics={n: t for n, t in r.topics.items() if n in shown})

        return s.serve(req, visible)
    allowed = s.topics_allowed(Op.DESCRIBE, req.topics)
    denied = {n: p.TopicMetadata(name=n, error=TOPIC) for n in req.topics if n not in allowed}
    broker = s.broker
    if (
        req.allow_auto_topic_creation
        and broker.config.bool("auto.create.topics.enable")
        and not s.may(Op.CREATE, R.CLUSTER, log=False)
    ):
        known = {tp.topic for tp in broker.metadata.partitions}
        unknown = [n for n in req.topics if n in allowed and n not in known]
        may_create = s.topics_allowed(Op.CREATE, unknown)
        denied |= {n: p.TopicMetadata(name=n, error=TOPIC) for n in unknown if n not in may_create}
    if not denied:
        return s.env
    kept = tuple(n for n in req.topics if n not in denied)
    if not kept:
        cache = broker.metadata
        return s.answer(
            p.MetadataResponse(brokers=cache.live_brokers, controller_id=cache.controller_id, topics=denied)
        )
    return s.serve(replace(req, topics=kept), lambda r: replace(r, topics={**r.topics, **denied}))


def _inter_broker(s: Screen) -> Envelope | None:
    if s.may(Op.CLUSTER_ACTION, R.CLUSTER):
        return s.env
    body = s.env.body
    answers: dict[type, Any] = {
        p.LeaderAndIsrRequest: p.LeaderAndIsrResponse(error=CLUSTER),
        p.UpdateMetadataRequest: p.UpdateMetadataResponse(error=CLUSTER),
        p.StopReplicaRequest: p.StopReplicaResponse(error=CLUSTER),
        p.ControlledShutdownRequest: p.ControlledShutdownResponse(
            error=CLUSTER, message=_message(CLUSTER, "shut a broker down")
        ),
    }
    return s.answer(answers[type(body)])


# ---------------------------------------------------------------------------- groups


def _find_coordinator(s: Screen) -> Envelope | None:
    req: p.FindCoordinatorRequest = s.env.body
    if getattr(req, "key_type", 0) == 1:
        if s.may(Op.DESCRIBE, R.TRANSACTIONAL_ID, req.key):
            return s.env
        return s.answer(
            p.FindCoordinatorResponse(
                error=TRANSACTIONAL_ID, message=_message(TRANSACTIONAL_ID, f"describe {req.key}")
            )
        )
    if s.may(Op.DESCRIBE, R.GROUP, req.key):
        return s.env
    return s.answer(
        p.FindCoordinatorResponse(error=GROUP, message=_message(GROUP, f"describe group {req.key}"))
    )


def _group_read(s: Screen) -> Envelope | None:
    req = s.env.body
    if s.may(Op.READ, R.GROUP, req.group_id):
        return s.env
    answers: dict[type, type] = {
        p.JoinGroupRequest: p.JoinGroupResponse,
        p.SyncGroupRequest: p.SyncGroupResponse,
        p.HeartbeatRequest: p.HeartbeatResponse,
        p.LeaveGroupRequest: p.LeaveGroupResponse,
    }
    return s.answer(answers[type(req)](error=GROUP, message=_message(GROUP, f"read group {req.group_id}")))


def _offset_commit(s: Screen) -> Envelope | None:
    req: p.OffsetCommitRequest = s.env.body
    if not s.may(Op.READ, R.GROUP, req.group_id):
        return s.answer(
            p.OffsetCommitResponse(error=GROUP, message=_message(GROUP, f"read group {req.group_id}"))
        )
    allowed = s.topics_allowed(Op.READ, (tp.topic for tp in req.offsets))
    denied = {tp: TOPIC for tp in req.offsets if tp.topic not in allowed}
    if not denied:
        return s.env
    kept = {tp: o for tp, o in req.offsets.items() if tp.topic in allowed}
    if not kept:
        return s.answer(p.OffsetCommitResponse(partitions=denied))
    return s.serve(replace(req, offsets=kept), lambda r: replace(r, partitions={**r.partitions, **denied}))


def _offset_fetch(s: Screen) -> Envelope | None:
    req: p.OffsetFetchRequest = s.env.body
    if not s.may(Op.DESCRIBE, R.GROUP, req.group_id):
        return s.answer(
            p.OffsetFetchResponse(error=GROUP, message=_message(GROUP, f"describe group {req.group_id}"))
        )
    if req.partitions is None:

        def visible(r: p.OffsetFetchResponse) -> p.OffsetFetchResponse:
            shown = s.topics_allowed(Op.DESCRIBE, (tp.topic for tp in r.offsets), log=False)
            return replace(r, offsets={tp: o for tp, o in r.offsets.items() if tp.topic in shown})

        return s.serve(req, visible)
    allowed = s.topics_allowed(Op.DESCRIBE, (tp.topic for tp in req.partitions))
    denied = {tp: TOPIC for tp in req.partitions if tp.topic not in allowed}
    if not denied:
        return s.env
    kept = tuple(tp for tp in req.partitions if tp.topic in allowed)
    if not kept:
        return s.answer(p.OffsetFetchResponse(errors=denied))
    return s.serve(replace(req, partitions=kept), lambda r: replace(r, errors={**r.errors, **denied}))


def _list_groups(s: Screen) -> Envelope | None:
    if s.may(Op.DESCRIBE, R.CLUSTER, log=False):
        return s.env

    def visible(r: p.ListGroupsResponse) -> p.ListGroupsResponse:
        return replace(
            r, groups=tuple(g for g in r.groups if s.may(Op.DESCRIBE, R.GROUP, g.group_id, log=False))
        )

    return s.serve(s.env.body, visible)


def _describe_groups(s: Screen) -> Envelope | None:
    req: p.DescribeGroupsRequest = s.env.body
    allowed = [g for g in req.group_ids if s.may(Op.DESCRIBE, R.GROUP, g)]
    denied = [
        p.DescribedGroup(group_id=g, error=GROUP, message=_message(GROUP, f"describe group {g}"))
        for g in req.group_ids
        if g not in allowed
    ]
    if not denied:
        return s.env
    if not allowed:
        return s.answer(p.DescribeGroupsResponse(groups=tuple(denied)))
    return s.serve(replace(req, group_ids=tuple(allowed)), lambda r: replace(r, groups=(*r.groups, *denied)))


def _delete_groups(s: Screen) -> Envelope | None:
    req: p.DeleteGroupsRequest = s.env.body
    allowed = [g for g in req.group_ids if s.may(Op.DELETE, R.GROUP, g)]
    denied = {
        g: p.ErrorResult(error=GROUP, message=_message(GROUP, f"delete group {g}"))
        for g in req.group_ids
        if g not in allowed
    }
    if not denied:
        return s.env
    if not allowed:
        return s.answer(p.DeleteGroupsResponse(groups=denied))
    return s.serve(
        replace(req, group_ids=tuple(allowed)), lambda r: replace(r, groups={**r.groups, **denied})
    )


# ---------------------------------------------------------------------------- admin


def _create_topics(s: Screen) -> Envelope | None:
    req: p.CreateTopicsRequest = s.env.body
    if s.may(Op.CREATE, R.CLUSTER, log=False):
        return s.env
    allowed = s.topics_allowed(Op.CREATE, (t.name for t in req.topics))
    denied = {
        t.name: p.CreatedTopic(error=TOPIC, message=_message(TOPIC, f"create {t.name}"))
        for t in req.topics
        if t.name not in allowed
    }
    if not denied:
        return s.env
    kept = tuple(t for t in req.topics if t.name in allowed)
    if not kept:
        return s.answer(p.CreateTopicsResponse(topics=denied))
    return s.serve(replace(req, topics=kept), lambda r: replace(r, topics={**r.topics, **denied}))


def _by_topic(operation: Operation, doing: str) -> Rule:
    """DeleteTopics (names) and CreatePartitions (a mapping by topic): each topic on its own."""

    def rule(s: Screen) -> Envelope | None:
        req = s.env.body
        names = list(req.names) if isinstance(req, p.DeleteTopicsRequest) else list(req.topics)
        allowed = s.topics_allowed(operation, names)
        denied = {
            n: p.ErrorResult(error=TOPIC, message=_message(TOPIC, f"{doing} {n}"))
            for n in names
            if n not in allowed
        }
        if not denied:
            return s.env
        if isinstance(req, p.DeleteTopicsRequest):
            narrowed: Any = replace(req, names=tuple(n for n in names if n in allowed))
            empty: Any = p.DeleteTopicsResponse(topics=denied)
        else:
            narrowed = replace(req, topics={n: v for n, v in req.topics.items() if n in allowed})
            empty = p.CreatePartitionsResponse(topics=denied)
        if not allowed:
            return s.answer(empty)
        return s.serve(narrowed, lambda r: replace(r, topics={**r.topics, **denied}))

    return rule


def _configs(operation: Operation) -> Rule:
    def rule(s: Screen) -> Envelope | None:
        req = s.env.body
        denied: dict[tuple[int, str], str] = {}
        for kind, name, *_ in req.resources:
            if kind == p.TOPIC_RESOURCE:
                if not s.may(operation, R.TOPIC, name):
                    denied[(kind, name)] = TOPIC
            elif not s.may(operation, R.CLUSTER):
                denied[(kind, name)] = CLUSTER
        if not denied:
            return s.env
        kept = tuple(r for r in req.resources if (r[0], r[1]) not in denied)
        doing = "describe the configs of" if operation is Op.DESCRIBE_CONFIGS else "alter the configs of"
        if isinstance(req, p.DescribeConfigsRequest):
            failed: Any = tuple(
                p.DescribedConfigs(resource_type=k, name=n, error=e, message=_message(e, f"{doing} {n}"))
                for (k, n), e in denied.items()
            )
        else:
            failed = tuple(
                (k, n, p.ErrorResult(error=e, message=_message(e, f"{doing} {n}")))
                for (k, n), e in denied.items()
            )
        response = (
            p.DescribeConfigsResponse if isinstance(req, p.DescribeConfigsRequest) else p.AlterConfigsResponse
        )
        if not kept:
            return s.answer(response(resources=failed))
        return s.serve(replace(req, resources=kept), lambda r: replace(r, resources=(*r.resources, *failed)))

    return rule


def _cluster(operation: Operation, answer: Callable[[p.ErrorResult], Any]) -> Rule:
    def rule(s: Screen) -> Envelope | None:
        if s.may(operation, R.CLUSTER):
            return s.env
        doing = {Op.ALTER: "alter", Op.DESCRIBE: "describe"}[operation]
        return s.answer(
            answer(p.ErrorResult(error=CLUSTER, message=_message(CLUSTER, f"{doing} the cluster")))
        )

    return rule


def _create_acls(s: Screen) -> Envelope | None:
    req: p.CreateAclsRequest = s.env.body
    if s.may(Op.ALTER, R.CLUSTER):
        return s.env
    failed = p.ErrorResult(error=CLUSTER, message=_message(CLUSTER, "alter the cluster's ACLs"))
    return s.answer(p.CreateAclsResponse(results=tuple(failed for _ in req.bindings)))


def _delete_acls(s: Screen) -> Envelope | None:
    req: p.DeleteAclsRequest = s.env.body
    if s.may(Op.ALTER, R.CLUSTER):
        return s.env
    failed = p.DeleteAclsResult(error=CLUSTER, message=_message(CLUSTER, "alter the cluster's ACLs"))
    return s.answer(p.DeleteAclsResponse(results=tuple(failed for _ in req.filters)))


def _init_producer_id(s: Screen) -> Envelope | None:
    req: p.InitProducerIdRequest = s.env.body
    if req.transactional_id is not None:
        if s.may(Op.WRITE, R.TRANSACTIONAL_ID, req.transactional_id):
            return s.env
        return s.answer(
            p.InitProducerIdResponse(
                error=TRANSACTIONAL_ID, message=_message(TRANSACTIONAL_ID, f"write {req.transactional_id}")
            )
        )
    if s.may(Op.IDEMPOTENT_WRITE, R.CLUSTER, log=False) or s.authz.authorize_any(
        s.env.context, Op.WRITE, R.TOPIC
    ):
        return s.env
    s.may(Op.IDEMPOTENT_WRITE, R.CLUSTER)  # journal the denial with its reason
    return s.answer(
        p.InitProducerIdResponse(
            error=CLUSTER,
            message=_message(
                CLUSTER, "produce idempotently (IDEMPOTENT_WRITE on the cluster, or WRITE on a topic)"
            ),
        )
    )


# ---------------------------------------------------------------------------- transactions


def _transactional_id_denied(s: Screen, transactional_id: str) -> str | None:
    if s.may(Op.WRITE, R.TRANSACTIONAL_ID, transactional_id):
        return None
    return _message(TRANSACTIONAL_ID, f"write {transactional_id}")


def _add_partitions_to_txn(s: Screen) -> Envelope | None:
    req: p.AddPartitionsToTxnRequest = s.env.body
    why = _transactional_id_denied(s, req.transactional_id)
    if why is not None:
        return s.answer(
            p.AddPartitionsToTxnResponse(
                error=TRANSACTIONAL_ID,
                message=why,
                partitions=dict.fromkeys(req.partitions, TRANSACTIONAL_ID),
            )
        )
    allowed = s.topics_allowed(Op.WRITE, (tp.topic for tp in req.partitions))
    if all(tp.topic in allowed for tp in req.partitions):
        return s.env
    # Kafka adds none of them: the denied topics say why, the others were not attempted.
    return s.answer(
        p.AddPartitionsToTxnResponse(
            partitions={
                tp: "OPERATION_NOT_ATTEMPTED" if tp.topic in allowed else TOPIC for tp in req.partitions
            }
        )
    )


def _add_offsets_to_txn(s: Screen) -> Envelope | None:
    req: p.AddOffsetsToTxnRequest = s.env.body
    why = _transactional_id_denied(s, req.transactional_id)
    if why is not None:
        return s.answer(p.AddOffsetsToTxnResponse(error=TRANSACTIONAL_ID, message=why))
    if s.may(Op.READ, R.GROUP, req.group_id):
        return s.env
    return s.answer(
        p.AddOffsetsToTxnResponse(error=GROUP, message=_message(GROUP, f"read group {req.group_id}"))
    )


def _end_txn(s: Screen) -> Envelope | None:
    req: p.EndTxnRequest = s.env.body
    why = _transactional_id_denied(s, req.transactional_id)
    if why is None:
        return s.env
    return s.answer(p.EndTxnResponse(error=TRANSACTIONAL_ID, message=why))


def _txn_offset_commit(s: Screen) -> Envelope | None:
    req: p.TxnOffsetCommitRequest = s.env.body
    why = _transactional_id_denied(s, req.transactional_id)
    if why is not None:
        return s.answer(p.TxnOffsetCommitResponse(error=TRANSACTIONAL_ID, message=why))
    if not s.may(Op.READ, R.GROUP, req.group_id):
        return s.answer(
            p.TxnOffsetCommitResponse(error=GROUP, message=_message(GROUP, f"read group {req.group_id}"))
        )
    allowed = s.topics_allowed(Op.READ, (tp.topic for tp in req.offsets))
    denied: dict[TopicPartition, str | None] = {tp: TOPIC for tp in req.offsets if tp.topic not in allowed}
    if not denied:
        return s.env
    kept = {tp: o for tp, o in req.offsets.items() if tp.topic in allowed}
    if not kept:
        return s.answer(p.TxnOffsetCommitResponse(partitions=denied))
    return s.serve(replace(req, offsets=kept), lambda r: replace(r, partitions={**r.partitions, **denied}))


def _write_txn_markers(s: Screen) -> Envelope | None:
    req: p.WriteTxnMarkersRequest = s.env.body
    if s.may(Op.CLUSTER_ACTION, R.CLUSTER):
        return s.env
    return s.answer(
        p.WriteTxnMarkersResponse(
            results={m.producer_id: dict.fromkeys(m.partitions, CLUSTER) for m in req.markers}
        )
    )


def _describe_transactions(s: Screen) -> Envelope | None:
    req: p.DescribeTransactionsRequest = s.env.body
    allowed = {t for t in req.transactional_ids if s.may(Op.DESCRIBE, R.TRANSACTIONAL_ID, t)}
    denied = tuple(
        p.DescribedTransaction(
            transactional_id=t, error=TRANSACTIONAL_ID, message=_message(TRANSACTIONAL_ID, f"describe {t}")
        )
        for t in req.transactional_ids
        if t not in allowed
    )

    def finish(r: p.DescribeTransactionsResponse) -> p.DescribeTransactionsResponse:
        # The partitions of a transaction are shown only on topics the principal may describe.
        shown = s.topics_allowed(
            Op.DESCRIBE, (tp.topic for t in r.transactions for tp in t.partitions), log=False
        )
        kept = tuple(
            replace(t, partitions=tuple(tp for tp in t.partitions if tp.topic in shown))
            for t in r.transactions
        )
        return replace(r, transactions=kept + denied)

    return s.serve(
        replace(req, transactional_ids=tuple(t for t in req.transactional_ids if t in allowed)), finish
    )


def _list_transactions(s: Screen) -> Envelope | None:
    if s.may(Op.DESCRIBE, R.CLUSTER, log=False):
        return s.env

    def visible(r: p.ListTransactionsResponse) -> p.ListTransactionsResponse:
        return replace(
            r,
            transactions=tuple(
                t
                for t in r.transactions
                if s.may(Op.DESCRIBE, R.TRANSACTIONAL_ID, t.transactional_id, log=False)
            ),
        )

    return s.serve(s.env.body, visible)


# ---------------------------------------------------------------------------- SCRAM users


def _alter_scram(s: Screen) -> Envelope | None:
    req: AlterScramRequest = s.env.body
    if s.may(Op.ALTER, R.CLUSTER):
        return s.env
    why = _message(CLUSTER, "alter the cluster's SCRAM credentials")
    users = dict.fromkeys([u for u, _ in req.deletions] + [u for u, _ in req.upsertions])
    return s.answer(
        AlterScramResponse(results=tuple(UserResult(user=u, error=CLUSTER, message=why) for u in users))
    )


def _describe_scram(s: Screen) -> Envelope | None:
    if s.may(Op.DESCRIBE, R.CLUSTER):
        return s.env
    why = _message(CLUSTER, "describe the cluster's SCRAM credentials")
    return s.answer(DescribeScramResponse(error=CLUSTER, message=why))


RULES: dict[type, Rule] = {
    p.ProduceRequest: _produce,
    p.FetchRequest: _fetch,
    p.ListOffsetsRequest: _list_offsets,
    p.OffsetsForLeaderEpochRequest: _offsets_for_leader_epoch,
    p.MetadataRequest: _metadata,
    p.LeaderAndIsrRequest: _inter_broker,
    p.UpdateMetadataRequest: _inter_broker,
    p.StopReplicaRequest: _inter_broker,
    p.ControlledShutdownRequest: _inter_broker,
    p.FindCoordinatorRequest: _find_coordinator,
    p.JoinGroupRequest: _group_read,
    p.SyncGroupRequest: _group_read,
    p.HeartbeatRequest: _group_read,
    p.LeaveGroupRequest: _group_read,
    p.OffsetCommitRequest: _offset_commit,
    p.OffsetFetchRequest: _offset_fetch,
    p.ListGroupsRequest: _list_groups,
    p.DescribeGroupsRequest: _describe_groups,
    p.DeleteGroupsRequest: _delete_groups,
    p.CreateTopicsRequest: _create_topics,
    p.DeleteTopicsRequest: _by_topic(Op.DELETE, "delete"),
    p.CreatePartitionsRequest: _by_topic(Op.ALTER, "add partitions to"),
    p.DescribeConfigsRequest: _configs(Op.DESCRIBE_CONFIGS),
    p.AlterConfigsRequest: _configs(Op.ALTER_CONFIGS),
    p.ElectLeadersRequest: _cluster(
        Op.ALTER, lambda e: p.ElectLeadersResponse(error=e.error, message=e.message)
    ),
    p.AlterPartitionReassignmentsRequest: _cluster(
        Op.ALTER, lambda e: p.AlterPartitionReassignmentsResponse(error=e.error, message=e.message)
    ),
    p.ListPartitionReassignmentsRequest: _cluster(
        Op.DESCRIBE, lambda e: p.ListPartitionReassignmentsResponse(error=e.error, message=e.message)
    ),
    p.DescribeLogDirsRequest: _cluster(
        Op.DESCRIBE,
        lambda e: p.DescribeLogDirsResponse(log_dir="", partitions={}, error=e.error, message=e.message),
    ),
    p.CreateAclsRequest: _create_acls,
    p.DeleteAclsRequest: _delete_acls,
    p.DescribeAclsRequest: _cluster(
        Op.DESCRIBE, lambda e: p.DescribeAclsResponse(error=e.error, message=e.message)
    ),
    p.InitProducerIdRequest: _init_producer_id,
    p.AddPartitionsToTxnRequest: _add_partitions_to_txn,
    p.AddOffsetsToTxnRequest: _add_offsets_to_txn,
    p.EndTxnRequest: _end_txn,
    p.TxnOffsetCommitRequest: _txn_offset_commit,
    p.WriteTxnMarkersRequest: _write_txn_markers,
    p.DescribeTransactionsRequest: _describe_transactions,
    p.ListTransactionsRequest: _list_transactions,
    AlterScramRequest: _alter_scram,
    DescribeScramRequest: _describe_scram,
}


def screen(broker: Broker, env: Envelope) -> Envelope | None:
    """The request to serve (``env``, or narrowed to what is allowed), or None: answered here."""
    rule = RULES.get(type(env.body))
    if rule is None:
        return env
    return rule(Screen(broker, env))
