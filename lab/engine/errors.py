"""Kafka's errors, by Kafka's names.

Each error a person can cause carries Kafka's protocol name (``NOT_ENOUGH_REPLICAS``)
and a message that says what happened in words; ``retriable`` follows Kafka's
``RetriableException`` split so clients know whether to try again.
"""

from __future__ import annotations

from typing import ClassVar


class KafkaError(Exception):
    """Base of every error the engine raises on purpose."""

    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    retriable: ClassVar[bool] = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.name)
        self.message = message or self.name

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


class OffsetOutOfRange(KafkaError):
    name = "OFFSET_OUT_OF_RANGE"


class CorruptRecord(KafkaError):
    name = "CORRUPT_MESSAGE"
    retriable = True


class InvalidRecord(KafkaError):
    name = "INVALID_RECORD"


class RecordTooLarge(KafkaError):
    name = "MESSAGE_TOO_LARGE"


class UnknownTopicOrPartition(KafkaError):
    name = "UNKNOWN_TOPIC_OR_PARTITION"
    retriable = True


class LeaderNotAvailable(KafkaError):
    name = "LEADER_NOT_AVAILABLE"
    retriable = True


class NotLeaderOrFollower(KafkaError):
    name = "NOT_LEADER_OR_FOLLOWER"
    retriable = True


class NotEnoughReplicas(KafkaError):
    name = "NOT_ENOUGH_REPLICAS"
    retriable = True


class NotEnoughReplicasAfterAppend(KafkaError):
    name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    retriable = True


class RequestTimedOut(KafkaError):
    name = "REQUEST_TIMED_OUT"
    retriable = True


class NetworkException(KafkaError):
    name = "NETWORK_EXCEPTION"
    retriable = True


class FencedLeaderEpoch(KafkaError):
    name = "FENCED_LEADER_EPOCH"
    retriable = True


class UnknownLeaderEpoch(KafkaError):
    name = "UNKNOWN_LEADER_EPOCH"
    retriable = True


class KafkaStorageError(KafkaError):
    name = "KAFKA_STORAGE_ERROR"
    retriable = True


class TopicAlreadyExists(KafkaError):
    name = "TOPIC_ALREADY_EXISTS"


class InvalidTopic(KafkaError):
    name = "INVALID_TOPIC_EXCEPTION"


class InvalidPartitions(KafkaError):
    name = "INVALID_PARTITIONS"


class InvalidReplicationFactor(KafkaError):
    name = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignment(KafkaError):
    name = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfig(KafkaError):
    name = "INVALID_CONFIG"


class ConfigException(InvalidConfig):
    """Client side: Kafka's ConfigException, a producer or consumer config refused when the client is made."""


class InvalidRequest(KafkaError):
    name = "INVALID_REQUEST"


class SaslAuthenticationFailed(KafkaError):
    name = "SASL_AUTHENTICATION_FAILED"


class TopicAuthorizationFailed(KafkaError):
    name = "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationFailed(KafkaError):
    name = "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationFailed(KafkaError):
    name = "CLUSTER_AUTHORIZATION_FAILED"


class TransactionalIdAuthorizationFailed(KafkaError):
    name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class UnsupportedSaslMechanism(KafkaError):
    name = "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslState(KafkaError):
    name = "ILLEGAL_SASL_STATE"


class UnacceptableCredential(KafkaError):
    """A SCRAM credential Kafka will not store (an empty user name, too few or too many iterations)."""

    name = "UNACCEPTABLE_CREDENTIAL"


class ResourceNotFound(KafkaError):
    name = "RESOURCE_NOT_FOUND"


class DuplicateResource(KafkaError):
    name = "DUPLICATE_RESOURCE"


class SecurityDisabled(KafkaError):
    """An ACL request to a broker with no authorizer (``authorizer.class.name`` empty, Kafka's default)."""

    name = "SECURITY_DISABLED"


class BrokerNotAvailable(KafkaError):
    name = "BROKER_NOT_AVAILABLE"


class NoReassignmentInProgress(KafkaError):
    name = "NO_REASSIGNMENT_IN_PROGRESS"


class ElectionNotNeeded(KafkaError):
    name = "ELECTION_NOT_NEEDED"


class PreferredLeaderNotAvailable(KafkaError):
    name = "PREFERRED_LEADER_NOT_AVAILABLE"
    retriable = True


class CoordinatorNotAvailable(KafkaError):
    name = "COORDINATOR_NOT_AVAILABLE"
    retriable = True


class NotCoordinator(KafkaError):
    name = "NOT_COORDINATOR"
    retriable = True


class CoordinatorLoadInProgress(KafkaError):
    name = "COORDINATOR_LOAD_IN_PROGRESS"
    retriable = True


class IllegalGeneration(KafkaError):
    name = "ILLEGAL_GENERATION"


class UnknownMemberId(KafkaError):
    name = "UNKNOWN_MEMBER_ID"


class RebalanceInProgress(KafkaError):
    name = "REBALANCE_IN_PROGRESS"


class MemberIdRequired(KafkaError):
    name = "MEMBER_ID_REQUIRED"


class FencedInstanceId(KafkaError):
    name = "FENCED_INSTANCE_ID"


class InconsistentGroupProtocol(KafkaError):
    name = "INCONSISTENT_GROUP_PROTOCOL"


class GroupIdNotFound(KafkaError):
    name = "GROUP_ID_NOT_FOUND"


class NonEmptyGroup(KafkaError):
    name = "NON_EMPTY_GROUP"


class InvalidGroupId(KafkaError):
    name = "INVALID_GROUP_ID"


class InvalidSessionTimeout(KafkaError):
    name = "INVALID_SESSION_TIMEOUT"


class PolicyViolation(KafkaError):
    """A request a policy refuses (Kafka's PolicyViolationException): here, the lab's own limits."""

    name = "POLICY_VIOLATION"


class OutOfOrderSequenceNumber(KafkaError):
    name = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceNumber(KafkaError):
    name = "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpoch(KafkaError):
    """A batch from an older epoch of a producer than the partition has seen (InvalidProducerEpochException)."""

    name = "INVALID_PRODUCER_EPOCH"


class UnknownProducerId(KafkaError):
    """The broker has no state for the producer id (UnknownProducerIdException)."""

    name = "UNKNOWN_PRODUCER_ID"


class ProducerFenced(KafkaError):
    """A newer producer with the same transactional.id has the epoch now (ProducerFencedException)."""

    name = "PRODUCER_FENCED"


class InvalidTxnState(KafkaError):
    """A transactional request that does not fit the transaction's state (InvalidTxnStateException)."""

    name = "INVALID_TXN_STATE"


class ConcurrentTransactions(KafkaError):
    """The coordinator is still completing the previous transaction of this id (retriable)."""

    name = "CONCURRENT_TRANSACTIONS"
    retriable = True


class InvalidProducerIdMapping(KafkaError):
    """The producer id is not the one the coordinator has for this transactional.id."""

    name = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTransactionTimeout(KafkaError):
    """transaction.timeout.ms above the broker's transaction.max.timeout.ms (or not positive)."""

    name = "INVALID_TRANSACTION_TIMEOUT"


class TransactionCoordinatorFenced(KafkaError):
    """A marker from an older coordinator epoch than the partition has seen."""

    name = "TRANSACTION_COORDINATOR_FENCED"


class TransactionalIdNotFound(KafkaError):
    name = "TRANSACTIONAL_ID_NOT_FOUND"


class TransactionAborted(KafkaError):
    """Client side: a record that was still waiting when its transaction was aborted."""

    name = "TRANSACTION_ABORTED"


class NoOffsetForPartition(KafkaError):
    """Client side: auto.offset.reset=none and no committed offset."""

    name = "NO_OFFSET_FOR_PARTITION"


class ZooKeeperNotAvailable(KafkaError):
    """The lab cannot reach ZooKeeper, so what needs it is refused at once (Kafka's ZooKeeper client
    would wait zookeeper.connection.timeout.ms and fail with ZooKeeperClientTimeoutException)."""

    name = "ZOOKEEPER_NOT_AVAILABLE"
    retriable = True


class IllegalState(KafkaError):
    """Client side: a call that does not fit the client's state (Kafka's IllegalStateException)."""

    name = "ILLEGAL_STATE"


class CommitFailed(KafkaError):
    """Client side: a commit from a member no longer in a generation (Kafka's CommitFailedException)."""

    name = "COMMIT_FAILED"


class IllegalArgument(KafkaError):
    """Client side: a bad argument (Kafka's IllegalArgumentException)."""

    name = "ILLEGAL_ARGUMENT"


class UnsupportedCompressionType(KafkaError):
    name = "UNSUPPORTED_COMPRESSION_TYPE"


class OffsetsOutOfOrder(KafkaError):
    """Broker side: a follower append whose offsets do not increase (Kafka's OffsetsOutOfOrderException)."""

    name = "OFFSETS_OUT_OF_ORDER"


class UnexpectedAppendOffset(KafkaError):
    """Broker side: a follower append that starts below the log end offset (UnexpectedAppendOffsetException)."""

    name = "UNEXPECTED_APPEND_OFFSET"


class InconsistentClusterId(KafkaError):
    """A broker's meta.properties names another cluster (or broker): it refuses to start."""

    name = "INCONSISTENT_CLUSTER_ID"


class KafkaTimeout(KafkaError):
    """Client side: a deadline passed (Kafka's TimeoutException), e.g. delivery.timeout.ms."""

    name = "TIMEOUT"
    retriable = True


def error_class(name: str) -> type[KafkaError]:
    """The error class for a Kafka error name (``NOT_LEADER_OR_FOLLOWER``)."""
    for cls in _all_errors(KafkaError):
        if cls.name == name:
            return cls
    return KafkaError


def from_wire(name: str, message: str = "") -> KafkaError:
    return error_class(name)(message or name)


def _all_errors(base: type[KafkaError]) -> list[type[KafkaError]]:
    out = [base]
    for sub in base.__subclasses__():
        out += _all_errors(sub)
    return out


class NotController(KafkaError):
    name = "NOT_CONTROLLER"
    retriable = True


class ReassignmentInProgress(KafkaError):
    name = "REASSIGNMENT_IN_PROGRESS"
