"""Requests and responses, by the names of Kafka's protocol (a lean subset of fields).

These are what travels over ``network.py``: frozen values, never shared mutable
state, so a message in flight is a picture of what was sent. Errors travel as
Kafka's error names (``NOT_LEADER_OR_FOLLOWER``) with a message, as on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lab.engine.acl import AclBinding, AclFilter
from lab.engine.ids import BrokerId, TopicPartition

# Produce.


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequest:
    acks: int  # 0, 1 or -1 (all)
    timeout_ms: int
    partitions: Mapping[TopicPartition, bytes]
    records: int = 0  # how many records the batches hold, for the pictures
    transactional_id: str | None = None  # a transactional producer's: its batches need WRITE on it


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducePartitionResult:
    error: str | None = None
    message: str = ""
    base_offset: int = -1
    log_start_offset: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponse:
    partitions: Mapping[TopicPartition, ProducePartitionResult]


# InitProducerId (an idempotent producer's id and epoch; transactions will add a transactional.id).


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdRequest:
    transactional_id: str | None = None
    transaction_timeout_ms: int = -1
    producer_id: int = -1  # KIP-360: the id and epoch a producer already has, or -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdResponse:
    error: str | None = None
    message: str = ""
    producer_id: int = -1
    producer_epoch: int = -1


# Fetch (followers and consumers).


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartition:
    fetch_offset: int
    current_leader_epoch: int = -1  # -1: don't fence
    log_start_offset: int = -1
    max_bytes: int = 1048576


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    replica_id: int  # a follower's broker id, or -1 for a consumer
    max_wait_ms: int
    min_bytes: int
    partitions: Mapping[TopicPartition, FetchPartition]
    max_bytes: int = 2**31 - 1  # the whole response's (KIP-74); the first batch comes whatever its size
    isolation_level: int = 0  # 0 read_uncommitted (up to the HW), 1 read_committed (up to the LSO)


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartitionData:
    error: str | None = None
    message: str = ""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1  # not in Kafka's response; the pictures show it
    records: bytes = b""
    record_count: int = 0
    # read_committed only: (producer id, first offset) of each aborted transaction the records overlap.
    aborted_transactions: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    partitions: Mapping[TopicPartition, FetchPartitionData]


# KIP-101: where did my last epoch end on the leader?


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsForLeaderEpochRequest:
    replica_id: int
    partitions: Mapping[TopicPartition, tuple[int, int]]  # (current_leader_epoch, leader_epoch asked about)


@dataclass(frozen=True, slots=True, kw_only=True)
class EpochEndOffset:
    error: str | None = None
    message: str = ""
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsForLeaderEpochResponse:
    partitions: Mapping[TopicPartition, EpochEndOffset]


# ListOffsets (consumers: earliest, latest, by time).

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsRequest:
    partitions: Mapping[TopicPartition, int]  # a timestamp, or EARLIEST/LATEST
    current_leader_epochs: Mapping[TopicPartition, int] = field(default_factory=dict)  # fencing, as Fetch
    isolation_level: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResult:
    error: str | None = None
    message: str = ""
    offset: int = -1
    timestamp: int = -1  # the found record's, for a lookup by time
    leader_epoch: int = -1  # the epoch of the record before ``offset``


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResponse:
    partitions: Mapping[TopicPartition, ListOffsetsResult]


# Metadata.


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionMetadata:
    partition: int
    leader: BrokerId  # -1: no leader
    leader_epoch: int
    replicas: tuple[BrokerId, ...]
    isr: tuple[BrokerId, ...]
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    name: str
    error: str | None = None
    partitions: tuple[PartitionMetadata, ...] = ()
    topic_id: str | None = None  # KIP-516 (Metadata v10+): a client tells a re-created topic apart


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataRequest:
    topics: tuple[str, ...] | None  # None: every topic
    # Create the unknown topics asked for, if the broker's auto.create.topics.enable allows
    # (a real client's request says; the engine's own clients never ask).
    allow_auto_topic_creation: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponse:
    brokers: tuple[BrokerId, ...]
    controller_id: BrokerId
    topics: Mapping[str, TopicMetadata]


# Controller to brokers.


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionStateInfo:
    tp: TopicPartition
    leader: BrokerId  # -1: offline
    leader_epoch: int
    isr: tuple[BrokerId, ...]
    zk_version: int
    replicas: tuple[BrokerId, ...]
    controller_epoch: int
    is_new: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest:
    controller_id: BrokerId
    controller_epoch: int
    partitions: tuple[PartitionStateInfo, ...]
    topic_ids: Mapping[str, str] = field(default_factory=dict)  # KIP-516 (LeaderAndIsr v5+)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponse:
    error: str | None = None
    partitions: Mapping[TopicPartition, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest:
    controller_id: BrokerId
    controller_epoch: int
    live_brokers: tuple[BrokerId, ...]
    partitions: tuple[PartitionStateInfo, ...]
    deleted_topics: tuple[str, ...] = ()
    topic_ids: Mapping[str, str] = field(default_factory=dict)  # KIP-516 (UpdateMetadata v7+)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataResponse:
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest:
    controller_id: BrokerId
    controller_epoch: int
    partitions: Mapping[TopicPartition, bool]  # delete the log too?


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponse:
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRequest:
    broker_id: BrokerId
    broker_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse:
    error: str | None = None
    message: str = ""
    remaining: tuple[TopicPartition, ...] = ()


# Short labels for the pictures of messages in flight, worked out once per type (the network
# labels every message it sends).
_KINDS: dict[type, str] = {}


def kind_of(message: object) -> str:
    cls = type(message)
    kind = _KINDS.get(cls)
    if kind is None:
        kind = cls.__name__
        for suffix in ("Request", "Response"):
            if kind.endswith(suffix):
                kind = kind[: -len(suffix)]
                break
        _KINDS[cls] = kind
    return kind


# Consumer groups (the classic protocol). Member metadata and assignments are
# opaque bytes to the coordinator, as in Kafka; the lab's clients put JSON there.


@dataclass(frozen=True, slots=True, kw_only=True)
class FindCoordinatorRequest:
    key: str  # the group id, or the transactional id with key_type 1
    key_type: int = 0  # 0 GROUP, 1 TRANSACTION


@dataclass(frozen=True, slots=True, kw_only=True)
class FindCoordinatorResponse:
    error: str | None = None
    message: str = ""
    node_id: BrokerId = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupRequest:
    group_id: str
    member_id: str  # "" for a new member
    group_instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]  # (assignor name, subscription), most preferred first
    reason: str = ""
    client_host: str = ""  # where the member connects from (a real client's address; the lab's own: none)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResponse:
    error: str | None = None
    message: str = ""
    generation_id: int = -1
    protocol_name: str = ""
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()  # only for the leader


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: tuple[tuple[str, bytes], ...]  # only from the leader


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupResponse:
    error: str | None = None
    message: str = ""
    assignment: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatResponse:
    error: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupResponse:
    error: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int  # -1 with member "": a consumer outside the group's management
    member_id: str
    group_instance_id: str | None
    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponse:
    error: str | None = None
    message: str = ""
    partitions: Mapping[TopicPartition, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None  # None: all


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponse:
    error: str | None = None
    message: str = ""
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)  # -1: none committed
    errors: Mapping[TopicPartition, str] = field(default_factory=dict)  # a partition's own error


# Admin (to the controller, or to any broker for configs and log dirs). Results carry Kafka's error
# names per topic, partition or resource, as the wire responses do.


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorResult:
    error: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: the broker's num.partitions
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    assignments: Mapping[int, tuple[BrokerId, ...]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    source: int  # Kafka's ConfigSource ids: 1 dynamic topic config, 4 static broker config, 5 default
    sensitive: bool = False
    documentation: str = ""
    kind: str = ""  # the engine's type name: int, long, bool, double, str, list


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequest:
    topics: tuple[NewTopic, ...]
    timeout_ms: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedTopic:
    error: str | None = None
    message: str = ""
    topic_id: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse:
    topics: Mapping[str, CreatedTopic]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsRequest:
    names: tuple[str, ...]
    timeout_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponse:
    topics: Mapping[str, ErrorResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsRequest:
    # topic -> (the new total, the new partitions' replicas or None to place them)
    topics: Mapping[str, tuple[int, tuple[tuple[BrokerId, ...], ...] | None]]
    timeout_ms: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsResponse:
    topics: Mapping[str, ErrorResult]


TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsRequest:
    resources: tuple[tuple[int, str, tuple[str, ...] | None], ...]  # (type, name, keys or None: all)


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedConfigs:
    resource_type: int
    name: str
    error: str | None = None
    message: str = ""
    entries: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResponse:
    resources: tuple[DescribedConfigs, ...]


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs' operations


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsRequest:
    # (type, name, ((key, operation, value), ...)); not incremental: the given keys replace every override
    resources: tuple[tuple[int, str, tuple[tuple[str, int, str | None], ...]], ...]
    incremental: bool
    validate_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResponse:
    resources: tuple[tuple[int, str, ErrorResult], ...]


PREFERRED, UNCLEAN = 0, 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequest:
    election_type: int
    partitions: tuple[TopicPartition, ...] | None  # None: every partition
    timeout_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponse:
    error: str | None = None
    message: str = ""
    partitions: Mapping[TopicPartition, ErrorResult] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReassignmentsRequest:
    plan: Mapping[TopicPartition, tuple[BrokerId, ...] | None]  # None: cancel
    timeout_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReassignmentsResponse:
    error: str | None = None
    message: str = ""
    partitions: Mapping[TopicPartition, ErrorResult] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsRequest:
    partitions: tuple[TopicPartition, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OngoingReassignment:
    replicas: tuple[BrokerId, ...]
    adding: tuple[BrokerId, ...]
    removing: tuple[BrokerId, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsResponse:
    error: str | None = None
    message: str = ""
    reassignments: Mapping[TopicPartition, OngoingReassignment] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsRequest:
    partitions: tuple[TopicPartition, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogDirPartition:
    size: int
    offset_lag: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsResponse:
    log_dir: str
    partitions: Mapping[TopicPartition, LogDirPartition]
    total_bytes: int = -1
    usable_bytes: int = -1
    error: str | None = None
    message: str = ""


# ACLs (any broker; SECURITY_DISABLED without an authorizer).


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsRequest:
    bindings: tuple[AclBinding, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsResponse:
    results: tuple[ErrorResult, ...]  # one per binding, in order


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsRequest:
    filter: AclFilter


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponse:
    error: str | None = None
    message: str = ""
    bindings: tuple[AclBinding, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsRequest:
    filters: tuple[AclFilter, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResult:
    error: str | None = None
    message: str = ""
    bindings: tuple[AclBinding, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResponse:
    results: tuple[DeleteAclsResult, ...]  # one per filter, in order


# Group admin (to a group's coordinator; ListGroups to every broker).


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsRequest:
    states: tuple[str, ...] = ()  # KIP-518: only groups in these states (empty: all)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsResponse:
    error: str | None = None
    message: str = ""
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsRequest:
    group_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    group_id: str
    error: str | None = None
    message: str = ""
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsRequest:
    group_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsResponse:
    groups: Mapping[str, ErrorResult]


# Transactions (KIP-98): the transaction coordinator's requests, and the markers it has partition
# leaders write.


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnResponse:
    error: str | None = None
    message: str = ""
    partitions: Mapping[TopicPartition, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AddOffsetsToTxnResponse:
    error: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnResponse:
    error: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitRequest:
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    offsets: Mapping[TopicPartition, int]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitResponse:
    error: str | None = None
    message: str = ""
    partitions: Mapping[TopicPartition, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnMarkerEntry:
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteTxnMarkersRequest:
    markers: tuple[TxnMarkerEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteTxnMarkersResponse:
    # Per producer id, each partition's error (None: written and replicated).
    results: Mapping[int, Mapping[TopicPartition, str | None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsRequest:
    transactional_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTransaction:
    transactional_id: str
    error: str | None = None
    message: str = ""
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponse:
    transactions: tuple[DescribedTransaction, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListTransactionsRequest:
    state_filters: tuple[str, ...] = ()
    producer_id_filters: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListTransactionsResponse:
    error: str | None = None
    transactions: tuple[ListedTransaction, ...] = ()
