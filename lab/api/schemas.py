"""What the API reads and writes. Inputs refuse unknown fields, so a typo is a 400 naming it, not a silent default."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from lab.engine.config import BROKER_KEYS, TOPIC_KEYS
from lab.scenarios.yamlsafe import MAX_CHARS as MAX_SCENARIO_CHARS

MAX_BROKERS = 12
MAX_PARTITIONS = 32
MAX_RECORDS = 1000
MAX_KEY = 10_000
MAX_VALUE = 100_000
MAX_NAME = 249  # Kafka's longest topic name; group ids and lab names are held to it too
# The characters of a legal topic name: an existing topic is named with them (creating one with others
# gets Kafka's INVALID_TOPIC_EXCEPTION from the engine, in Kafka's words).
TOPIC_PATTERN = r"^[a-zA-Z0-9._-]+$"

ConfigValue = str | int | float | bool


def _config_field(keys: Any, what: str) -> Any:
    """A config mapping whose documented keys are Kafka's (the engine checks keys and values: INVALID_CONFIG)."""
    return Field(
        default_factory=dict,
        description=f"{what} config overrides, by Kafka's key",
        json_schema_extra={"propertyNames": {"enum": sorted(keys)}},
    )


class In(Schema):
    # Strict: JSON's false is not the number 0 and "3" is not 3; a field nobody declared is a typo.
    model_config = ConfigDict(extra="forbid", strict=True)


# ----------------------------------------------------------------------------- who


class MeOut(Schema):
    username: str
    role: str
    token: str = Field(description="the prefix of the token this request used")


class MessageOut(Schema):
    message: str


# ----------------------------------------------------------------------------- labs


class LabIn(In):
    name: str = Field(
        min_length=1, max_length=100, description="shown on the lab's page; its slug comes from it"
    )
    brokers: int = Field(3, ge=1, le=MAX_BROKERS)
    config: dict[str, ConfigValue] = _config_field(BROKER_KEYS, "broker")
    owner: str | None = Field(
        None, max_length=150, description="instructors only: make the lab for this user (a student)"
    )


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


class LabDetailOut(LabOut):
    snapshot: dict[str, Any]


# ----------------------------------------------------------------------------- topics


class TopicIn(In):
    name: str = Field(min_length=1, max_length=MAX_NAME)
    partitions: int = Field(1, ge=1, le=MAX_PARTITIONS)
    replication_factor: int = Field(1, ge=1, le=MAX_BROKERS)
    config: dict[str, ConfigValue] = _config_field(TOPIC_KEYS, "topic")


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
        "log_end_offset, leader_epoch, online, role"
    )


class TopicOut(Schema):
    name: str
    partitions: list[PartitionOut]
    reassigning: dict[str, list[int]]
    configs: list[ConfigOut]


class ConfigPatchIn(In):
    set: dict[str, ConfigValue] = _config_field(TOPIC_KEYS, "topic")
    remove: list[str] = Field(default_factory=list, max_length=100, description="overrides to drop, by key")


class PartitionsIn(In):
    total: int = Field(ge=1, le=MAX_PARTITIONS, description="the partition count to grow to")


class ReassignIn(In):
    plan: dict[str, list[int]] = Field(
        description='{"0": [1, 2, 3], ...}: the new replica list of each partition, by partition number',
        json_schema_extra={"propertyNames": {"pattern": "^[0-9]{1,4}$"}},
        max_length=MAX_PARTITIONS,
    )


class ElectIn(In):
    partitions: list[int] | None = Field(None, max_length=MAX_PARTITIONS, description="default: every one")


# ----------------------------------------------------------------------------- records


class RecordIn(In):
    key: str | None = Field(None, max_length=MAX_KEY)
    value: str | None = Field(None, max_length=MAX_VALUE)
    partition: int | None = Field(None, ge=0, le=MAX_PARTITIONS, description="default: the partitioner picks")


class ProduceIn(In):
    records: list[RecordIn] = Field(min_length=1, max_length=MAX_RECORDS)
    acks: Literal["0", "1", "all"] = "all"
    retries: int | None = Field(
        None,
        ge=0,
        le=2_147_483_647,
        description="the producer's retries (Kafka's default: 2147483647, until delivery.timeout.ms); "
        "0 shows a retriable error such as NOT_ENOUGH_REPLICAS at once",
    )


class SendResult(Schema):
    status: Literal["acknowledged", "failed", "sent", "pending"] = Field(
        description="sent: acks=0, no answer comes; pending: no answer yet (the clock may be paused)"
    )
    partition: int | None = None
    offset: int | None = None
    error: str | None = None
    message: str | None = None


class ProduceOut(Schema):
    acks: str
    records: list[SendResult]


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
    group: str = Field(min_length=1, max_length=MAX_NAME)
    partition: int | None = Field(None, ge=0, le=MAX_PARTITIONS, description="default: every partition")
    limit: int = Field(100, ge=1, le=MAX_RECORDS)
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
    topic: str = Field(min_length=1, max_length=MAX_NAME, pattern=TOPIC_PATTERN)
    to: Literal["earliest", "latest", "offset", "timestamp"]
    offset: int | None = Field(None, ge=0, description="with to=offset")
    timestamp: int | None = Field(None, ge=0, description="with to=timestamp: ms since the epoch, virtual")
    partitions: list[int] | None = Field(None, max_length=MAX_PARTITIONS, description="default: every one")


class ResetOut(Schema):
    group: str
    offsets: dict[str, int]


# ----------------------------------------------------------------------------- faults and the clock


class KillIn(In):
    lose_unflushed: bool = Field(False, description="also lose what the broker had not flushed to disk")


class SlowIn(In):
    delay_ms: int = Field(2000, ge=1, le=60_000)


class IsolateIn(In):
    from_: Literal["zookeeper", "brokers", "clients"] = Field(alias="from")


class StepIn(In):
    events: int | None = Field(None, ge=1, le=1000)
    ms: int | None = Field(None, ge=1, le=60_000)


class SpeedIn(In):
    rate: float = Field(ge=0.1, le=10.0)


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
