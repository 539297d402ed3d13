"""Producer and Consumer: Kafka's clients, as engine actors on the virtual clock.

They talk to brokers only through the network, with the protocol's requests,
and know the cluster only through metadata they ask a broker for, so they are
wrong in the ways real clients are wrong (a stale leader, a lost ack, a retry
that writes twice).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any, NamedTuple, Protocol

from lab.engine import errors
from lab.engine.acl import LAB_CONTEXT
from lab.engine.config import consumer_config, producer_config
from lab.engine.control_records import marker_of
from lab.engine.errors import (
    IllegalArgument,
    IllegalState,
    KafkaError,
    KafkaTimeout,
    NoOffsetForPartition,
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
)
from lab.engine.events import Journal
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.ledger import Ledger
from lab.engine.network import Endpoint, Envelope, Network
from lab.engine.partitioner import StickyPartitioner, load_stats, partition_for_key
from lab.engine.protocol import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    ProduceRequest,
    ProduceResponse,
    TopicMetadata,
)
from lab.engine.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchBuilder,
    Compression,
    decode_records,
    iter_headers,
    record_size,
)
from lab.engine.scheduler import Scheduler, Timer
from lab.engine.storage.producer_state import BATCHES_TO_RETAIN, increment_sequence
from lab.engine.tasks import _UNSET, Pending
from lab.engine.txn_client import TransactionManager

# ---------------------------------------------------------------------------- shared


class ClientHost(Protocol):
    """What a client needs from the cluster it runs in."""

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def network(self) -> Network: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def ledger(self) -> Ledger: ...

    def bootstrap_brokers(self) -> list[BrokerId]: ...

    def run_until_true(self, predicate: Callable[[], bool], timeout_ms: int) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int  # -1 with acks=0: nobody told the producer
    timestamp: int


class ConsumerRecord(NamedTuple):
    """What poll() returns. A NamedTuple, not a dataclass: a consumer makes one per record."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _bytes(value: bytes | str | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode()


RECONNECT_BACKOFF_MS = 50  # Kafka's reconnect.backoff.ms
UNKNOWN_TOPIC_BACKOFF_MS = 500


class _Metadata:
    """A client's view of the cluster: refreshed from any broker that answers."""

    def __init__(self, client: _Client) -> None:
        self._client = client
        self.topics: dict[str, tuple[PartitionMetadata, ...]] = {}
        self.unknown: set[str] = set()
        self.wanted: set[str] = set()
        self._in_flight = False
        self._stale = True
        self._next_ms = 0
        self._failed_until: dict[BrokerId, int] = {}
        self.waiters: list[Callable[[], None]] = []
        self.version = 0  # counts the answers taken in, so a producer knows when to look again
        self._topic_ids: dict[str, str | None] = {}

    def _newest(self, topic: TopicMetadata) -> tuple[PartitionMetadata, ...]:
        """KIP-320: a broker that has not heard of a newer leader yet (it was paused, or cut off)
        must not send the client back to the leader that was replaced. As Kafka's Metadata does, a
        partition keeps what the client knew when that had the newer leader epoch, unless the topic
        was re-created (another topic id: its epochs start again)."""
        old = self.topics.get(topic.name)
        if not old or self._topic_ids.get(topic.name) != topic.topic_id:
            return topic.partitions
        known = {pm.partition: pm for pm in old}
        return tuple(
            known[pm.partition]
            if pm.partition in known and known[pm.partition].leader_epoch > pm.leader_epoch
            else pm
            for pm in topic.partitions
        )

    def leader_epoch(self, tp: TopicPartition) -> int:
        """The newest leader epoch the client knows for ``tp`` (-1: none), for fetches to fence with."""
        pm = self.partition(tp)
        return pm.leader_epoch if pm is not None else -1

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        """What the client knows of ``tp`` (its leader, the leader's epoch), None while nothing."""
        for pm in self.topics.get(tp.topic, ()):
            if pm.partition == tp.partition:
                return pm
        return None

    def leader(self, tp: TopicPartition) -> BrokerId | None:
        pm = self.partition(tp)
        return pm.leader if pm is not None and pm.leader >= 0 else None

    def partition_count(self, topic: str) -> int | None:
        parts = self.topics.get(topic)
        return len(parts) if parts else None

    def available(self, topic: str) -> list[int]:
        """The topic's partitions that have a leader (Kafka's availablePartitionsForTopic)."""
        return [pm.partition for pm in self.topics.get(topic, ()) if pm.leader >= 0]

    def need(self, topics: Iterable[str] = ()) -> None:
        """Mark stale and ask again (soon, with backoff)."""
        self.wanted |= set(topics)
        self._stale = True
        self._maybe_request()

    def _maybe_request(self) -> None:
        client = self._client
        if self._in_flight or not self._stale or client.closed:
            return
        now = client.scheduler.now_ms
        if now < self._next_ms:
            client.scheduler.call_at(self._next_ms, self._maybe_request, label=f"{client.client_id} metadata")
            return
        # Kafka's leastLoadedNode, of the brokers whose metadata answer did not just fail.
        brokers = [b for b in client.host.bootstrap_brokers() if self._failed_until.get(b, 0) <= now]
        if not brokers:
            retry_at = min(self._failed_until.values(), default=now + client.retry_backoff_ms)
            client.scheduler.call_at(retry_at, self._maybe_request, label=f"{client.client_id} metadata")
            return
        broker = client.endpoint.least_loaded(brokers, client.scheduler.rng)
        self._in_flight = True
        client.endpoint.request(
            broker,
            MetadataRequest(topics=tuple(sorted(self.wanted)) or None),
            lambda response: self._on_response(broker, response),
            timeout_ms=client.request_timeout_ms,
        )

    def _on_response(self, broker: BrokerId, response: Any) -> None:
        self._in_flight = False
        client = self._client
        if isinstance(response, KafkaError) or not isinstance(response, MetadataResponse):
            self._failed_until[broker] = client.scheduler.now_ms + RECONNECT_BACKOFF_MS
            self._maybe_request()
            return
        self._next_ms = client.scheduler.now_ms + client.retry_backoff_ms
        self._stale = False
        self.version += 1
        client._metadata_changed()
        for name, topic in response.topics.items():
            if topic.error == TopicAuthorizationFailed.name:
                client._topic_denied(name)  # Kafka's clients fail what waits for it at once
                self.topics.pop(name, None)
            elif topic.error == UnknownTopicOrPartition.name:
                self.unknown.add(name)
                self.topics.pop(name, None)
                self._topic_ids.pop(name, None)
                # It may exist by now on another broker, or soon: look again (a little later).
                self._stale = True
                self._next_ms = client.scheduler.now_ms + max(
                    client.retry_backoff_ms, UNKNOWN_TOPIC_BACKOFF_MS
                )
            else:
                self.unknown.discard(name)
                self.topics[name] = self._newest(topic)
                self._topic_ids[name] = topic.topic_id
                if any(p.leader < 0 for p in topic.partitions):
                    self._stale = True  # a partition without a leader: look again after the backoff
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            waiter()
        if self._stale:
            self._maybe_request()


class _Client:
    """Plumbing shared by producers and consumers: identity, endpoint, metadata."""

    def __init__(
        self, host: ClientHost, client_id: str, *, request_timeout_ms: int, retry_backoff_ms: int
    ) -> None:
        self.host = host
        self.client_id = client_id
        self.scheduler = host.scheduler
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.closed = False
        # Its requests carry the lab's super user unless the cluster gives it another principal.
        self.endpoint = Endpoint(
            host.network, host.scheduler, client_id, self._no_requests, context=LAB_CONTEXT
        )
        self.metadata = _Metadata(self)

    @property
    def principal(self) -> str:
        """Who this client's requests come from (``User:alice``), for the broker's authorizer."""
        return (self.endpoint.context or LAB_CONTEXT).principal

    def _no_requests(self, env: Envelope) -> None:
        """Clients serve nothing."""

    def _metadata_changed(self) -> None:
        """New metadata came in (before whoever waited for it hears)."""

    def _topic_denied(self, topic: str) -> None:
        """The broker said TOPIC_AUTHORIZATION_FAILED for ``topic``'s metadata."""

    def _close_endpoint(self) -> None:
        self.closed = True
        self.endpoint.close()


def _int(config: Mapping[str, str], key: str, minimum: int = 0) -> int:
    try:
        value = int(config[key])
    except ValueError:
        raise IllegalArgument(f"{key} must be a number, not {config[key]!r}") from None
    if value < minimum:
        raise IllegalArgument(f"{key} must be at least {minimum}, not {value}")
    return value


# ---------------------------------------------------------------------------- producer


class _BatchResult(Pending[int]):
    """A batch's one answer, its base offset (-1 when nobody says: acks=0) or its error, which every
    record's future reads; and what those futures need besides: the partition and the timestamps."""

    __slots__ = ("timestamps", "tp")

    def __init__(self, tp: TopicPartition | None, timestamps: list[int]) -> None:
        super().__init__()
        self.tp = tp
        self.timestamps = timestamps


class _ProducerBatch(BatchBuilder):
    """A batch in the accumulator (Kafka's ProducerBatch): its records, kept as given and encoded
    once when it is first sent, and its one answer."""

    __slots__ = (
        "attempts",
        "created_ms",
        "data",
        "fast_left",
        "fast_length",
        "fast_now",
        "fast_size",
        "fast_taken",
        "full",
        "renumber",
        "result",
        "retry_at_ms",
        "tp",
    )

    def __init__(
        self, tp: TopicPartition, created_ms: int, batch_size: int, compression: Compression
    ) -> None:
        super().__init__(batch_size=batch_size, compression=compression)
        self.tp = tp
        self.created_ms = created_ms
        self.result = _BatchResult(tp, self.timestamps)
        self.data: bytes | None = None
        self.attempts = 0
        self.retry_at_ms = 0
        self.full = False
        # The epoch and sequence it had when OUT_OF_ORDER_SEQUENCE_NUMBER took its sequence away,
        # until it goes out numbered again (journaled then, old -> new).
        self.renumber: tuple[int, int] | None = None
        # While send() appends alike records without _append (Producer._arm): their value length and
        # time, the bytes each takes, how many more may come so, and how many it was armed for. Their
        # values go in at once, their timestamps (all fast_now) and counts when that stops (_settle_fast).
        self.fast_length = self.fast_now = self.fast_size = self.fast_left = self.fast_taken = 0

    @property
    def sealed(self) -> bool:
        """No more records fit: it is full, or it was sent already (a retry)."""
        return self.full or self.data is not None


class FutureRecordMetadata(Pending[RecordMetadata]):
    """What ``send`` returns: one record's place in its batch (Kafka's FutureRecordMetadata).

    It holds its batch's answer and its index in the batch, nothing more: answering a batch costs
    the same for one record as for a thousand, and the RecordMetadata is made when someone asks
    (then kept, in the fields a Pending has). ``send`` makes one without ``__init__``: those fields
    stay unset until the answer is taken in (``_settle``), and every method reads the batch's
    answer until then. A record still waiting for its topic's metadata has an answer of its own,
    which only fails (max.block.ms); once placed, it reads its batch's.
    """

    __slots__ = ("_index", "_result")

    _result: _BatchResult | None  # None once settled
    _index: int

    @classmethod
    def _of(cls, result: _BatchResult, index: int) -> FutureRecordMetadata:
        future = _new(cls)
        future._result = result
        future._index = index
        return future

    def _join(self, batch: _ProducerBatch, index: int) -> None:
        """A waiting record placed in a batch: the callbacks it was given move to the batch's answer."""
        waiting = self._result
        assert waiting is not None
        self._result = batch.result
        self._index = index
        for callback in waiting._callbacks or ():
            batch.result.add_done_callback(callback)

    def _settle(self) -> bool:
        """Take the batch's answer once there is one; True when this record has its answer."""
        result = self._result
        if result is None:
            return True
        if not result.done():
            return False
        self._callbacks = None
        self._error = result.failed_with()
        self._value = _UNSET
        if self._error is None:
            tp = result.tp
            assert tp is not None  # only a batch's answer succeeds
            base = result.result()
            self._value = RecordMetadata(
                topic=tp.topic,
                partition=tp.partition,
                offset=-1 if base < 0 else base + self._index,
                timestamp=result.timestamps[self._index],
            )
        self._result = None
        return True

    def done(self) -> bool:
        return self._settle()

    def failed_with(self) -> BaseException | None:
        return self._error if self._settle() else None

    def result(self) -> RecordMetadata:
        if not self._settle():
            raise IllegalState("not done yet: advance the cluster (run_for) until done() is true")
        return super().result()

    def exception(self) -> BaseException | None:
        if not self._settle():
            raise IllegalState("not done yet")
        return self._error

    def resolve(self, value: RecordMetadata) -> None:
        raise IllegalState("a record's future is answered by its batch")

    def fail(self, error: BaseException) -> None:
        result = self._result
        if result is not None and result.tp is None:  # still waiting for metadata: its own answer
            result.fail(error)
        else:
            raise IllegalState("a record's future is answered by its batch")

    def add_done_callback(self, callback: Callable[[Pending[RecordMetadata]], None]) -> None:
        result = self._result
        if result is None:
            super().add_done_callback(callback)
        else:
            result.add_done_callback(lambda _: callback(self))

    def __repr__(self) -> str:
        if not self._settle():
            return "<FutureRecordMetadata pending>"
        return super().__repr__()


def _waiting_future(timestamp: int) -> FutureRecordMetadata:
    """The future of a record whose topic has no metadata yet: in no batch, with an answer of its own."""
    return FutureRecordMetadata._of(_BatchResult(None, [timestamp]), 0)


_new = object.__new__
_SMALL = 4096  # timestamp deltas send() appends records at on its own: a varint of two bytes at most


@dataclass(slots=True, eq=False)
class _TopicInfo:
    """A topic as the producer's accumulator holds it (Kafka's TopicInfo): a queue of batches per partition."""

    sticky: StickyPartitioner
    metadata_version: int = -1  # the metadata these lists were grown from
    tps: list[TopicPartition] = field(default_factory=list)
    queues: list[deque[_ProducerBatch]] = field(default_factory=list)
    # Per partition, its last batch while records still fit in it (Kafka: all batches full when None).
    open: list[_ProducerBatch | None] = field(default_factory=list)
    used: set[int] = field(default_factory=set)  # partitions that have had a batch (adaptive needs them all)


# topic, key, value, partition, timestamp, its future, when it was sent
_Waiting = tuple[str, bytes | None, bytes | None, int | None, int, FutureRecordMetadata, int]


class Producer(_Client):
    """``send`` returns a future (a ``Pending``) that resolves to RecordMetadata or a Kafka error."""

    def __init__(self, host: ClientHost, client_id: str, config: Mapping[str, object] | None = None) -> None:
        settings = producer_config(config or {})
        super().__init__(
            host,
            client_id,
            request_timeout_ms=settings.number("request.timeout.ms"),
            retry_backoff_ms=settings.number("retry.backoff.ms"),
        )
        self.settings = settings
        self.config = dict(settings.values)
        self.retry_backoff_max_ms = settings.number("retry.backoff.max.ms")
        # Its own draws for the backoff's jitter, so that retries leave the cluster's random choices alone.
        self._jitter = Random(f"{self.scheduler.seed}:{client_id}:retry.backoff")
        acks = settings.text("acks")
        self.acks = -1 if acks in ("all", "-1") else int(acks)
        # As KafkaProducer: batch.size 0 means one record a batch.
        self.batch_size = max(1, settings.number("batch.size"))
        self.linger_ms = settings.number("linger.ms")
        self.retries = settings.number("retries")
        self.delivery_timeout_ms = settings.number("delivery.timeout.ms")
        self.max_in_flight = settings.number("max.in.flight.requests.per.connection")
        self.max_block_ms = settings.number("max.block.ms")
        self.compression = Compression[settings.text("compression.type").upper()]
        self.adaptive = settings.flag("partitioner.adaptive.partitioning.enable")
        self.availability_timeout_ms = settings.number("partitioner.availability.timeout.ms")
        self.ignore_keys = settings.flag("partitioner.ignore.keys")
        self._topics: dict[str, _TopicInfo] = {}
        self._fast: dict[str, _ProducerBatch] = {}  # per topic, the batch send() appends to itself
        self._waiting: list[_Waiting] = []
        self._in_flight: dict[BrokerId, int] = {}
        # Per leader, when it last had a batch ready and when it last took one (Kafka's NodeLatencyStats).
        self._ready_ms: dict[BrokerId, int] = {}
        self._drain_ms: dict[BrokerId, int] = {}
        self._wakeup: Timer | None = None
        self._flushing = False
        self._drained: Pending[None] | None = None  # a commit or abort waiting for every answer
        self._sent_count = 0  # records send() took, but for those it appended on its own since _arm
        self.acked = 0
        self.failed = 0
        self.retried = 0
        self.topics: list[str] = []  # the topics it has written to, in the order it first did
        self._unacknowledged_by_design = 0  # acks=0: answered at once, never acknowledged
        # Idempotence (Kafka's TransactionManager for a producer without transactional.id): the id and
        # epoch InitProducerId gave, and per partition the next sequence, the last one acknowledged and
        # the base sequences sent but not answered for good (in flight, or waiting to be retried).
        self.idempotent = settings.flag("enable.idempotence")
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self._init_in_flight = False
        self._init_attempts = 0
        self._next_sequence: dict[TopicPartition, int] = {}
        self._last_acked_sequence: dict[TopicPartition, int] = {}
        self._unresolved: dict[TopicPartition, list[int]] = {}
        # Per partition, the batches in flight by base sequence: the leader and the request carrying them.
        self._sent: dict[TopicPartition, dict[int, tuple[BrokerId, int]]] = {}
        # A batch with a sequence failed for good: what follows it would be out of sequence, so once
        # nothing is unresolved the producer bumps its epoch and numbers from 0 again (KIP-360).
        self._epoch_bump_needed = False
        self._bump_reason = ""  # why the bump is due, in the journal's words
        # Transactions (transactional.id): Kafka's TransactionManager with its coordinator (txn_client.py).
        transactional_id = settings.text("transactional.id")
        self.txn: TransactionManager | None = (
            TransactionManager(self, transactional_id, settings.number("transaction.timeout.ms"))
            if transactional_id
            else None
        )

    # API

    def send(
        self,
        topic: str,
        value: bytes | str | None = None,
        *,
        key: bytes | str | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> FutureRecordMetadata:
        # The common record, alike the one before it (no key, partition or timestamp, a value of
        # the same length, at the same time) while its batch has room and no switch of partition
        # is due: appended without _append, which armed this (_arm). What it would do, in bulk.
        batch = self._fast.get(topic)
        if (
            batch is not None
            and key is None
            and partition is None
            and timestamp is None
            and value.__class__ is bytes
            and len(value) == batch.fast_length
        ):
            now = self.scheduler.now_ms
            left = batch.fast_left
            if left and now == batch.fast_now:
                batch.fast_left = left - 1
                values = batch.values
                future = _new(FutureRecordMetadata)
                future._result = batch.result
                future._index = len(values)
                values.append(value)  # its timestamp, ``now``, and its count come in bulk (_settle_fast)
                return future
        if self.closed:
            raise IllegalState(f"producer {self.client_id} is closed")
        if self.txn is not None:
            self.txn.check_send()
        if value is not None and value.__class__ is not bytes:
            value = _bytes(value)
        now = self.scheduler.now_ms
        self._sent_count += 1
        if key is not None and key.__class__ is not bytes:
            key = _bytes(key)
        if topic not in self.topics:
            self.topics.append(topic)
        stamp = now if timestamp is None else timestamp
        placed = self._append(topic, key, value, partition, stamp)
        if placed is None:
            placed = _waiting_future(stamp)
            waiting = self._waiting
            # One waiter while any record waits (_place_waiting keeps itself registered while some
            # remain), one max.block.ms timer per moment records were sent at.
            if not waiting:
                self.metadata.waiters.append(self._place_waiting)
            if not waiting or waiting[-1][6] != now:
                self.scheduler.call_later(
                    self.max_block_ms, self._expire_waiting, label=f"{self.client_id} max.block.ms"
                )
            waiting.append((topic, key, value, partition, stamp, placed, now))
            self.metadata.need([topic])
        return placed

    def flush(self, timeout_ms: int = 120_000) -> bool:
        """Send everything now and drive the clock until every send has an answer."""
        self._flushing = True
        self._kick(0)
        try:
            return self.host.run_until_true(lambda: self.unanswered == 0, timeout_ms)
        finally:
            self._flushing = False

    def close(self) -> None:
        if not self.closed:
            self._settle_fast()
            self._close_endpoint()
            Scheduler.cancel(self._wakeup)
            self._maybe_drained()

    @property
    def sent(self) -> int:
        """Records given to send()."""
        return self._sent_count + sum(batch.fast_taken - batch.fast_left for batch in self._fast.values())

    @property
    def unanswered(self) -> int:
        """Records sent that have neither succeeded nor failed yet."""
        return self.sent - self.acked - self.failed - self._unacknowledged_by_design

    def until_drained(self) -> Pending[None]:
        """Resolved once every record sent has its answer (or the producer closed): a transaction's
        commit or abort waits for it, woken by the answers rather than looking again and again."""
        if self._drained is None or self._drained.done():
            self._drained = Pending()
        self._maybe_drained()
        return self._drained

    def _maybe_drained(self) -> None:
        drained = self._drained
        if drained is not None and (self.closed or self.unanswered == 0):
            self._drained = None
            drained.resolve(None)

    # Placing records in batches (Kafka's RecordAccumulator.append).

    def _topic(self, topic: str) -> _TopicInfo | None:
        """The topic's queues, grown when it gained partitions; None while its metadata is unknown."""
        info = self._topics.get(topic)
        count = self.metadata.partition_count(topic)
        if count is None:
            return None
        if info is None:
            info = self._topics[topic] = _TopicInfo(StickyPartitioner(self.scheduler.rng, self.batch_size))
        info.metadata_version = self.metadata.version
        for partition in range(len(info.tps), count):
            info.tps.append(TopicPartition(topic, partition))
            info.queues.append(deque())
            info.open.append(None)
        return info

    def _append(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: int,
        waiting: FutureRecordMetadata | None = None,
    ) -> FutureRecordMetadata | None:
        """Put a record in its partition's open batch (a new one when it does not fit): its future
        (``waiting``'s, if it was waiting), None without metadata."""
        if self._fast:
            self._settle_fast()
        info = self._topics.get(topic)
        if info is None or info.metadata_version != self.metadata.version:
            info = self._topic(topic)
            if info is None:
                return None
        total = len(info.tps)
        sticky = None
        if partition is not None:
            if not 0 <= partition < total:
                future = waiting or _waiting_future(timestamp)
                future.fail(
                    UnknownTopicOrPartition(
                        f"{topic} has {total} partitions; there is no partition {partition}"
                    )
                )
                self.failed += 1
                return future
            chosen = partition
        elif key is not None and not self.ignore_keys:
            chosen = partition_for_key(key, total)
        else:
            sticky = info.sticky
        while True:
            if sticky is not None:
                chosen = sticky.partition
                if chosen < 0 or chosen >= total:
                    chosen = sticky.switch(self.metadata.available(topic), total)
                elif info.open[chosen] is None and sticky.produced_bytes >= sticky.batch_size:
                    # Kafka's partitionChanged: a switch put off while the partition's last batch
                    # had room happens once no batch of it takes records (it filled, or left).
                    sticky.update(0, all_batches_full=True)
                    continue
            batch = info.open[chosen]
            if batch is not None:
                appended = batch.try_append(key, value, timestamp_ms=timestamp)
                if appended:
                    break
                self._close(info, chosen)
                if sticky is not None:
                    continue  # its batch is full now: maybe the moment to switch
            batch = self._new_batch(info, chosen)
            appended = batch.try_append(key, value, timestamp_ms=timestamp)
            break
        index = len(batch.values) - 1
        if waiting is None:
            future = FutureRecordMetadata._of(batch.result, index)
        else:
            future = waiting
            future._join(batch, index)
        if batch.size_in_bytes >= self.batch_size:
            self._close(info, chosen)  # exactly full (or batch.size 0): nothing more fits
        if sticky is not None:
            sticky.update(appended, all_batches_full=info.open[chosen] is None)
            if sticky.partition == chosen and info.open[chosen] is batch and value is not None:
                self._arm(topic, batch, sticky, value, timestamp)
        if self.acks == 0:
            self._unacknowledged_by_design += 1
        return future

    # send() on its own (Kafka's client does this in Java: the lab keeps its Python small).

    def _arm(
        self, topic: str, batch: _ProducerBatch, sticky: StickyPartitioner, value: bytes, timestamp: int
    ) -> None:
        """Let send() append records alike ``value`` to ``batch`` itself while nothing _append would
        do differently can happen: each takes the same bytes (the same length, time, and size of
        offset delta), the batch stays below batch.size and the partition below twice that."""
        now = self.scheduler.now_ms
        index = len(batch.values)
        delta = now - batch.timestamps[0]
        if (
            timestamp != now
            or self.acks == 0
            or batch.keys is not None
            or batch.headers is not None
            or not 0 <= delta < _SMALL
            or index >= 8192
        ):
            return
        size = record_size(index, delta, None, value)
        left = min(
            (64 if index < 64 else 8192) - index,  # offset deltas of one varint size
            (self.batch_size - batch.size_in_bytes - 1) // size,
            (2 * self.batch_size - sticky.produced_bytes - 1) // size,
        )
        if left > 0:
            batch.fast_length, batch.fast_now, batch.fast_size = len(value), now, size
            batch.fast_left = batch.fast_taken = left
            self._fast[topic] = batch

    def _settle_fast(self) -> None:
        """Count what send() appended on its own, as _append would have, and stop it."""
        for topic, batch in self._fast.items():
            appended = batch.fast_taken - batch.fast_left
            batch.timestamps.extend([batch.fast_now] * appended)
            self._sent_count += appended
            grown = appended * batch.fast_size
            batch.size_in_bytes += grown
            self._topics[topic].sticky.produced_bytes += grown
            batch.fast_left = batch.fast_taken = 0
        self._fast.clear()

    def _metadata_changed(self) -> None:
        self._settle_fast()

    def _new_batch(self, info: _TopicInfo, partition: int) -> _ProducerBatch:
        queue = info.queues[partition]
        batch = _ProducerBatch(info.tps[partition], self.scheduler.now_ms, self.batch_size, self.compression)
        if self.acks == 0:
            batch.result.resolve(-1)  # nobody will say where the records went
        queue.append(batch)
        info.open[partition] = batch
        info.used.add(partition)
        self._kick(0 if len(queue) > 1 else self.linger_ms)
        return batch

    def _close(self, info: _TopicInfo, partition: int) -> None:
        """No more records go into the partition's open batch: it is ready to send."""
        batch = info.open[partition]
        if batch is not None:
            batch.full = True
            info.open[partition] = None
            self._kick(0)

    def _place_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        for item in waiting:
            topic, key, value, partition, timestamp, future, _ = item
            if future.done():
                continue
            if self._append(topic, key, value, partition, timestamp, future) is None:
                self._waiting.append(item)
        if self._waiting:
            self.metadata.waiters.append(self._place_waiting)
            self.metadata.need(item[0] for item in self._waiting)

    def _topic_denied(self, topic: str) -> None:
        """Records waiting for a topic this producer may not describe fail (TopicAuthorizationException)."""
        keep = []
        for item in self._waiting:
            future = item[5]
            if item[0] == topic and not future.done():
                future.fail(TopicAuthorizationFailed(f"not authorized to access topic {topic!r}"))
                self.failed += 1
            elif not future.done():
                keep.append(item)
        self._waiting = keep
        self._maybe_drained()

    def _expire_waiting(self) -> None:
        now = self.scheduler.now_ms
        keep = []
        for item in self._waiting:
            topic, *_, future, sent_ms = item
            if now - sent_ms >= self.max_block_ms and not future.done():
                why = "does not exist" if topic in self.metadata.unknown else "has no metadata yet"
                future.fail(
                    KafkaTimeout(
                        f"topic {topic!r} {why}: not present in metadata after {self.max_block_ms} ms"
                    )
                )
                self.failed += 1
            elif not future.done():
                keep.append(item)
        self._waiting = keep
        self._maybe_drained()

    # Sending (Kafka's Sender: ready, then drain).

    def _kick(self, delay_ms: int) -> None:
        at = self.scheduler.now_ms + delay_ms
        if self._wakeup is not None and not self._wakeup.cancelled and self._wakeup.time_ms <= at:
            return
        Scheduler.cancel(self._wakeup)
        self._wakeup = self.scheduler.call_at(at, self._run, label=f"{self.client_id} sender")

    def _run(self) -> None:
        self._wakeup = None
        if self.closed:
            return
        self._settle_fast()
        now = self.scheduler.now_ms
        # Without its producer id an idempotent producer only expires batches: InitProducerId is on
        # its way and kicks the sender when answered.
        sending = not self.idempotent or self._maybe_init_producer_id()
        by_leader: dict[BrokerId, dict[TopicPartition, _ProducerBatch]] = {}
        next_ms: int | None = None
        held: list[int] = []  # when the batches held back (not ready for another reason) were made
        need_metadata: set[str] = set()
        for topic, info in self._topics.items():
            sizes: list[int] = []  # queue lengths of the partitions a record without a key may go to
            available: list[int] = []
            for partition, queue in enumerate(info.queues):
                tp = info.tps[partition]
                leader = self.metadata.leader(tp)
                if leader is not None:
                    available.append(partition)
                    sizes.append(len(queue))
                self._expire_batches(info, partition, now)
                if not queue:
                    continue
                if not sending:
                    held.append(queue[0].created_ms)
                    continue
                if leader is None:
                    need_metadata.add(topic)
                    held.append(queue[0].created_ms)
                    continue
                if self.availability_timeout_ms and (
                    self._ready_ms.get(leader, now) - self._drain_ms.get(leader, now)
                    > self.availability_timeout_ms
                ):
                    available.pop()  # its leader has not taken a batch for too long
                    sizes.pop()
                batch = queue[0]
                ready_at = max(
                    batch.retry_at_ms,
                    batch.created_ms
                    + (0 if batch.sealed or len(queue) > 1 or self._flushing else self.linger_ms),
                )
                if ready_at > now:
                    next_ms = ready_at if next_ms is None else min(next_ms, ready_at)
                    continue
                self._ready_ms[leader] = now
                if leader not in by_leader and self._in_flight.get(leader, 0) >= self.max_in_flight:
                    continue  # it cannot take more now (an answer or its timeout kicks the sender)
                if self.idempotent and not self._may_drain(tp, batch):
                    held.append(batch.created_ms)
                    continue
                self._drain_ms[leader] = now
                by_leader.setdefault(leader, {})[tp] = batch
            if self.adaptive and len(info.used) == len(info.tps):
                info.sticky.stats = load_stats(sizes, available, len(info.tps))
        for leader, batches in by_leader.items():
            self._send_request(leader, batches)
        if need_metadata:
            self.metadata.waiters.append(lambda: self._kick(0))
            self.metadata.need(need_metadata)
        if self._epoch_bump_needed and self.txn is None and not any(self._unresolved.values()):
            # A batch that expired above was the last one the epoch bump waited for: bump, and send
            # what waited for it, at once rather than at the next answer or expiry.
            self._kick(0)
        elif held:
            # Kafka's Sender wakes for the accumulator's next expiry too: whatever holds a batch back,
            # its records get their answer by delivery.timeout.ms.
            expiry = min(held) + self.delivery_timeout_ms
            next_ms = expiry if next_ms is None else min(next_ms, expiry)
        if next_ms is not None:
            self._kick(next_ms - now)
        if self._drained is not None:
            self._maybe_drained()  # batches expired, or records failed at once

    def _expire_batches(self, info: _TopicInfo, partition: int, now: int) -> None:
        queue = info.queues[partition]
        tp = info.tps[partition]
        while queue and now - queue[0].created_ms >= self.delivery_timeout_ms:
            batch = queue.popleft()
            if info.open[partition] is batch:
                info.open[partition] = None
            self._fail(
                batch,
                KafkaTimeout(
                    f"expiring {batch.record_count} record(s) for {tp}: {self.delivery_timeout_ms} ms "
                    "(delivery.timeout.ms) has passed since batch creation"
                ),
            )

    def _send_request(self, leader: BrokerId, batches: dict[TopicPartition, _ProducerBatch]) -> None:
        partitions: dict[TopicPartition, bytes] = {}
        for tp, batch in batches.items():
            info = self._topics[tp.topic]
            info.queues[tp.partition].popleft()
            if info.open[tp.partition] is batch:
                info.open[tp.partition] = None  # sent before it filled (linger.ms passed, or a flush)
            if batch.data is None:
                if self.idempotent:
                    self._set_sequence(tp, batch)
                    if batch.renumber is not None:
                        self._journal_renumbered(batch)
                batch.data = batch.build()
            batch.attempts += 1
            partitions[tp] = batch.data
        request = ProduceRequest(
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            partitions=partitions,
            records=sum(len(b.values) for b in batches.values()),
            transactional_id=None if self.txn is None else self.txn.transactional_id,
        )
        if self.acks == 0:
            self.endpoint.send_oneway(leader, request)
            self._kick(0)
            return
        self._in_flight[leader] = self._in_flight.get(leader, 0) + 1
        cid = self.endpoint.request(
            leader,
            request,
            lambda r: self._on_response(leader, batches, r),
            timeout_ms=self.request_timeout_ms,
        )
        if self.idempotent:
            for tp, batch in batches.items():
                self._sent.setdefault(tp, {})[batch.base_sequence] = (leader, cid)

    def _on_response(
        self, leader: BrokerId, batches: dict[TopicPartition, _ProducerBatch], response: Any
    ) -> None:
        self._in_flight[leader] = max(0, self._in_flight.get(leader, 0) - 1)
        now = self.scheduler.now_ms
        unanswered: set[int] = set()
        for tp, batch in batches.items():
            if self.idempotent:
                sent = self._sent.get(tp)
                if sent is not None:
                    sent.pop(batch.base_sequence, None)
            if isinstance(response, KafkaError):
                error: KafkaError | None = response
                base = -1
            else:
                assert isinstance(response, ProduceResponse)
                result = response.partitions.get(tp)
                if result is None:
                    error, base = errors.InvalidRequest(f"no answer for {tp}"), -1
                elif result.error is not None:
                    error, base = errors.from_wire(result.error, result.message), -1
                else:
                    error, base = None, result.base_offset
            in_time = batch.attempts <= self.retries and now - batch.created_ms < self.delivery_timeout_ms
            if error is None:
                if self.idempotent:
                    unanswered |= self._answers_lost_before(tp, batch)
                self._complete(batch, base)
            elif self.idempotent and error.name == "OUT_OF_ORDER_SEQUENCE_NUMBER" and in_time:
                self._out_of_sequence(batch, error)
            elif error.retriable and in_time:
                self._retry(batch, error)
            else:
                self._fail(batch, error)
        for cid in sorted(unanswered):
            self.endpoint.abort(
                cid,
                errors.NetworkException(
                    "the answer to a later batch came first, so this one's was lost on the way (Kafka's "
                    "connection would have closed): retried, and the leader knows it if it wrote it"
                ),
            )
        if self._drained is not None:
            self._maybe_drained()
        self._kick(0)

    def _answers_lost_before(self, tp: TopicPartition, batch: _ProducerBatch) -> set[int]:
        """The requests still waiting for an answer that carry a batch of ``tp`` before ``batch``.

        A leader answers one partition's batches in order (Kafka's connection even answers its
        requests in order), so those answers were lost. Kafka's client would see its connection
        drop and retry them at once, while the leader still keeps them among its last five batches.
        """
        sent = self._sent.get(tp)
        if not sent:
            return set()
        return {cid for seq, (_leader, cid) in sent.items() if seq < batch.base_sequence}

    def _complete(self, batch: _ProducerBatch, base_offset: int) -> None:
        if batch.base_sequence >= 0:
            tp = batch.tp
            self._resolved(tp, batch)
            self._last_acked_sequence[tp] = increment_sequence(batch.base_sequence, batch.record_count - 1)
        self.host.ledger.record_batch(
            self.client_id,
            batch.tp,
            base_offset,
            batch.keys,
            batch.values,
            acks=self.acks,
            time_ms=self.scheduler.now_ms,
        )
        self.acked += len(batch.values)
        batch.result.resolve(base_offset)  # every record's future at once; their callbacks run now

    def _retry_backoff_ms(self, attempts: int) -> int:
        """KIP-580 (Kafka 3.7): the wait before a batch's next attempt doubles with each one it made, from
        retry.backoff.ms up to retry.backoff.max.ms, with 20% jitter either way (Kafka's
        ExponentialBackoff), so that a leader gone for seconds costs a few retries, not dozens."""
        first, most = self.retry_backoff_ms, self.retry_backoff_max_ms
        if first >= most:
            return most  # Kafka: the max, from the start, without growth
        term = first * 2.0 ** min(max(attempts - 1, 0), 62)
        return min(int(term * self._jitter.uniform(0.8, 1.2)), most)

    def _retry(self, batch: _ProducerBatch, error: KafkaError, *, why: str = "") -> None:
        self.retried += batch.record_count
        backoff = self._retry_backoff_ms(batch.attempts)
        batch.retry_at_ms = self.scheduler.now_ms + backoff
        queue = self._topics[batch.tp.topic].queues[batch.tp.partition]
        if batch.base_sequence >= 0:
            # Kafka's insertInSequenceOrder: retries go out in the order of their sequences.
            at = 0
            while at < len(queue) and 0 <= queue[at].base_sequence < batch.base_sequence:
                at += 1
            queue.insert(at, batch)
        elif self.idempotent:
            # Its sequence is lost (_out_of_sequence): it goes out numbered again once the epoch is
            # bumped, which waits for every batch still holding a sequence, so it queues behind them
            # (in front, it would hold them back for ever) and behind those sent back before it (in
            # the order they were sent), ahead of the batches never sent.
            at = 0
            while at < len(queue) and (queue[at].base_sequence >= 0 or queue[at].attempts > 0):
                at += 1
            queue.insert(at, batch)
        else:
            queue.appendleft(batch)
        # Every retry, as Kafka's Sender logs each ("Got error produce response ... retrying (N
        # attempts left)"): the attempt number tells a first retry from the tenth.
        left = self.retries - batch.attempts
        sequence = batch.base_sequence if batch.base_sequence >= 0 else (batch.renumber or (0, -1))[1]
        self.host.journal.record(
            "produce_retry",
            f"{self.client_id}: got {error.name} for {batch.record_count} record(s) to {batch.tp}"
            + (f" (sequence {sequence})" if sequence >= 0 else "")
            + f" on attempt {batch.attempts}; retrying in {backoff} ms"
            + (
                f" (retry.backoff.ms={self.retry_backoff_ms} doubled per attempt, at most "
                f"retry.backoff.max.ms={self.retry_backoff_max_ms})"
                if self.retry_backoff_ms < self.retry_backoff_max_ms
                else ""
            )
            + (f" ({left} attempts left)" if self.retries < 2**31 - 1 else "")
            + (f": {why}" if why else ""),
            topic=batch.tp.topic,
            partition=batch.tp.partition,
            client=self.client_id,
            error=error.name,
            attempt=batch.attempts,
            sequence=sequence,
        )
        if error.name in (
            "NOT_LEADER_OR_FOLLOWER",
            "UNKNOWN_TOPIC_OR_PARTITION",
            "NETWORK_EXCEPTION",
            "LEADER_NOT_AVAILABLE",
            "REQUEST_TIMED_OUT",
        ):
            self.metadata.need([batch.tp.topic])

    def _fail(self, batch: _ProducerBatch, error: KafkaError) -> None:
        if batch.base_sequence >= 0:
            # Written or not, nobody knows: the sequences after it cannot follow. A new epoch can.
            self._resolved(batch.tp, batch)
            if not self._epoch_bump_needed:
                self._bump_reason = (
                    f"its batch with sequence {batch.base_sequence} to {batch.tp} failed after it was sent "
                    f"({error.name}): whether the leader wrote it is unknown, so the sequences after it cannot follow"
                )
            self._epoch_bump_needed = True
        batch.result.fail(error)
        if self.txn is not None:
            self.txn.batch_failed(error)
        if self.acks != 0:
            self.failed += batch.record_count
        self.host.journal.record(
            "produce_failed",
            f"{self.client_id}: {batch.record_count} record(s) to {batch.tp} failed: {error}",
            topic=batch.tp.topic,
            partition=batch.tp.partition,
            client=self.client_id,
            error=error.name,
        )

    # Idempotence (Kafka's TransactionManager, for a producer without transactional.id).

    def _maybe_init_producer_id(self) -> bool:
        """True once batches may go out: the producer has an id and no epoch bump is due."""
        if self.txn is not None:
            # A transactional producer's id comes from init_transactions; an epoch bump, from its abort.
            return self.producer_id >= 0
        if self._epoch_bump_needed and not any(self._unresolved.values()):
            self._bump_epoch()
        if self.producer_id >= 0:
            return True
        if not self._init_in_flight:
            self._init_producer_id()
        return False

    def _init_producer_id(self) -> None:
        now = self.scheduler.now_ms
        failed = self.metadata._failed_until
        brokers = [b for b in self.host.bootstrap_brokers() if failed.get(b, 0) <= now]
        if not brokers:
            self._kick(self.retry_backoff_ms)
            return
        # Any broker answers (Kafka's leastLoadedNode): try them in turn.
        broker = brokers[self._init_attempts % len(brokers)]
        self._init_attempts += 1
        self._init_in_flight = True
        self.endpoint.request(
            broker,
            InitProducerIdRequest(),
            lambda response: self._on_init_producer_id(broker, response),
            timeout_ms=self.request_timeout_ms,
        )

    def _on_init_producer_id(self, broker: BrokerId, response: Any) -> None:
        self._init_in_flight = False
        if isinstance(response, InitProducerIdResponse) and response.error is None:
            self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
            self.host.journal.record(
                "producer_id",
                f"{self.client_id}: broker {broker} gave producer id {self.producer_id}, epoch "
                f"{self.producer_epoch} (InitProducerId): its batches carry them and a sequence per partition",
                client=self.client_id,
                broker=broker,
            )
            self._kick(0)
            return
        if isinstance(response, KafkaError):
            self.metadata._failed_until[broker] = self.scheduler.now_ms + RECONNECT_BACKOFF_MS
        self._kick(self.retry_backoff_ms)

    def _may_drain(self, tp: TopicPartition, batch: _ProducerBatch) -> bool:
        """Kafka's shouldStopDrainBatchesForPartition: a new batch waits while an epoch bump is due;
        a retry waits until every batch before it in sequence is answered for good.

        A new batch also waits while max.in.flight.requests.per.connection of the partition's batches
        are unanswered, wherever they went. A leader keeps only a producer's last five batches to
        recognise a retry, and max.in.flight <= 5 keeps a retry among them only while the partition's
        batches share one connection: after a leader change, batches sent to the old leader and new
        ones sent to the new leader could make six, and a retry of the oldest would then be taken for
        a gap (OUT_OF_ORDER_SEQUENCE_NUMBER) and written again under a new epoch."""
        if self.txn is not None and not self.txn.may_send(tp):
            return False
        unresolved = self._unresolved.get(tp)
        if batch.base_sequence < 0:
            return not self._epoch_bump_needed and (
                not unresolved or len(unresolved) < min(self.max_in_flight, BATCHES_TO_RETAIN)
            )
        return not unresolved or unresolved[0] == batch.base_sequence

    def _set_sequence(self, tp: TopicPartition, batch: _ProducerBatch) -> None:
        sequence = self._next_sequence.get(tp, 0)
        batch.producer_id, batch.producer_epoch, batch.base_sequence = (
            self.producer_id,
            self.producer_epoch,
            sequence,
        )
        batch.is_transactional = self.txn is not None
        self._next_sequence[tp] = increment_sequence(sequence, batch.record_count)
        self._unresolved.setdefault(tp, []).append(sequence)

    def _resolved(self, tp: TopicPartition, batch: _ProducerBatch) -> None:
        unresolved = self._unresolved.get(tp)
        if unresolved and batch.base_sequence in unresolved:
            unresolved.remove(batch.base_sequence)

    def _out_of_sequence(self, batch: _ProducerBatch, error: KafkaError) -> None:
        """OUT_OF_ORDER_SEQUENCE_NUMBER: the broker did not write the batch. If a batch before it is
        still unanswered, it is retried after that one; if the sequence is lost (a batch before it
        failed for good), it goes back as a new batch, to be numbered again in the next epoch."""
        tp = batch.tp
        last_acked = self._last_acked_sequence.get(tp, -1)
        if 0 <= batch.base_sequence <= last_acked:
            # A later batch was acknowledged, so the leader wrote this one (it writes in sequence only),
            # but no longer keeps it among its last five: where it went cannot be known.
            self._resolved(tp, batch)
            written = errors.OutOfOrderSequenceNumber(
                f"{error.message} (the batch was written: {tp} acknowledged sequence {last_acked} after it, "
                "but its offset is no longer known)"
            )
            batch.result.fail(written)
            self.failed += batch.record_count
            self.host.journal.record(
                "produce_failed",
                f"{self.client_id}: {batch.record_count} record(s) to {tp} failed: {written}",
                topic=tp.topic,
                partition=tp.partition,
                client=self.client_id,
                error=written.name,
            )
            return
        expected = increment_sequence(last_acked, 1)
        if batch.base_sequence != expected and not self._epoch_bump_needed:
            self._retry(batch, error)
            return
        self._resolved(tp, batch)
        if not self._epoch_bump_needed:
            self._bump_reason = (
                f"its batch with sequence {batch.base_sequence} to {tp} got OUT_OF_ORDER_SEQUENCE_NUMBER: "
                f"the leader has no batch before it (the last it acknowledged is {last_acked}), so the "
                "sequences after it cannot follow"
            )
        self._epoch_bump_needed = True
        batch.renumber = (batch.producer_epoch, batch.base_sequence)
        batch.producer_id, batch.producer_epoch, batch.base_sequence = (
            NO_PRODUCER_ID,
            NO_PRODUCER_EPOCH,
            NO_SEQUENCE,
        )
        batch.data = None
        self._retry(
            batch,
            error,
            why="the leader never wrote the batch before it, so its sequence is lost and it goes out numbered "
            "anew once the producer has bumped its epoch",
        )

    def _journal_renumbered(self, batch: _ProducerBatch) -> None:
        """A batch whose sequence was lost goes out under the new epoch: Kafka's "Resetting sequence
        number of batch with current sequence ... to ...", with the why."""
        assert batch.renumber is not None
        old_epoch, old_sequence = batch.renumber
        batch.renumber = None
        self.host.journal.record(
            "produce_renumbered",
            f"{self.client_id}: resetting sequence number of batch with current sequence {old_sequence} "
            f"(epoch {old_epoch}) for partition {batch.tp} to {batch.base_sequence} (epoch "
            f"{batch.producer_epoch}): the leader refused it with OUT_OF_ORDER_SEQUENCE_NUMBER, as a batch "
            "before it was never written, so it is sent again numbered in the producer's new epoch",
            topic=batch.tp.topic,
            partition=batch.tp.partition,
            client=self.client_id,
            old_sequence=old_sequence,
            old_epoch=old_epoch,
            sequence=batch.base_sequence,
            epoch=batch.producer_epoch,
        )

    def _bump_epoch(self) -> None:
        """Every batch with a sequence is answered: start the sequences again under a new epoch (KIP-360)."""
        self._epoch_bump_needed = False
        self._next_sequence.clear()
        self._last_acked_sequence.clear()
        if self.producer_id < 0:
            return
        if self.producer_epoch >= 32767:  # the epoch is an int16: a new id instead
            self.producer_id, self.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            return
        self.producer_epoch += 1
        self.host.journal.record(
            "producer_epoch_bumped",
            f"{self.client_id}: {self._bump_reason or 'a batch failed after it was sent'}; producer "
            f"{self.producer_id} bumps its epoch to {self.producer_epoch} and numbers from 0 again",
            client=self.client_id,
        )
        self._bump_reason = ""

    # Transactions (Kafka's KafkaProducer transactional API; the state lives in txn_client.py).

    def _transactional(self) -> TransactionManager:
        if self.txn is None:
            raise IllegalState(
                "Cannot use transactional methods without enabling transactions by setting the "
                "transactional.id configuration property"
            )
        return self.txn

    def init_transactions(self, timeout_ms: int | None = None) -> None:
        """Get the producer id and epoch from the transaction coordinator, fencing older producers
        with this transactional.id and completing (aborting) what they left open."""
        self._transactional().init_transactions(self.max_block_ms if timeout_ms is None else timeout_ms)

    def begin_transaction(self) -> None:
        self._transactional().begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[tuple[str, int], int] | Mapping[TopicPartition, int],
        group: Any,
        timeout_ms: int | None = None,
    ) -> None:
        """Commit a consumer group's offsets in the transaction (``group``: the group id, or a group
        consumer, whose generation and member id the coordinator then checks, KIP-447)."""
        txn = self._transactional()
        tps = {TopicPartition(tp[0], int(tp[1])): int(o) for tp, o in offsets.items()}
        if isinstance(group, str):
            group_id, generation, member_id, instance_id = group, -1, "", None
        else:
            group_id = group.group_id
            generation, member_id = group.generation, group.member_id
            instance_id = getattr(group, "instance_id", None) or None
        txn.send_offsets_to_transaction(
            tps,
            group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            timeout_ms=self.max_block_ms if timeout_ms is None else timeout_ms,
        )

    def commit_transaction(self, timeout_ms: int | None = None) -> None:
        self._transactional().commit_transaction(self.max_block_ms if timeout_ms is None else timeout_ms)

    def abort_transaction(self, timeout_ms: int | None = None) -> None:
        self._transactional().abort_transaction(self.max_block_ms if timeout_ms is None else timeout_ms)

    def _new_epoch(self, producer_id: int, epoch: int) -> None:
        """A producer id and epoch from the coordinator: sequences start again from 0."""
        self.producer_id, self.producer_epoch = producer_id, epoch
        self._next_sequence.clear()
        self._last_acked_sequence.clear()
        self._epoch_bump_needed = False
        self._kick(0)

    def _abort_undrained(self, error: KafkaError) -> None:
        """Fail the batches never sent (Kafka's abortUndrainedBatches): they are not in the log; so
        are the records still waiting for their topic's metadata."""
        waiting, self._waiting = self._waiting, []
        for item in waiting:
            future = item[5]
            if not future.done():
                future.fail(error)
                self.failed += 1
        for info in self._topics.values():
            for partition, queue in enumerate(info.queues):
                keep = deque(b for b in queue if b.base_sequence >= 0)
                for batch in queue:
                    if batch.base_sequence < 0:
                        if info.open[partition] is batch:
                            info.open[partition] = None
                        batch.result.fail(error)
                        self.failed += batch.record_count
                info.queues[partition] = keep


# ---------------------------------------------------------------------------- consumer


class Consumer(_Client):
    """Reads below the HW; owns its position; can rewind. Group membership lives in ``groups.py``."""

    def __init__(self, host: ClientHost, client_id: str, config: Mapping[str, object] | None = None) -> None:
        settings = consumer_config(config or {})
        super().__init__(
            host,
            client_id,
            request_timeout_ms=settings.number("request.timeout.ms"),
            retry_backoff_ms=settings.number("retry.backoff.ms"),
        )
        self.settings = settings
        self.config = dict(settings.values)
        self.max_wait_ms = settings.number("fetch.max.wait.ms")
        self.max_partition_bytes = settings.number("max.partition.fetch.bytes")
        self.max_poll_records = settings.number("max.poll.records")
        # 1: read_committed (up to the LSO, aborted transactions dropped); 0: read_uncommitted.
        self.isolation_level = 1 if settings.text("isolation.level") == "read_committed" else 0
        self._assigned: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._resetting: set[TopicPartition] = set()
        self._buffer: deque[tuple[TopicPartition, list[ConsumerRecord]]] = deque()  # fetched, by chunk
        self._buffered = 0
        self._fetching: set[BrokerId] = set()
        self._backoff_until: dict[TopicPartition, int] = {}
        self._wakeup: Timer | None = None
        self._errors: list[KafkaError] = []
        self.consumed = 0
        self.on_records: Callable[[], None] | None = None  # simulated consumers hear of new records

    # API

    def assign(self, partitions: Sequence[tuple[str, int]] | Sequence[TopicPartition]) -> None:
        tps = [p if isinstance(p, TopicPartition) else TopicPartition(p[0], int(p[1])) for p in partitions]
        self._set_assignment(tps)

    def _set_assignment(self, tps: Sequence[TopicPartition]) -> None:
        keep = set(tps)
        self._assigned = sorted(keep)
        self._positions = {tp: pos for tp, pos in self._positions.items() if tp in keep}
        self._resetting &= keep
        self._buffer = deque(chunk for chunk in self._buffer if chunk[0] in keep)
        self._buffered = sum(len(records) for _, records in self._buffer)
        self.metadata.need({tp.topic for tp in tps})
        self._kick(0)

    def assignment(self) -> list[TopicPartition]:
        return list(self._assigned)

    def position(self, topic: str, partition: int) -> int | None:
        tp = TopicPartition(topic, partition)
        self._check_assigned(tp)
        return self._positions.get(tp)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        tp = TopicPartition(topic, partition)
        self._check_assigned(tp)
        if offset < 0:
            raise IllegalArgument(f"seek offset must be >= 0, not {offset}")
        self._positions[tp] = offset
        self._resetting.discard(tp)
        self._drop_buffered(tp)
        self._kick(0)

    def seek_to_beginning(self, topic: str, partition: int) -> None:
        self._reset(TopicPartition(topic, partition), EARLIEST_TIMESTAMP)

    def seek_to_end(self, topic: str, partition: int) -> None:
        self._reset(TopicPartition(topic, partition), LATEST_TIMESTAMP)

    def offsets_for_times(
        self, timestamps: Mapping[tuple[str, int], int], timeout_ms: int = 10_000
    ) -> dict[TopicPartition, int | None]:
        """For each partition, the first offset whose timestamp is >= the given one (None when there is none)."""
        wanted = {TopicPartition(t, int(p)): ts for (t, p), ts in timestamps.items()}
        if any(ts < 0 for ts in wanted.values()):
            raise IllegalArgument("timestamps must be >= 0")
        answers: dict[TopicPartition, int | None] = {}
        failures: list[KafkaError] = []

        def ask(tp: TopicPartition, ts: int) -> None:
            leader = self.metadata.leader(tp)
            if leader is None:
                self.metadata.waiters.append(lambda: ask(tp, ts))
                self.metadata.need([tp.topic])
                return

            def answered(response: Any) -> None:
                result = response.partitions.get(tp) if isinstance(response, ListOffsetsResponse) else None
                if result is None or result.error is not None:
                    if result is not None and result.error == UnknownTopicOrPartition.name:
                        failures.append(UnknownTopicOrPartition(f"{tp} does not exist"))
                        return
                    self.metadata.need([tp.topic])
                    self.scheduler.call_later(self.retry_backoff_ms, ask, tp, ts)
                    return
                answers[tp] = None if result.offset < 0 else result.offset

            self.endpoint.request(
                leader, ListOffsetsRequest(partitions={tp: ts}), answered, timeout_ms=self.request_timeout_ms
            )

        for tp, ts in wanted.items():
            ask(tp, ts)
        done = self.host.run_until_true(lambda: len(answers) == len(wanted) or bool(failures), timeout_ms)
        if failures:
            raise failures[0]
        if not done:
            raise KafkaTimeout(f"offsets_for_times got no answer within {timeout_ms} ms")
        return answers

    def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Records fetched so far; waits (driving the clock) up to ``timeout_ms`` when there are none."""
        if self.closed:
            raise IllegalState(f"consumer {self.client_id} is closed")
        if not self._has_partitions_to_read():
            raise IllegalState("Consumer is not subscribed to any topics or assigned any partitions")
        if not self._buffered and not self._errors and timeout_ms > 0:
            self.host.run_until_true(lambda: bool(self._buffered) or bool(self._errors), timeout_ms)
        return self.take()

    def _has_partitions_to_read(self) -> bool:
        return bool(self._assigned)

    def take(self, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched so far, without waiting (what a simulated consumer calls)."""
        if self._errors:
            raise self._errors.pop(0)
        limit = self.max_poll_records if max_records is None else max_records
        out: list[ConsumerRecord] = []
        while self._buffer and len(out) < limit:
            tp, records = self._buffer[0]
            room = limit - len(out)
            if len(records) <= room:
                out += records
                self._buffer.popleft()
            else:
                out += records[:room]
                self._buffer[0] = (tp, records[room:])
        self._buffered -= len(out)
        self.consumed += len(out)
        if out:
            self._kick(0)
        return out

    def close(self) -> None:
        if not self.closed:
            self._close_endpoint()
            Scheduler.cancel(self._wakeup)

    # Positions.

    def _check_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._assigned:
            raise IllegalState(
                f"{tp} is not assigned to {self.client_id} (assigned: {', '.join(map(str, self._assigned)) or 'none'})"
            )

    def _drop_buffered(self, tp: TopicPartition) -> None:
        self._buffer = deque(chunk for chunk in self._buffer if chunk[0] != tp)
        self._buffered = sum(len(records) for _, records in self._buffer)

    def _reset(self, tp: TopicPartition, timestamp: int) -> None:
        self._check_assigned(tp)
        self._positions.pop(tp, None)
        self._drop_buffered(tp)
        self._list_offset(tp, timestamp)

    def _initial_position(self, tp: TopicPartition) -> None:
        """Where to start with no position: the committed offset (groups), else auto.offset.reset."""
        policy = self.config["auto.offset.reset"]
        if policy == "none":
            self._errors.append(
                NoOffsetForPartition(f"no committed offset for {tp} and auto.offset.reset=none")
            )
            self._resetting.add(tp)
            return
        self._list_offset(tp, EARLIEST_TIMESTAMP if policy == "earliest" else LATEST_TIMESTAMP)

    def _list_offset(self, tp: TopicPartition, timestamp: int) -> None:
        leader = self.metadata.leader(tp)
        self._resetting.add(tp)
        if leader is None:
            self.metadata.waiters.append(lambda: self._retry_list(tp, timestamp))
            self.metadata.need([tp.topic])
            return
        self.endpoint.request(
            leader,
            ListOffsetsRequest(partitions={tp: timestamp}, isolation_level=self.isolation_level),
            lambda r: self._on_list_offsets(tp, timestamp, r),
            timeout_ms=self.request_timeout_ms,
        )

    def _retry_list(self, tp: TopicPartition, timestamp: int) -> None:
        if tp in self._assigned and tp not in self._positions:
            self._list_offset(tp, timestamp)

    def _on_list_offsets(self, tp: TopicPartition, timestamp: int, response: Any) -> None:
        if self.closed or tp not in self._assigned:
            return
        result = response.partitions.get(tp) if isinstance(response, ListOffsetsResponse) else None
        if result is None or result.error is not None:
            self.metadata.need([tp.topic])
            self.scheduler.call_later(self.retry_backoff_ms, self._retry_list, tp, timestamp)
            return
        self._resetting.discard(tp)
        self._positions[tp] = result.offset
        self._kick(0)

    # Fetching.

    def _kick(self, delay_ms: int) -> None:
        if self.closed:
            return
        at = self.scheduler.now_ms + delay_ms
        if self._wakeup is not None and not self._wakeup.cancelled and self._wakeup.time_ms <= at:
            return
        Scheduler.cancel(self._wakeup)
        self._wakeup = self.scheduler.call_at(at, self._run, label=f"{self.client_id} fetcher")

    def _run(self) -> None:
        self._wakeup = None
        if self.closed:
            return
        by_leader: dict[BrokerId, dict[TopicPartition, FetchPartition]] = {}
        missing: set[str] = set()
        buffered = {tp for tp, _ in self._buffer}
        now = self.scheduler.now_ms
        for tp in self._assigned:
            if tp in self._resetting:
                continue
            if self._backoff_until.get(tp, 0) > now:
                self._kick(self._backoff_until[tp] - now)
                continue
            position = self._positions.get(tp)
            if position is None:
                self._before_first_fetch(tp)
                continue
            if tp in buffered and self._buffered >= self.max_poll_records:
                continue
            known = self.metadata.partition(tp)
            if known is None or known.leader < 0:
                missing.add(tp.topic)
                continue
            if known.leader in self._fetching:
                continue
            # Kafka's consumers send the leader epoch they know (KIP-320): a broker that is no longer
            # the leader, or not yet, answers FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH instead of
            # reading from a log that may be truncated (which would reset the position).
            by_leader.setdefault(known.leader, {})[tp] = FetchPartition(
                fetch_offset=position,
                max_bytes=self.max_partition_bytes,
                current_leader_epoch=known.leader_epoch,
            )
        for leader, parts in by_leader.items():
            self._fetching.add(leader)
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=self.max_wait_ms,
                min_bytes=1,
                partitions=parts,
                isolation_level=self.isolation_level,
            )
            self.endpoint.request(
                leader,
                request,
                self._fetch_answered(leader, parts),
                timeout_ms=self.request_timeout_ms + self.max_wait_ms,
            )
        if missing:
            self.metadata.waiters.append(lambda: self._kick(0))
            self.metadata.need(missing)

    def _fetch_answered(
        self, leader: BrokerId, asked: dict[TopicPartition, FetchPartition]
    ) -> Callable[[Any], None]:
        return lambda response: self._on_fetch(leader, asked, response)

    def _before_first_fetch(self, tp: TopicPartition) -> None:
        self._initial_position(tp)

    def _on_fetch(self, leader: BrokerId, asked: dict[TopicPartition, FetchPartition], response: Any) -> None:
        self._fetching.discard(leader)
        if self.closed:
            return
        if isinstance(response, KafkaError) or not isinstance(response, FetchResponse):
            self.metadata.need({tp.topic for tp in asked})
            self._kick(self.retry_backoff_ms)
            return
        got = False
        for tp, data in response.partitions.items():
            position = self._positions.get(tp)
            if position is None or position != asked[tp].fetch_offset:
                continue  # sought elsewhere meanwhile
            if data.error is not None:
                self._on_partition_error(tp, data.error, data.message, data.log_start_offset)
                continue
            fresh, position = self._records_of(tp, data, position)
            if fresh:
                self._buffer.append((tp, fresh))
                self._buffered += len(fresh)
                got = True
            self._positions[tp] = position
        if got and self.on_records is not None:
            self.on_records()
        self._kick(0)

    def _records_of(
        self, tp: TopicPartition, data: FetchPartitionData, position: int
    ) -> tuple[list[ConsumerRecord], int]:
        """The records a fetch hands the application, and the position after them.

        The first batch may start below the position (it holds it): those records are skipped.
        Control batches (transaction markers) are never handed over, but the position moves past
        them; with read_committed, a transactional batch of a producer whose transaction the
        response lists as aborted is dropped, until that producer's abort marker (Kafka's
        Fetcher with its abortedProducerIds).
        """
        prefix = (tp.topic, tp.partition)
        make = tuple.__new__
        buf = data.records
        start = position
        aborted = sorted(data.aborted_transactions or (), key=lambda a: a[1])
        aborting: set[int] = set()
        fresh: list[ConsumerRecord] = []
        at = 0
        for pos, header in iter_headers(buf):  # decode_records checks each batch's CRC
            last = header.last_offset
            if last < position:
                continue
            while at < len(aborted) and aborted[at][1] <= last:
                aborting.add(aborted[at][0])
                at += 1
            position = last + 1
            if header.is_control:
                if header.producer_id in aborting:
                    marker = marker_of(header, buf[pos : pos + header.size_in_bytes])
                    if marker is not None and not marker.commit:
                        aborting.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in aborting:
                continue
            fresh += [make(ConsumerRecord, prefix + r) for r in decode_records(buf, pos) if r.offset >= start]
        return fresh, position

    def _on_partition_error(self, tp: TopicPartition, error: str, message: str, log_start: int) -> None:
        if error == "OFFSET_OUT_OF_RANGE":
            policy = self.config["auto.offset.reset"]
            if policy == "none":
                self._errors.append(errors.OffsetOutOfRange(message))
                self._resetting.add(tp)
                return
            self.host.journal.record(
                "offset_reset",
                f"{self.client_id}: position {self._positions.get(tp)} of {tp} is out of range ({message}); "
                f"auto.offset.reset={policy}",
                topic=tp.topic,
                partition=tp.partition,
            )
            self._positions.pop(tp, None)
            self._list_offset(tp, EARLIEST_TIMESTAMP if policy == "earliest" else LATEST_TIMESTAMP)
            return
        if error == TopicAuthorizationFailed.name:
            # Kafka's consumer raises it from poll(); it fetches again after the backoff, so an ACL
            # added meanwhile lets it read on.
            self._errors.append(TopicAuthorizationFailed(f"Not authorized to access topics: [{tp.topic}]"))
        # NOT_LEADER and the like: ask for metadata, and leave this partition alone for a moment.
        self.metadata.need([tp.topic])
        self._backoff_until[tp] = self.scheduler.now_ms + self.retry_backoff_ms
