"""What the API reads and writes.

Inputs refuse unknown fields, so a typo is a 400 naming it, not a silent default. Every limit is the
lab's one definition (``lab.engine.limits``), and every rule a request must follow is in its schema,
cross-field rules included (``oneOf``): a request the OpenAPI document calls valid is one the API takes
(the cluster may still refuse it, with Kafka's error and a 409).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, cast

from ninja import Path, Schema
from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.functional_validators import ModelWrapValidatorHandler

from lab.api.errors import ErrorOut
from lab.engine import limits
from lab.engine.admin import INTERNAL_TOPICS, validate_new_topic_name
from lab.engine.config import BROKER_KEYS, TOPIC_KEYS, ConfigKey
from lab.engine.errors import InvalidConfig
from lab.engine.limits import Text, Whole
from lab.scenarios.yamlsafe import MAX_CHARS as MAX_SCENARIO_CHARS

# For path and query parameters (ninja's Path and Query take the same keywords).
MAX_NAME = limits.TOPIC_NAME.max_length
TOPIC_PATTERN = limits.TOPIC_NAME.json_pattern


def _integral(value: Any) -> Any:
    """JSON has one kind of number: 3.0 is the integer 3 (JSON Schema says so too); 3.5 is not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    return value


def whole(limit: Whole, default: Any = ..., **kw: Any) -> Any:
    """A field for a whole number within the lab's ``limit``."""
    return Field(default, ge=limit.low, le=limit.high, **kw)


def _refuse(reserved: tuple[str, ...]) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text in reserved:
            raise ValueError(f"cannot be {' or '.join(map(repr, reserved))}")
        return text

    return check


def text(limit: Text) -> Any:
    """The type of a text field within the lab's ``limit`` (its length, its pattern, its reserved words)."""
    extra: dict[str, Any] = {"not": {"enum": list(limit.reserved)}} if limit.reserved else {}
    return Annotated[
        str,
        Field(
            min_length=limit.min_length or None,
            max_length=limit.max_length,
            pattern=limit.json_pattern,
            json_schema_extra=extra or None,
        ),
        AfterValidator(_refuse(limit.reserved)),
    ]


def path(limit: Text) -> Any:
    """A path parameter within the lab's ``limit``: the length and pattern the same text has in a body, so a
    value the schema allows is looked up (404 when unknown) and one it refuses is a 400 naming the rule."""
    return Path(
        ..., min_length=max(limit.min_length, 1), max_length=limit.max_length, pattern=limit.json_pattern
    )


def _unique(items: list[Any]) -> list[Any]:
    if len(set(items)) != len(items):
        raise ValueError("lists an item twice")
    return items


def exactly_one_of(*choices: tuple[str, ...]) -> dict[str, Any]:
    """JSON Schema for "exactly one of these groups of fields" when every field may also be null (absent):
    each branch requires its fields as non-null and the others' fields null or absent."""
    every = {name for group in choices for name in group}
    return {
        "oneOf": [
            {
                "required": list(group),
                "properties": {
                    name: ({"not": {"type": "null"}} if name in group else {"type": "null"}) for name in every
                },
            }
            for group in choices
        ]
    }


class In(Schema):
    # Strict: JSON's false is not the number 0 and "3" is not 3; a field nobody declared is a typo.
    model_config = ConfigDict(extra="forbid", strict=True)

    # In place of ninja's root validator (which reads fields through a DjangoGetter, for ORM objects):
    # an input is JSON, whose numbers are read as JSON Schema reads them.
    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(
        cls, values: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        return handler(_integral(values))


# ----------------------------------------------------------------------------- configs


def config_field(keys: Mapping[str, ConfigKey], what: str) -> Any:
    """Config overrides by Kafka's key, each value typed as its key is (an integer, true/false, text)."""
    return Field(
        default_factory=dict,
        description=f"{what} config overrides, by Kafka's key",
        json_schema_extra={
            "properties": {name: cast(Any, key.json_schema()) for name, key in keys.items()},
            "additionalProperties": False,
        },
    )


def clean_config(keys: Mapping[str, ConfigKey], what: str, given: Mapping[str, Any]) -> dict[str, str]:
    """The values Kafka stores, each checked by its key; INVALID_CONFIG (a 400) names the first bad one."""
    out: dict[str, str] = {}
    for name, value in given.items():
        key = keys.get(name)
        if key is None:
            raise InvalidConfig(f"Unknown {what} config name: {name}")
        out[name] = key.from_json(value)
    return out


# ----------------------------------------------------------------------------- who


class MeOut(Schema):
    username: str
    role: str
    token: str = Field(description="the prefix of the token this request used")


class MessageOut(Schema):
    message: str


# ----------------------------------------------------------------------------- labs


class LabIn(In):
    name: text(limits.LAB_NAME) = Field(description="shown on the lab's page; its slug comes from it")  # type: ignore[valid-type]
    brokers: int = whole(limits.BROKERS, 3)
    config: dict[str, Any] = config_field(BROKER_KEYS, "broker")
    owner: str | None = Field(
        None,
        min_length=1,
        max_length=150,
        pattern=r"^[\w.@+-]+$",  # Django's user names
        description="instructors only: make the lab for this user (a student)",
    )
    listeners: list[Literal["SASL_PLAINTEXT", "SSL", "SASL_SSL"]] = Field(
        default_factory=list,
        max_length=3,
        description="Kafka's security protocols the lab listens with beside PLAINTEXT, each on ports of its "
        "own: SASL_PLAINTEXT (a login: PLAIN, SCRAM-SHA-256/512 against the lab's users), SSL (TLS with "
        "the lab's own CA), SASL_SSL (both)",
    )

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, Any]) -> dict[str, str]:
        return clean_config(BROKER_KEYS, "broker", value)


class LabOut(Schema):
    slug: str
    name: str
    owner: str
    brokers: int
    url: str
    state: str = Field(description="starting | running | resetting | failed | stopped")
    store: str = Field(description="zookeeper | memory")
    zookeeper_outage: str | None = Field(
        None, description='"ZooKeeper is not answering: ..." while the lab cannot reach ZooKeeper'
    )
    can_act: bool
    asleep: bool = Field(
        False, description="nobody used the lab for a while: its clock is stopped until someone does"
    )
    slept: str | None = Field(
        None,
        description='its current or last sleep: "Slept: nobody watched; the clock was stopped for 12 min. ..."',
    )


class ListenerOut(Schema):
    broker: int = Field(description="the broker's id")
    host: str = Field(description="the host the broker advertises: what a client connects to")
    port: int
    open: bool = Field(
        description="accepting connections now (false: the broker is down, or the port was busy)"
    )
    error: str | None = Field(None, description="why the listener could not open, e.g. its port is in use")


class SecuredListenerOut(Schema):
    protocol: Literal["SASL_PLAINTEXT", "SSL", "SASL_SSL"] = Field(description="Kafka's security protocol")
    bootstrap_servers: str = Field(description="this listener's host:port on every broker")
    listeners: list[ListenerOut]


class LabDetailOut(LabOut):
    bootstrap_servers: str = Field(
        description="comma-separated host:port of every broker's Kafka listener, for a client's "
        "bootstrap.servers; empty when the lab has no listeners"
    )
    listeners: list[ListenerOut] = Field(description="each broker's Kafka listener")
    secured: list[SecuredListenerOut] = Field(
        default_factory=list, description="the listeners beside PLAINTEXT (SASL_PLAINTEXT, SSL, SASL_SSL)"
    )
    ca_url: str | None = Field(
        None,
        description="where the lab's CA certificate (PEM) is, when a listener speaks TLS: ssl.ca.location",
    )
    snapshot: dict[str, Any]


# ----------------------------------------------------------------------------- topics


def _topic_name(name: str) -> str:
    validate_new_topic_name(
        name
    )  # Kafka's rules and words, no internal topic: INVALID_TOPIC_EXCEPTION, a 400
    return name


# A new topic's name: the JSON schema tells Kafka's rules, the engine's check applies them.
TopicName = Annotated[
    str,
    Field(
        json_schema_extra={
            "minLength": limits.TOPIC_NAME.min_length,
            "maxLength": limits.TOPIC_NAME.max_length,
            "pattern": limits.TOPIC_NAME.json_pattern,
            "not": {"enum": [*limits.TOPIC_NAME.reserved, *INTERNAL_TOPICS]},
        }
    ),
    AfterValidator(_topic_name),
]


class TopicIn(In):
    name: TopicName
    partitions: int = whole(limits.PARTITIONS, 1)
    replication_factor: int = whole(
        limits.REPLICATION_FACTOR,
        1,
        description="at most the lab's brokers (INVALID_REPLICATION_FACTOR, 409)",
    )
    config: dict[str, Any] = config_field(TOPIC_KEYS, "topic")

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, Any]) -> dict[str, str]:
        return clean_config(TOPIC_KEYS, "topic", value)


class TopicSummaryOut(Schema):
    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    internal: bool
    reassigning: bool


class ConfigOut(Schema):
    name: str
    value: str
    source: Literal["topic", "default"] = Field(description="topic: an override on this topic")
    lab_default: str
    kafka_default: str
    doc: str


class PartitionOut(Schema):
    partition: int
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    offline: bool
    under_replicated: bool
    logs: dict[str, dict[str, Any]] = Field(
        description="by broker id: log_start_offset (the log start: the oldest offset kept), high_watermark, "
        "log_end_offset, leader_epoch, online, role, and producers: each idempotent producer this replica's "
        "producer state knows (producer_id, producer_epoch, first_sequence and last_sequence of the batches it "
        "keeps, last_offset)"
    )


class TopicOut(Schema):
    name: str
    partitions: list[PartitionOut]
    reassigning: dict[str, list[int]]
    configs: list[ConfigOut]


TopicKey = Annotated[str, Field(json_schema_extra={"enum": sorted(TOPIC_KEYS)})]


class ConfigPatchIn(In):
    set: dict[str, Any] = config_field(TOPIC_KEYS, "topic")
    remove: list[TopicKey] = Field(
        default_factory=list, max_length=len(TOPIC_KEYS), description="overrides to drop, by key"
    )

    @field_validator("set")
    @classmethod
    def _set(cls, value: dict[str, Any]) -> dict[str, str]:
        return clean_config(TOPIC_KEYS, "topic", value)

    @field_validator("remove")
    @classmethod
    def _remove(cls, value: list[str]) -> list[str]:
        unknown = [k for k in value if k not in TOPIC_KEYS]
        if unknown:
            raise InvalidConfig(f"Unknown topic config name: {unknown[0]}")
        return value


class PartitionsIn(In):
    total: int = whole(limits.PARTITIONS, description="the partition count to grow to (more than it has)")


BrokerIdIn = Annotated[int, Field(ge=limits.BROKER_ID.low, le=limits.BROKER_ID.high)]
PartitionIn = Annotated[int, Field(ge=limits.PARTITION.low, le=limits.PARTITION.high)]
# A partition's number as a JSON object's key: "0" to "31", written as the partition is.
PARTITION_KEY = (
    "^(?:" + "|".join(str(p) for p in range(limits.PARTITION.low, limits.PARTITION.high + 1)) + ")$"
)
Replicas = Annotated[
    list[BrokerIdIn],
    Field(min_length=1, max_length=limits.REPLICATION_FACTOR.high, json_schema_extra={"uniqueItems": True}),
    AfterValidator(_unique),
]


class ReassignIn(In):
    plan: dict[Annotated[str, Field(pattern=PARTITION_KEY)], Replicas] = Field(
        description='{"0": [1, 2, 3], ...}: the new replica list of each partition, by partition number',
        min_length=1,
        max_length=limits.PARTITIONS.high,
        json_schema_extra={"additionalProperties": False},
    )


class ElectIn(In):
    partitions: list[PartitionIn] | None = Field(
        None, min_length=1, max_length=limits.PARTITIONS.high, description="default: every one"
    )


# ----------------------------------------------------------------------------- records


class RecordIn(In):
    key: text(limits.KEY) | None = None  # type: ignore[valid-type]
    value: text(limits.VALUE) | None = None  # type: ignore[valid-type]
    partition: PartitionIn | None = Field(None, description="default: the partitioner picks")


class ProduceIn(In):
    records: list[RecordIn] = Field(min_length=1, max_length=limits.RECORDS.high)
    acks: Literal["0", "1", "all"] = "all"
    retries: int | None = whole(
        limits.RETRIES,
        None,
        description="the producer's retries (Kafka's default: 2147483647, until delivery.timeout.ms); "
        "0 shows a retriable error such as NOT_ENOUGH_REPLICAS at once",
    )


class SendResult(Schema):
    status: Literal["acknowledged", "failed", "sent", "pending"] = Field(
        description="acknowledged: written, at this offset; failed: Kafka's error says why; "
        "sent: acks=0, no answer comes; pending: no answer yet (the producer retries; the clock may be paused)"
    )
    partition: int | None = None
    offset: int | None = None
    error: str | None = Field(None, description="Kafka's error, by name, for a failed record")
    message: str | None = None


class ProduceOut(Schema):
    id: str = Field(
        description="this produce's id: GET /api/labs/{slug}/produce-requests/{id} tells it again"
    )
    acks: str
    records: list[SendResult]


class ProducePendingOut(ProduceOut):
    status: Literal["pending"]
    message: str = Field(description="how many records wait, and why (the errors the producer retries after)")
    poll: str = Field(description="where to ask for the outcome (also the Location header)")


class ProduceFailedOut(ErrorOut):
    """A 409: the error of the first failed record, and (for a produce) every record's outcome."""

    id: str | None = None
    acks: str | None = None
    records: list[SendResult] | None = None


class RecordOut(Schema):
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: str | None
    value: str | None
    headers: dict[str, str | None]


class RecordsOut(Schema):
    records: list[RecordOut]


class ConsumeIn(In):
    group: text(limits.GROUP_ID)  # type: ignore[valid-type]
    partition: PartitionIn | None = Field(None, description="default: every partition")
    limit: int = whole(limits.RECORDS, 100)
    auto_offset_reset: Literal["earliest", "latest"] = Field(
        "latest", description="where a partition with no committed offset starts (Kafka's default: latest)"
    )


class ConsumeOut(Schema):
    group: str
    records: list[RecordOut]
    committed: dict[str, int] = Field(description='the offsets committed, by "topic/partition"')


# ----------------------------------------------------------------------------- groups


class MemberOut(Schema):
    member_id: str
    client_id: str
    instance_id: str | None
    assignment: list[tuple[str, int]]


class GroupOut(Schema):
    group: str
    state: str
    generation: int
    assignor: str | None
    protocol_type: str | None
    leader: str | None
    coordinator: int
    members: list[MemberOut]
    committed: dict[str, int]
    lag: dict[str, int]
    total_lag: int


class ResetIn(In):
    topic: text(limits.TOPIC_NAME)  # type: ignore[valid-type]
    to: Literal["earliest", "latest", "offset", "timestamp"]
    offset: int | None = whole(limits.OFFSET, None, description="with to=offset, and only then")
    timestamp: int | None = whole(
        limits.TIMESTAMP, None, description="with to=timestamp, and only then: ms of the lab's virtual time"
    )
    partitions: list[PartitionIn] | None = Field(
        None, min_length=1, max_length=limits.PARTITIONS.high, description="default: every one"
    )

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "oneOf": [
                {
                    "properties": {
                        "to": {"enum": ["earliest", "latest"]},
                        "offset": {"type": "null"},
                        "timestamp": {"type": "null"},
                    }
                },
                {
                    "required": ["offset"],
                    "properties": {
                        "to": {"const": "offset"},
                        "offset": {"not": {"type": "null"}},
                        "timestamp": {"type": "null"},
                    },
                },
                {
                    "required": ["timestamp"],
                    "properties": {
                        "to": {"const": "timestamp"},
                        "offset": {"type": "null"},
                        "timestamp": {"not": {"type": "null"}},
                    },
                },
            ]
        },
    )

    @model_validator(mode="after")
    def _target(self) -> ResetIn:
        for field in ("offset", "timestamp"):
            given = getattr(self, field) is not None
            if self.to == field and not given:
                raise ValueError(f"to={field} needs {field}")
            if given and self.to != field:
                raise ValueError(f"{field} goes with to={field} only")
        return self


class ResetOut(Schema):
    group: str
    offsets: dict[str, int]


# ----------------------------------------------------------------------------- transactions


class TxnProducerOut(Schema):
    producer: str = Field(description="the dashboard producer holding the transactional id")
    state: str = Field(description="Kafka's client state: READY, IN_TRANSACTION, FATAL_ERROR...")
    producer_id: int
    producer_epoch: int
    partitions: list[list[Any]]
    committed: int
    aborted: int
    error: str | None = Field(description="PRODUCER_FENCED once a newer producer took the id")


class TransactionOut(Schema):
    transactional_id: str
    state: str = Field(description="the coordinator's: Empty, Ongoing, PrepareCommit, CompleteCommit...")
    producer_id: int
    producer_epoch: int
    partitions: list[list[Any]] = Field(description="[topic, partition] in the open transaction")
    coordinator: int = Field(description="the broker leading the id's __transaction_state partition")
    state_partition: int
    coordinator_epoch: int
    timeout_ms: int
    start_ms: int
    deadline_ms: int | None = Field(
        description="when the coordinator aborts the open transaction (virtual ms)"
    )
    pending: str
    producers: list[TxnProducerOut]


class TxnInitIn(In):
    producer: text(limits.CLIENT_NAME)  # type: ignore[valid-type]
    transactional_id: text(limits.TRANSACTIONAL_ID)  # type: ignore[valid-type]
    transaction_timeout_ms: int | None = whole(
        limits.TRANSACTION_TIMEOUT_MS,
        None,
        description="the producer's transaction.timeout.ms (lab and Kafka: 60000)",
    )


class TxnSendIn(In):
    topic: text(limits.TOPIC_NAME)  # type: ignore[valid-type]
    count: int = whole(limits.RECORDS, 1)
    key: text(limits.KEY) | None = None  # type: ignore[valid-type]
    partition: int | None = whole(limits.PARTITION, None, description="default: the producer's partitioner")


# ----------------------------------------------------------------------------- faults and the clock


class KillIn(In):
    lose_unflushed: bool = Field(False, description="also lose what the broker had not flushed to disk")


class SlowIn(In):
    delay_ms: int = whole(limits.SLOW_MS, 2000)


class IsolateIn(In):
    from_: Literal["zookeeper", "brokers", "clients"] = Field(alias="from")


class StepIn(In):
    events: int | None = whole(limits.STEP_EVENTS, None, description="run this many events; or")
    ms: int | None = whole(limits.STEP_MS, None, description="run this much virtual time")

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra=exactly_one_of(("events",), ("ms",))
    )

    @model_validator(mode="after")
    def _one(self) -> StepIn:
        if (self.events is None) == (self.ms is None):
            raise ValueError("step either some events or some ms, not both and not neither")
        return self


class SpeedIn(In):
    rate: float = Field(ge=limits.CLOCK_RATE.low, le=limits.CLOCK_RATE.high)


class ClockOut(Schema):
    time_ms: int
    rate: float
    paused: bool


class EventOut(Schema):
    seq: int
    time_ms: int
    kind: str
    text: str
    topic: str | None
    partition: int | None
    broker: int | None
    group: str | None
    data: dict[str, Any]


class EventsOut(Schema):
    events: list[EventOut]
    next: int = Field(description="the cursor for the next page: pass it as since")
    more: bool


# ----------------------------------------------------------------------------- scenarios


class ScenarioOut(Schema):
    slug: str
    name: str
    description: str
    brokers: int
    steps: int
    error: str = Field(
        "", description="why the file cannot be read (empty when it can); such a scenario cannot run"
    )


class RunIn(In):
    scenario: str | None = Field(None, max_length=100, description="a shipped scenario's slug")
    yaml: str | None = Field(None, max_length=MAX_SCENARIO_CHARS, description="or a scenario file's text")

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra=exactly_one_of(("scenario",), ("yaml",))
    )

    @model_validator(mode="after")
    def _one(self) -> RunIn:
        if (self.scenario is None) == (self.yaml is None):
            raise ValueError(
                "send either scenario (a shipped scenario's slug) or yaml (a scenario file's text)"
            )
        return self


class RunOut(Schema):
    id: str
    scenario: str
    name: str
    status: Literal["queued", "running", "passed", "failed", "error", "cancelled"]
    step: int
    steps: int
    error: str = Field(
        "", description="why it stopped early: cancelled, over its budget, or an engine failure"
    )


class CheckOut(Schema):
    what: str
    expected: Any
    actual: Any
    ok: bool


class StepOut(Schema):
    index: int
    line: int
    label: str
    ok: bool
    detail: str
    time_ms: int
    checks: list[CheckOut]


class ResultOut(RunOut):
    time_ms: int
    results: list[StepOut]


# ----------------------------------------------------------------------------- ACLs

AclResourceType = Literal["Topic", "Group", "Cluster", "TransactionalId"]
AclOperation = Literal[
    "All",
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
]


class AclIn(In):
    """One ACL, as kafka-acls.sh writes one: Kafka's names for types, operations and permissions."""

    resource_type: AclResourceType = "Topic"
    name: text(limits.ACL_RESOURCE) = Field(  # type: ignore[valid-type]
        description="a topic, group or transactional id (or a prefix of them); the Cluster's is kafka-cluster"
    )
    pattern: Literal["Literal", "Prefixed"] = "Literal"
    principal: text(limits.PRINCIPAL) = Field(description="Type:name, e.g. User:alice; User:* is everyone")  # type: ignore[valid-type]
    host: text(limits.ACL_HOST) = Field("*", description="an IP address, or * for every host")  # type: ignore[valid-type]
    operation: AclOperation
    permission: Literal["Allow", "Deny"] = "Allow"


class AclOut(Schema):
    resource_type: str
    name: str
    pattern: str
    principal: str
    host: str
    operation: str
    permission: str
    text: str = Field(description="the ACL in words")


class WhoMayOut(Schema):
    principal: str
    may: dict[str, bool] = Field(description="by operation: what the authorizer answers")
    why: dict[str, str] = Field(description="by operation: the authorizer's reason")


class AclsOut(Schema):
    acls: list[AclOut]
    enforced: bool = Field(description="whether the brokers have an authorizer (authorizer.class.name)")
    authorizer: str
    super_users: list[str]
    allow_everyone_if_no_acl_found: bool
    note: str
    topic: str | None = None
    operations: list[str] | None = None
    who_may: list[WhoMayOut] | None = Field(
        None,
        description="with ?topic=: each principal an ACL on it names (and each super user), per operation",
    )


class AclCreatedOut(Schema):
    message: str
    acl: AclOut


class AclsDeletedOut(Schema):
    message: str
    deleted: list[AclOut]
