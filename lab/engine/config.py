"""Kafka's configuration keys, with Kafka's defaults and the lab's.

Every key the engine honours is declared once here: its type, Kafka's default,
the lab's default where the lab differs (so a class can watch a failover in
seconds, not minutes), and one sentence a tooltip can show. Keys stay Kafka's
strings at the edges (``replica.lag.time.max.ms``); ``lab.*`` keys are the
lab's own knobs and say so.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from lab.engine.errors import ConfigException, InvalidConfig

Scope = Literal["broker", "listener", "topic", "producer", "consumer"]
Kind = Literal["int", "long", "bool", "double", "str", "list", "password"]
Value = int | float | bool | str | tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigKey:
    name: str
    scope: Scope
    kind: Kind
    kafka_default: str
    lab_default: str | None = None  # None: the lab uses Kafka's default
    doc: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    broker_name: str | None = None  # the broker-level key a topic key falls back to
    # An authorizer's own key (super.users), not one of KafkaConfig's: Kafka cannot tell its type, so its
    # DescribeConfigs lists it only when set, and as sensitive (no value shown).
    plugin: bool = False
    nullable: bool = False  # Kafka's default is null (no value), written "" here

    @property
    def sensitive(self) -> bool:
        """Whether DescribeConfigs hides the value, as Kafka does for passwords and keys of unknown type."""
        return self.kind == "password" or self.plugin

    @property
    def default(self) -> str:
        return self.kafka_default if self.lab_default is None else self.lab_default

    def parse(self, raw: object) -> int | float | bool | str | tuple[str, ...]:
        """The typed value of ``raw``, or InvalidConfig naming the key and what is wrong."""
        text = str(raw).strip() if not isinstance(raw, bool) else ("true" if raw else "false")
        value: int | float | bool | str | tuple[str, ...]
        if self.kind in ("int", "long"):
            try:
                value = int(text)
            except ValueError:
                raise InvalidConfig(
                    f"Invalid value {text!r} for configuration {self.name}: not a number"
                ) from None
            # Kafka's INT is 32 bits and its LONG 64: a value beyond them is not a number of that type.
            bits = 31 if self.kind == "int" else 63
            if not -(2**bits) <= value < 2**bits:
                raise InvalidConfig(
                    f"Invalid value {text!r} for configuration {self.name}: "
                    f"not a number of type {self.kind.upper()}"
                )
        elif self.kind == "double":
            try:
                value = float(text)
            except ValueError:
                raise InvalidConfig(
                    f"Invalid value {text!r} for configuration {self.name}: not a number"
                ) from None
            if not math.isfinite(value):  # nan passes every comparison with a bound
                raise InvalidConfig(f"Invalid value {text!r} for configuration {self.name}: not a number")
        elif self.kind == "bool":
            if text.lower() not in ("true", "false"):
                raise InvalidConfig(
                    f"Invalid value {text!r} for configuration {self.name}: expected true or false"
                )
            value = text.lower() == "true"
        elif self.kind == "list":
            items = tuple(part.strip() for part in text.split(",") if part.strip())
            for item in items:
                if self.choices and item not in self.choices:
                    raise InvalidConfig(
                        f"Invalid value {text!r} for configuration {self.name}: "
                        f"{item!r} is not one of {', '.join(self.choices)}"
                    )
            if not items:
                raise InvalidConfig(f"Invalid value {text!r} for configuration {self.name}: empty list")
            return items
        else:  # str, password
            if self.choices and text not in self.choices:
                raise InvalidConfig(
                    f"Invalid value {text!r} for configuration {self.name}: must be one of {', '.join(self.choices)}"
                )
            value = text
        if isinstance(value, int | float) and not isinstance(value, bool):
            if self.minimum is not None and value < self.minimum:
                raise InvalidConfig(
                    f"Invalid value {text} for configuration {self.name}: must be at least {self.minimum:g}"
                )
            if self.maximum is not None and value > self.maximum:
                raise InvalidConfig(
                    f"Invalid value {text} for configuration {self.name}: must be at most {self.maximum:g}"
                )
        return value

    # JSON values (the API's): typed as the key is, so a schema can say which values are good.

    def json_schema(self) -> dict[str, object]:
        """The JSON values this key takes, as JSON Schema: exactly what ``from_json`` accepts."""
        schema: dict[str, object]
        if self.kind in ("int", "long"):
            bits = 31 if self.kind == "int" else 63
            low, high = -(2**bits), 2**bits - 1
            if self.minimum is not None:
                low = max(low, math.ceil(self.minimum))
            if self.maximum is not None:
                high = min(high, math.floor(self.maximum))
            schema = {"type": "integer", "minimum": low, "maximum": high}
        elif self.kind == "double":
            schema = {"type": "number"}
            if self.minimum is not None:
                schema["minimum"] = self.minimum
            if self.maximum is not None:
                schema["maximum"] = self.maximum
        elif self.kind == "bool":
            schema = {"type": "boolean"}
        elif self.kind == "list":
            schema = {"type": "string", "enum": list(self._lists())}
        elif self.choices:
            schema = {"type": "string", "enum": list(self.choices)}
        else:
            schema = {"type": "string"}
        return {
            **schema,
            "description": f"{self.doc} Kafka's default: {self.kafka_default}; the lab's: {self.default}.",
        }

    def _lists(self) -> list[str]:
        """Every list of distinct choices, comma-separated (``delete``, ``compact,delete``...)."""
        out: list[str] = []
        for size in range(1, len(self.choices) + 1):
            out += [",".join(p) for p in itertools.permutations(self.choices, size)]
        return out

    def from_json(self, value: object) -> str:
        """The string Kafka stores for a JSON value, or InvalidConfig: a value of the wrong JSON type is
        refused (``"1000"`` for a number, ``1`` for true/false), then the key's own rules apply."""
        if self.kind in ("int", "long"):
            if isinstance(value, float) and value.is_integer():
                value = int(value)  # JSON has one kind of number: 5.0 is the integer 5
            ok = isinstance(value, int) and not isinstance(value, bool)
            expected = "a whole number"
        elif self.kind == "double":
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            expected = "a number"
        elif self.kind == "bool":
            ok = isinstance(value, bool)
            expected = "true or false"
        else:
            ok = isinstance(value, str)
            expected = "text"
        if not ok:
            raise InvalidConfig(f"Invalid value {value!r} for configuration {self.name}: expected {expected}")
        if self.kind == "list" and value not in self._lists():
            raise InvalidConfig(
                f"Invalid value {value!r} for configuration {self.name}: expected one of {', '.join(self._lists())}"
            )
        parsed = self.parse(value)
        if isinstance(parsed, tuple):
            return ",".join(parsed)
        return _text(parsed)


_KEYS: list[ConfigKey] = []


def _key(name: str, scope: Scope, kind: Kind, kafka_default: str, doc: str, **kw: object) -> None:
    _KEYS.append(ConfigKey(name=name, scope=scope, kind=kind, kafka_default=kafka_default, doc=doc, **kw))  # type: ignore[arg-type]


# Broker configs.
_key(
    "replica.lag.time.max.ms",
    "broker",
    "long",
    "30000",
    "A follower that has not caught up with the leader's log end for this long leaves the ISR.",
    lab_default="10000",
    minimum=1,
)
_key(
    "zookeeper.session.timeout.ms",
    "broker",
    "int",
    "18000",
    "ZooKeeper expires a broker's session, and the controller treats it as dead, after this long without contact.",
    lab_default="6000",
    minimum=1000,
    maximum=60000,
)
_key(
    "min.insync.replicas",
    "broker",
    "int",
    "1",
    "acks=all writes fail with NOT_ENOUGH_REPLICAS when the ISR is smaller than this.",
    minimum=1,
)
_key(
    "unclean.leader.election.enable",
    "broker",
    "bool",
    "false",
    "Whether an out-of-sync replica may become leader when no ISR member is alive (availability over durability).",
)
_key(
    "auto.leader.rebalance.enable",
    "broker",
    "bool",
    "true",
    "The controller moves leadership back to each partition's preferred (first) replica when brokers are imbalanced.",
)
_key(
    "leader.imbalance.check.interval.seconds",
    "broker",
    "long",
    "300",
    "How often the controller checks leader imbalance.",
    lab_default="30",
    minimum=1,
)
_key(
    "leader.imbalance.per.broker.percentage",
    "broker",
    "int",
    "10",
    "A broker leading fewer than this share of its preferred partitions triggers a preferred-leader election.",
    minimum=0,
    maximum=100,
)
_key(
    "replica.fetch.wait.max.ms",
    "broker",
    "int",
    "500",
    "How long a follower's fetch waits at the leader for new data before an empty answer.",
    minimum=0,
)
_key(
    "replica.fetch.max.bytes",
    "broker",
    "int",
    "1048576",
    "The most bytes a follower asks for per partition in one fetch.",
    minimum=1,
)
_key(
    "replica.fetch.backoff.ms",
    "broker",
    "int",
    "1000",
    "How long a follower waits before fetching again after an error.",
    minimum=0,
)
_key(
    "replica.socket.timeout.ms",
    "broker",
    "int",
    "30000",
    "How long a follower waits for a fetch answer before it gives up on that request.",
    lab_default="5000",
    minimum=1,
)
_key(
    "replica.high.watermark.checkpoint.interval.ms",
    "broker",
    "long",
    "5000",
    "How often a broker writes every partition's high watermark to replication-offset-checkpoint.",
    lab_default="1000",
    minimum=1,
)
_key(
    "log.retention.check.interval.ms",
    "broker",
    "long",
    "300000",
    "How often a broker applies retention (and compaction) to its logs.",
    lab_default="5000",
    minimum=1,
)
_key(
    "log.flush.interval.ms",
    "broker",
    "long",
    "9223372036854775807",
    "How often a log is flushed to disk; Kafka leaves durability to replication, so by default it never forces it.",
    lab_default="-1",
    minimum=-1,
)
_key(
    "request.timeout.ms",
    "broker",
    "int",
    "30000",
    "How long a broker keeps an acks=all produce waiting for the ISR before REQUEST_TIMED_OUT.",
    minimum=1,
)
_key(
    "controlled.shutdown.enable",
    "broker",
    "bool",
    "true",
    "A stopping broker first asks the controller to move its leaderships away.",
)
_key(
    "num.partitions",
    "broker",
    "int",
    "1",
    "Partitions of a topic created without a count (CreateTopics with -1, or created automatically).",
    minimum=1,
)
_key(
    "default.replication.factor",
    "broker",
    "int",
    "1",
    "Replication factor of a topic created without one (CreateTopics with -1, or created automatically).",
    minimum=1,
)
_key(
    "authorizer.class.name",
    "broker",
    "str",
    "",
    "The authorizer every request passes; empty: none (everything is allowed and ACL requests answer "
    "SECURITY_DISABLED). Kafka's ZooKeeper-mode one keeps its ACLs under /kafka-acl.",
    choices=("", "kafka.security.authorizer.AclAuthorizer"),
)
_key(
    "super.users",
    "broker",
    "str",
    "",
    "Principals the authorizer lets do anything, separated by semicolons (User:admin;User:ops). The lab's "
    "own: User:admin (its Python API, pages and simulated clients unless given another principal) and "
    "User:broker (the brokers' requests to each other, which need CLUSTER_ACTION).",
    lab_default="User:admin;User:broker",
    plugin=True,
)
_key(
    "allow.everyone.if.no.acl.found",
    "broker",
    "bool",
    "false",
    "With an authorizer: a resource no ACL names is open to everyone (true) or to no one but super users.",
    plugin=True,
)
_key(
    "auto.create.topics.enable",
    "broker",
    "bool",
    "true",
    "A client asking for the metadata of a topic that does not exist creates it (num.partitions, "
    "default.replication.factor), as Kafka does unless this is turned off.",
)
_key(
    "offsets.topic.num.partitions",
    "broker",
    "int",
    "50",
    "Partitions of __consumer_offsets; a group's coordinator leads partition hash(group) % this.",
    lab_default="5",
    minimum=1,
)
_key(
    "offsets.topic.replication.factor",
    "broker",
    "int",
    "3",
    "Replication factor of __consumer_offsets (capped at the live brokers when it is created).",
    minimum=1,
)
_key(
    "transaction.state.log.num.partitions",
    "broker",
    "int",
    "50",
    "Partitions of __transaction_state; a transactional id's coordinator leads partition "
    "hash(transactional.id) % this.",
    lab_default="5",
    minimum=1,
)
_key(
    "transaction.state.log.replication.factor",
    "broker",
    "int",
    "3",
    "Replication factor of __transaction_state (capped at the live brokers when it is created).",
    minimum=1,
)
_key(
    "transaction.state.log.min.isr",
    "broker",
    "int",
    "2",
    "min.insync.replicas of __transaction_state (capped at its replication factor).",
    minimum=1,
)
_key(
    "transaction.max.timeout.ms",
    "broker",
    "int",
    "900000",
    "The longest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it).",
    minimum=1,
)
_key(
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "broker",
    "int",
    "10000",
    "How often the transaction coordinator looks for transactions open longer than their timeout, and aborts them.",
    lab_default="1000",
    minimum=1,
)
_key(
    "group.initial.rebalance.delay.ms",
    "broker",
    "int",
    "3000",
    "How long a new group waits for more members before its first rebalance.",
    lab_default="1000",
    minimum=0,
)
_key(
    "group.min.session.timeout.ms",
    "broker",
    "int",
    "6000",
    "The shortest session timeout a consumer may ask for.",
    lab_default="1000",
    minimum=0,
)
_key(
    "group.max.session.timeout.ms",
    "broker",
    "int",
    "1800000",
    "The longest session timeout a consumer may ask for.",
    minimum=1,
)
_key(
    "lab.network.latency.ms",
    "broker",
    "int",
    "0",
    "Lab only: one-way delay of every message between brokers and clients, to watch requests travel.",
    lab_default="1",
    minimum=0,
)
_key(
    "lab.replica.fetch.pace.ms",
    "broker",
    "int",
    "0",
    "Lab only: a pause between a follower's fetches, so a class can watch the HW trail the LEO (0: fetch at once).",
    minimum=0,
)
_key(
    "lab.leader.epochs",
    "broker",
    "bool",
    "true",
    "Lab only: false brings back pre-KIP-101 truncation to the high watermark, to show its data loss.",
)
_key(
    "lab.zookeeper.latency.ms",
    "broker",
    "int",
    "0",
    "Lab only: the memory store's delay for each ZooKeeper operation (the real server has its own).",
    lab_default="1",
    minimum=0,
)

# Topic configs (a topic key without an override falls back to the broker's).
_key(
    "cleanup.policy",
    "topic",
    "list",
    "delete",
    "delete: old segments go by time or size; compact: only the latest record per key is kept.",
    choices=("delete", "compact"),
    broker_name="log.cleanup.policy",
)
_key(
    "retention.ms",
    "topic",
    "long",
    "604800000",
    "Segments whose newest record is older than this are deleted (-1: keep forever).",
    minimum=-1,
    broker_name="log.retention.ms",
)
_key(
    "retention.bytes",
    "topic",
    "long",
    "-1",
    "Old segments are deleted while a partition is bigger than this (-1: no limit).",
    minimum=-1,
    broker_name="log.retention.bytes",
)
_key(
    "segment.bytes",
    "topic",
    "int",
    "1073741824",
    "A partition rolls to a new segment file when the active one reaches this size.",
    minimum=14,
    broker_name="log.segment.bytes",
)
_key(
    "segment.ms",
    "topic",
    "long",
    "604800000",
    "A partition rolls to a new segment when the active one is this old.",
    minimum=1,
    broker_name="log.roll.ms",
)
_key(
    "index.interval.bytes",
    "topic",
    "int",
    "4096",
    "One offset-index entry is written every this many bytes of log.",
    minimum=0,
    broker_name="log.index.interval.bytes",
)
_key(
    "segment.index.bytes",
    "topic",
    "int",
    "10485760",
    "The largest an offset or time index may grow before the segment rolls.",
    minimum=4,
    broker_name="log.index.size.max.bytes",
)
_key(
    "delete.retention.ms",
    "topic",
    "long",
    "86400000",
    "How long a tombstone (a null value) survives after the cleaner first keeps it (KIP-534's delete horizon), "
    "so consumers can see the delete.",
    minimum=0,
    broker_name="log.cleaner.delete.retention.ms",
)
_key(
    "min.cleanable.dirty.ratio",
    "topic",
    "double",
    "0.5",
    "Compaction starts when this share of the log has not been compacted yet.",
    minimum=0,
    maximum=1,
    broker_name="log.cleaner.min.cleanable.ratio",
)
_key(
    "min.compaction.lag.ms",
    "topic",
    "long",
    "0",
    "A record stays uncompacted at least this long.",
    minimum=0,
    broker_name="log.cleaner.min.compaction.lag.ms",
)
_key(
    "max.message.bytes",
    "topic",
    "int",
    "1048588",
    "The largest record batch the topic accepts.",
    minimum=0,
    broker_name="message.max.bytes",
)
_key(
    "min.insync.replicas",
    "topic",
    "int",
    "1",
    "acks=all writes fail with NOT_ENOUGH_REPLICAS when the ISR is smaller than this.",
    minimum=1,
    broker_name="min.insync.replicas",
)
_key(
    "unclean.leader.election.enable",
    "topic",
    "bool",
    "false",
    "Whether an out-of-sync replica may become leader when no ISR member is alive (availability over durability).",
    broker_name="unclean.leader.election.enable",
)

# Producer configs (Kafka's ProducerConfig), the ones the lab's producers honour.
_key(
    "acks",
    "producer",
    "str",
    "all",
    "How many replicas must have a record before the leader answers: 0 (nobody answers), 1 (the leader), "
    "all (every ISR member, at least min.insync.replicas).",
    choices=("all", "-1", "0", "1"),
)
_key(
    "batch.size",
    "producer",
    "int",
    "16384",
    "The most bytes of records one batch to one partition holds; records without a key stick to a "
    "partition until this many bytes went to it (KIP-794).",
    minimum=0,
)
_key(
    "linger.ms",
    "producer",
    "long",
    "0",
    "How long a batch that is not full waits for more records before it is sent (0: send at once).",
    minimum=0,
)
_key(
    "retries",
    "producer",
    "int",
    "2147483647",
    "How many times a batch that failed with a retriable error is sent again (within delivery.timeout.ms).",
    minimum=0,
)
_key(
    "retry.backoff.ms",
    "producer",
    "long",
    "100",
    "How long the producer waits before retrying a failed batch or asking for metadata again.",
    minimum=0,
)
_key(
    "retry.backoff.max.ms",
    "producer",
    "long",
    "1000",
    "The longest wait before retrying a batch that failed again and again: retry.backoff.ms doubles with "
    "each attempt up to it, give or take 20% (KIP-580, Kafka 3.7). Below retry.backoff.ms, it is the wait "
    "every time.",
    minimum=0,
)
_key(
    "delivery.timeout.ms",
    "producer",
    "int",
    "120000",
    "The longest a record may wait for its answer, retries included, from send(); at least linger.ms + "
    "request.timeout.ms.",
    minimum=1,
)
_key(
    "request.timeout.ms",
    "producer",
    "int",
    "30000",
    "How long the producer waits for a broker's answer to one request before it gives up on it (and retries).",
    minimum=1,
)
_key(
    "max.in.flight.requests.per.connection",
    "producer",
    "int",
    "5",
    "How many produce requests may wait for an answer per broker; above 1 a retry can reorder records.",
    minimum=1,
)
_key(
    "max.block.ms",
    "producer",
    "long",
    "60000",
    "How long send() may wait for a topic's metadata before the record fails with a timeout.",
    minimum=0,
)
_key(
    "compression.type",
    "producer",
    "str",
    "none",
    "How batches are compressed: none, gzip, snappy, lz4 or zstd, as Kafka's clients write them.",
    choices=("none", "gzip", "snappy", "lz4", "zstd"),
)
_key(
    "enable.idempotence",
    "producer",
    "bool",
    "true",
    "Idempotence (Kafka's default since 3.0): the producer gets a producer id (InitProducerId) and numbers "
    "its batches per partition, so the leader drops a retry it already wrote. Needs acks=all, retries > 0 and "
    "max.in.flight.requests.per.connection <= 5; left at its default, a config that contradicts it turns it off.",
)
_key(
    "transactional.id",
    "producer",
    "str",
    "",
    "Makes the producer transactional (init_transactions, begin/commit/abort_transaction); a new producer "
    "with the same id fences the old one. Needs idempotence. None: not transactional.",
)
_key(
    "transaction.timeout.ms",
    "producer",
    "int",
    "60000",
    "How long a transaction may stay open before its coordinator aborts it (at most the broker's "
    "transaction.max.timeout.ms).",
    minimum=1,
)
_key(
    "partitioner.adaptive.partitioning.enable",
    "producer",
    "bool",
    "true",
    "Records without a key go more often to partitions whose leaders drain their batches faster (shorter queues).",
)
_key(
    "partitioner.availability.timeout.ms",
    "producer",
    "long",
    "0",
    "A partition whose leader has not taken a ready batch for this long gets no new records without a key "
    "(0: never excluded; needs adaptive partitioning).",
    minimum=0,
)
_key(
    "partitioner.ignore.keys",
    "producer",
    "bool",
    "false",
    "true: records with a key are spread like records without one, not placed by the hash of the key.",
)

# Consumer configs (Kafka's ConsumerConfig), the ones the lab's consumers honour.
_key(
    "group.id",
    "consumer",
    "str",
    "",
    "The consumer group this consumer joins (none: a consumer assigned its partitions by hand).",
)
_key(
    "group.instance.id",
    "consumer",
    "str",
    "",
    "A static member's id: it keeps its partitions across a restart within session.timeout.ms, with no "
    "rebalance (KIP-345; none: a dynamic member).",
)
_key(
    "auto.offset.reset",
    "consumer",
    "str",
    "latest",
    "Where to start without a committed offset, or when the position is out of range: earliest, latest, or "
    "none (an error).",
    choices=("earliest", "latest", "none"),
)
_key(
    "isolation.level",
    "consumer",
    "str",
    "read_uncommitted",
    "read_committed: read up to the last stable offset and drop aborted transactions' records; "
    "read_uncommitted: read up to the high watermark. Control records are never returned.",
    choices=("read_uncommitted", "read_committed"),
)
_key(
    "enable.auto.commit",
    "consumer",
    "bool",
    "true",
    "A group member commits the positions poll() returned every auto.commit.interval.ms.",
)
_key(
    "auto.commit.interval.ms",
    "consumer",
    "int",
    "5000",
    "How often a group member commits its positions when enable.auto.commit is true.",
    minimum=1,
)
_key(
    "fetch.max.wait.ms",
    "consumer",
    "int",
    "500",
    "How long a fetch waits at the leader for records below the high watermark before an empty answer.",
    minimum=0,
)
_key(
    "max.partition.fetch.bytes",
    "consumer",
    "int",
    "1048576",
    "The most bytes a fetch asks for per partition (a first batch larger than this still comes whole).",
    minimum=1,
)
_key(
    "max.poll.records",
    "consumer",
    "int",
    "500",
    "The most records one poll() returns.",
    minimum=1,
)
_key(
    "request.timeout.ms",
    "consumer",
    "int",
    "30000",
    "How long the consumer waits for a broker's answer to one request before it gives up on it.",
    minimum=1,
)
_key(
    "retry.backoff.ms",
    "consumer",
    "long",
    "100",
    "How long the consumer waits before asking again after a failed request.",
    minimum=0,
)
_key(
    "session.timeout.ms",
    "consumer",
    "int",
    "45000",
    "A member that sends no heartbeat for this long is removed from its group, which rebalances.",
    lab_default="6000",
    minimum=1,
)
_key(
    "heartbeat.interval.ms",
    "consumer",
    "int",
    "3000",
    "How often a group member tells its coordinator it is alive; lower than session.timeout.ms (a third of it, "
    "as Kafka advises).",
    lab_default="2000",
    minimum=1,
)
_key(
    "max.poll.interval.ms",
    "consumer",
    "int",
    "300000",
    "A member that does not call poll() for this long leaves its group (its processing is too slow).",
    minimum=1,
)
_key(
    "partition.assignment.strategy",
    "consumer",
    "list",
    "range,cooperative-sticky",
    "The assignors a member offers, preferred first: range, roundrobin, sticky, cooperative-sticky.",
    choices=("range", "roundrobin", "sticky", "cooperative-sticky"),
)

# What a broker's server.properties says of its listeners. The runtime that opens the sockets sets them
# (``EngineContext.listener_config``), never a person: DescribeConfigs reports them, nothing changes them.
_key(
    "listeners",
    "listener",
    "str",
    "PLAINTEXT://:9092",
    "Where the broker listens, one URI per listener (its name, which here is its security protocol, "
    "host and port).",
)
_key(
    "advertised.listeners",
    "listener",
    "str",
    "",
    "Where clients are told to connect, per listener (Metadata's answer); null: the listeners.",
    nullable=True,
)
_key(
    "listener.security.protocol.map",
    "listener",
    "str",
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "Each listener's name and its security protocol.",
)
_key(
    "sasl.enabled.mechanisms",
    "listener",
    "list",
    "GSSAPI",
    "The SASL mechanisms the SASL listeners take (the lab cannot run GSSAPI's Kerberos).",
)
_key(
    "ssl.keystore.type",
    "listener",
    "str",
    "JKS",
    "The format of the broker's certificate and key: the lab's are PEM files made with its CA.",
)
_key(
    "ssl.keystore.password",
    "listener",
    "password",
    "",
    "The keystore's password: a password, so DescribeConfigs never shows it.",
    nullable=True,
)
_key(
    "ssl.key.password",
    "listener",
    "password",
    "",
    "The private key's password: a password, so DescribeConfigs never shows it.",
    nullable=True,
)
_key(
    "sasl.jaas.config",
    "listener",
    "password",
    "",
    "JAAS login settings for SASL (a PLAIN broker's users and passwords): never shown.",
    nullable=True,
)

BROKER_KEYS: Mapping[str, ConfigKey] = {k.name: k for k in _KEYS if k.scope == "broker"}
LISTENER_KEYS: Mapping[str, ConfigKey] = {k.name: k for k in _KEYS if k.scope == "listener"}
TOPIC_KEYS: Mapping[str, ConfigKey] = {k.name: k for k in _KEYS if k.scope == "topic"}
PRODUCER_KEYS: Mapping[str, ConfigKey] = {k.name: k for k in _KEYS if k.scope == "producer"}
CONSUMER_KEYS: Mapping[str, ConfigKey] = {k.name: k for k in _KEYS if k.scope == "consumer"}
KEYS: Mapping[Scope, Mapping[str, ConfigKey]] = {
    "broker": BROKER_KEYS,
    "topic": TOPIC_KEYS,
    "producer": PRODUCER_KEYS,
    "consumer": CONSUMER_KEYS,
}


def _validate(keys: Mapping[str, ConfigKey], what: str, config: Mapping[str, object]) -> dict[str, str]:
    clean: dict[str, str] = {}
    for name, raw in config.items():
        key = keys.get(name)
        if key is None:
            raise InvalidConfig(f"Unknown {what} config name: {name}")
        value = key.parse(raw)
        clean[name] = ",".join(value) if isinstance(value, tuple) else _text(value)
    return clean


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def validate_topic_config(config: Mapping[str, object]) -> dict[str, str]:
    """Kafka's topic config keys, parsed: the string form to store, or InvalidConfig."""
    return _validate(TOPIC_KEYS, "topic", config)


def validate_broker_config(config: Mapping[str, object]) -> dict[str, str]:
    return _validate(BROKER_KEYS, "broker", config)


def _parse_all(keys: Mapping[str, ConfigKey], values: Mapping[str, str]) -> dict[str, Value]:
    return {name: keys[name].parse(raw) for name, raw in values.items() if name in keys}


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """A broker's effective configuration: the lab's defaults under the given overrides."""

    values: Mapping[str, str]
    # Parsed once: brokers read their configs on every fetch and produce.
    _parsed: Mapping[str, Value] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_parsed", _parse_all(BROKER_KEYS, self.values))

    @classmethod
    def of(cls, overrides: Mapping[str, object] | None = None) -> BrokerConfig:
        merged = {k.name: k.default for k in BROKER_KEYS.values()}
        merged.update(validate_broker_config(overrides or {}))
        return cls(merged)

    def _get(self, name: str) -> Value:
        return self._parsed[name]

    def int(self, name: str) -> int:
        value = self._get(name)
        assert isinstance(value, int)
        return value

    def bool(self, name: str) -> bool:
        value = self._get(name)
        assert isinstance(value, bool)
        return value

    def topic_default(self, topic_key: str) -> str:
        """The broker-level value a topic config falls back to."""
        key = TOPIC_KEYS[topic_key]
        if key.broker_name is not None and key.broker_name in self.values:
            return self.values[key.broker_name]
        return key.default


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """A producer's or consumer's effective configuration: the lab's defaults under what was given.

    ``given`` names the keys set explicitly (Kafka's ``originals()``): some of Kafka's checks apply
    only to a value a person chose, not to a default.
    """

    scope: Scope
    values: Mapping[str, str]
    given: frozenset[str]
    _parsed: Mapping[str, Value] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_parsed", _parse_all(KEYS[self.scope], self.values))

    def _get(self, name: str) -> Value:
        return self._parsed[name]

    def number(self, name: str) -> int:
        value = self._get(name)
        assert isinstance(value, int)
        return value

    def flag(self, name: str) -> bool:
        value = self._get(name)
        assert isinstance(value, bool)
        return value

    def text(self, name: str) -> str:
        value = self._get(name)
        assert isinstance(value, str)
        return value

    def names(self, name: str) -> tuple[str, ...]:
        value = self._get(name)
        assert isinstance(value, tuple)
        return value


def _client_config(scope: Scope, given: Mapping[str, object]) -> ClientConfig:
    keys = KEYS[scope]
    clean: dict[str, str] = {}
    for name, raw in given.items():
        key = keys.get(name)
        if key is None:
            # Kafka's clients only log "supplied but isn't a known config"; the lab says so at once.
            raise ConfigException(
                f"Unknown {scope} config name: {name} (the lab's {scope}s honour {', '.join(keys)})"
            )
        try:
            value = key.parse(raw)
        except InvalidConfig as error:
            raise ConfigException(error.message) from None
        clean[name] = ",".join(value) if isinstance(value, tuple) else _text(value)
    values = {key.name: key.default for key in keys.values()}
    values.update(clean)
    return ClientConfig(scope, values, frozenset(clean))


def producer_config(given: Mapping[str, object]) -> ClientConfig:
    """Kafka's ProducerConfig: every value parsed, then the checks Kafka makes when a producer is made.

    ConfigException (INVALID_CONFIG) with Kafka's message when a check fails.
    """
    config = _client_config("producer", given)
    if config.flag("enable.idempotence"):
        # ProducerConfig.postProcessAndValidateIdempotenceConfigs (Kafka 3.2+): asked for explicitly,
        # idempotence refuses what contradicts it; left at its default, it is turned off instead.
        conflicts = []
        if config.number("retries") == 0:
            conflicts.append("Must set retries to non-zero when using the idempotent producer.")
        if config.text("acks") not in ("all", "-1"):
            conflicts.append(
                "Must set acks to all in order to use the idempotent producer. "
                "Otherwise we cannot guarantee idempotence."
            )
        if config.number("max.in.flight.requests.per.connection") > 5:
            conflicts.append(
                "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer."
            )
        if conflicts and ("enable.idempotence" in config.given or config.text("transactional.id")):
            raise ConfigException(conflicts[0])
        if conflicts:
            config = ClientConfig("producer", {**config.values, "enable.idempotence": "false"}, config.given)
    if config.text("transactional.id") and not config.flag("enable.idempotence"):
        # ProducerConfig: a transactional producer is an idempotent one.
        raise ConfigException("Cannot set a transactional.id without also enabling idempotence.")
    # KafkaProducer.configureDeliveryTimeout: refused when chosen, raised to the sum when defaulted.
    linger_and_request = min(config.number("linger.ms") + config.number("request.timeout.ms"), 2**31 - 1)
    if config.number("delivery.timeout.ms") < linger_and_request:
        if "delivery.timeout.ms" in config.given:
            raise ConfigException(
                "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
            )
        config = ClientConfig(
            "producer",
            {**config.values, "delivery.timeout.ms": str(linger_and_request)},
            config.given,
        )
    return config


def consumer_config(given: Mapping[str, object]) -> ClientConfig:
    """Kafka's ConsumerConfig: every value parsed, then the checks Kafka makes when a consumer is made."""
    config = _client_config("consumer", given)
    if (
        not config.text("group.id")
        and "enable.auto.commit" in config.given
        and config.flag("enable.auto.commit")
    ):
        # ConsumerConfig.maybeOverrideEnableAutoCommit (InvalidConfigurationException).
        raise ConfigException(
            "enable.auto.commit cannot be set to true when default group id (null) is used."
        )
    return config


def effective_topic_config(overrides: Mapping[str, str], broker: BrokerConfig) -> dict[str, str]:
    """Every topic key's value: the topic's override, else the broker's value, else the default."""
    return {name: overrides.get(name, broker.topic_default(name)) for name in TOPIC_KEYS}


def describe(keys: Mapping[str, ConfigKey]) -> list[dict[str, str]]:
    """Rows for the pages: key, the lab's value beside Kafka's, and what it does."""
    return [
        {"name": k.name, "lab": k.default, "kafka": k.kafka_default, "doc": k.doc, "scope": k.scope}
        for k in keys.values()
    ]


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.engine.config [SCOPE ...]``: every config the engine honours, the lab's default beside Kafka's."""
    import sys

    scopes = argv if argv is not None else sys.argv[1:]
    unknown = [s for s in scopes if s not in KEYS]
    if unknown:
        print(f"unknown scope {unknown[0]!r}; the scopes are {', '.join(KEYS)}", file=sys.stderr)
        return 2
    for scope, keys in KEYS.items():
        if scopes and scope not in scopes:
            continue
        rows = [(r["name"], r["lab"] or "(none)", r["kafka"] or "(none)", r["doc"]) for r in describe(keys)]
        widths = [max(len(row[i]) for row in [("name", "lab", "Kafka", ""), *rows]) for i in range(3)]
        print(f"{scope} configs ({len(rows)})")
        for row in [("name", "lab", "Kafka", "what it does"), *rows]:
            print(
                "  "
                + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
                + "  "
                + row[3]
            )
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
