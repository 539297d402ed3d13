"""The transaction coordinator and ``__transaction_state``, as Kafka runs them (KIP-98).

Every broker runs a coordinator; it serves the transactional ids whose partition of
``__transaction_state`` (``abs(Java hashCode(transactional.id)) % transaction.state.log.num.partitions``)
it leads, as the group coordinator does with ``__consumer_offsets``. A transactional id moves

    Empty -> Ongoing -> PrepareCommit | PrepareAbort -> CompleteCommit | CompleteAbort -> Ongoing ...

InitProducerId gives the id its producer id and bumps its epoch, which fences the producer that had
it (its requests now get PRODUCER_FENCED); an open transaction is aborted first (PrepareEpochFence,
then PrepareAbort with the bumped epoch), and the new producer is told CONCURRENT_TRANSACTIONS until
the abort is complete. AddPartitionsToTxn and AddOffsetsToTxn name the partitions the transaction
writes to; EndTxn writes PrepareCommit (or PrepareAbort), answers, then has every partition's leader
write a commit (or abort) marker (WriteTxnMarkers) and writes CompleteCommit (or CompleteAbort).

Every state change is a record in ``__transaction_state`` (compacted, replicated, written with
acks=all) before it takes effect; a broker that becomes leader of one of its partitions loads the
transactional ids from that log, and completes any transaction it finds prepared (the markers are
sent again: a partition that has one already takes the second as a no-op for the LSO). Keys and
values are JSON (Kafka uses a binary schema) so a student can read them in the log.

A transaction open longer than its timeout is aborted by the coordinator (checked every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``), with the epoch bumped so the
producer that opened it is fenced.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.engine import errors
from lab.engine.control_records import Marker
from lab.engine.errors import KafkaError
from lab.engine.groups import OFFSETS_TOPIC, java_string_hash, partition_for_group
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.internal_topics import maybe_create_internal_topic
from lab.engine.network import Envelope
from lab.engine.protocol import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribedTransaction,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListedTransaction,
    ListTransactionsRequest,
    ListTransactionsResponse,
    ProducePartitionResult,
    TxnMarkerEntry,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from lab.engine.records import build_batch, iter_records

if TYPE_CHECKING:
    from lab.engine.broker import Broker

TRANSACTION_STATE_TOPIC = "__transaction_state"
TRANSACTION_STATE_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "1048576"}
STATE_WRITE_TIMEOUT_MS = 5000  # transaction.state.log's request timeout (Kafka: request.timeout.ms)
MARKER_TIMEOUT_MS = 5000
MARKER_RETRY_BACKOFF_MS = 100
MAX_PRODUCER_EPOCH = 32767  # an int16; at Short.MaxValue - 1 a new producer id is taken instead


class TxnState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    DEAD = "Dead"


PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
COMPLETED = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@functools.lru_cache(maxsize=4096)  # asked at every transactional request: Java's hash, once per id
def partition_for_transactional_id(transactional_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions``."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnRecord:
    """One transactional id's state as ``__transaction_state`` holds it (Kafka's TransactionLogValue)."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: tuple[TopicPartition, ...]
    start_ms: int
    update_ms: int

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": 0,
                "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch,
                "transaction_timeout_ms": self.timeout_ms,
                "transaction_status": self.state.value,
                "transaction_partitions": [[tp.topic, tp.partition] for tp in self.partitions],
                "transaction_start_timestamp_ms": self.start_ms,
                "transaction_last_update_timestamp_ms": self.update_ms,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> TxnRecord:
        value = json.loads(data)
        return cls(
            producer_id=int(value["producer_id"]),
            producer_epoch=int(value["producer_epoch"]),
            timeout_ms=int(value["transaction_timeout_ms"]),
            state=TxnState(value["transaction_status"]),
            partitions=tuple(TopicPartition(t, int(p)) for t, p in value["transaction_partitions"]),
            start_ms=int(value["transaction_start_timestamp_ms"]),
            update_ms=int(value["transaction_last_update_timestamp_ms"]),
        )


@functools.lru_cache(maxsize=4096)  # every state write of an id carries the same key: encoded once
def _key(transactional_id: str) -> bytes:
    return json.dumps({"version": 0, "transactional_id": transactional_id}, separators=(",", ":")).encode()


@dataclass(slots=True, eq=False)
class TransactionMetadata:
    """What the coordinator knows of one transactional id (Kafka's TransactionMetadata)."""

    transactional_id: str
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    pending: str = (
        ""  # a state write or markers in flight: what for (requests meanwhile: CONCURRENT_TRANSACTIONS)
    )
    coordinator_epoch: int = -1

    def record(self, **changes: Any) -> TxnRecord:
        values: dict[str, Any] = {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms,
            "state": self.state,
            "partitions": tuple(sorted(self.partitions)),
            "start_ms": self.start_ms,
            "update_ms": self.update_ms,
        }
        values.update(changes)
        return TxnRecord(**values)

    def apply(self, record: TxnRecord) -> None:
        self.producer_id = record.producer_id
        self.producer_epoch = record.producer_epoch
        self.timeout_ms = record.timeout_ms
        self.state = record.state
        self.partitions = set(record.partitions)
        self.start_ms = record.start_ms
        self.update_ms = record.update_ms


Then = Callable[[KafkaError | None], None]


class TransactionCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.transactions: dict[str, TransactionMetadata] = {}
        self.partitions: dict[
            int, int
        ] = {}  # partitions of __transaction_state it leads -> coordinator epoch
        self._creating_topic = False
        # By request type, made once: every transactional request asks.
        self._handlers: dict[type, Callable[[Envelope], None]] = {
            AddPartitionsToTxnRequest: self._on_add_partitions,
            AddOffsetsToTxnRequest: self._on_add_offsets,
            EndTxnRequest: self._on_end_txn,
            WriteTxnMarkersRequest: self._on_write_txn_markers,
            DescribeTransactionsRequest: self._on_describe_transactions,
            ListTransactionsRequest: self._on_list_transactions,
        }

    # ------------------------------------------------------------------ plumbing

    @property
    def now_ms(self) -> int:
        return self.broker.now_ms

    @property
    def num_partitions(self) -> int:
        return self.broker.config.int("transaction.state.log.num.partitions")

    def journal(self, kind: str, text: str, transactional_id: str, **data: Any) -> None:
        self.broker.ctx.journal.record(
            kind, text, broker=self.broker.id, transactional_id=transactional_id, **data
        )

    def handler(self, body: Any) -> Callable[[Envelope], None] | None:
        if isinstance(body, FindCoordinatorRequest):
            return self._on_find_coordinator if body.key_type == 1 else None
        if isinstance(body, InitProducerIdRequest):
            return self._on_init_producer_id if body.transactional_id is not None else None
        return self._handlers.get(type(body))

    def _respond(self, env: Envelope, body: Any) -> None:
        self.broker.endpoint.respond(env, body)

    def _partition_of(self, transactional_id: str) -> int:
        return partition_for_transactional_id(transactional_id, self.num_partitions)

    def _not_here(self, transactional_id: str) -> KafkaError | None:
        if not transactional_id:
            return errors.InvalidRequest("the transactional id is empty")
        if self._partition_of(transactional_id) not in self.partitions:
            return errors.NotCoordinator(
                f"broker {self.broker.id} is not the transaction coordinator of {transactional_id}"
            )
        return None

    def _is_current(self, meta: TransactionMetadata) -> bool:
        """False for an id this broker unloaded: an answer that arrives for it changes nothing."""
        return self.transactions.get(meta.transactional_id) is meta

    # ------------------------------------------------------------------ leadership of __transaction_state

    def on_leadership(self, tp: TopicPartition, *, leader: bool, leader_epoch: int = -1) -> None:
        if tp.topic != TRANSACTION_STATE_TOPIC:
            return
        if leader and self.partitions.get(tp.partition) != leader_epoch:
            self._load(tp, leader_epoch)
        elif not leader and tp.partition in self.partitions:
            del self.partitions[tp.partition]
            gone = [t for t in self.transactions if self._partition_of(t) == tp.partition]
            for transactional_id in gone:
                del self.transactions[transactional_id]
            if gone:
                self.journal(
                    "txn_coordinator_moved",
                    f"broker {self.broker.id} no longer coordinates {', '.join(sorted(gone))}: "
                    f"it stopped leading {tp}",
                    gone[0],
                )

    def _load(self, tp: TopicPartition, coordinator_epoch: int) -> None:
        """Rebuild this partition's transactional ids from its log (the newest record per key wins),
        then complete every transaction found prepared."""
        partition = self.broker.partitions[tp]
        log = partition.log
        latest: dict[str, TxnRecord | None] = {}
        position = log.log_start_offset
        while position < log.log_end_offset:
            data = log.read(position, 1 << 20)
            if not data.records:
                break
            for record in iter_records(data.records):
                if record.offset < position or record.key is None:
                    continue
                transactional_id = json.loads(record.key)["transactional_id"]
                latest[transactional_id] = None if record.value is None else TxnRecord.decode(record.value)
            position = data.next_offset
        for transactional_id in [t for t in self.transactions if self._partition_of(t) == tp.partition]:
            del self.transactions[transactional_id]
        self.partitions[tp.partition] = coordinator_epoch
        loaded: list[str] = []
        for transactional_id, value in sorted(latest.items()):
            if value is None or self._partition_of(transactional_id) != tp.partition:
                continue
            meta = TransactionMetadata(transactional_id, coordinator_epoch=coordinator_epoch)
            meta.apply(value)
            self.transactions[transactional_id] = meta
            loaded.append(transactional_id)
        if loaded:
            self.journal(
                "txn_coordinator_loaded",
                f"broker {self.broker.id} became transaction coordinator of {', '.join(loaded)}: it read their "
                f"state back from {tp} (coordinator epoch {coordinator_epoch})",
                loaded[0],
            )
        for transactional_id in loaded:
            meta = self.transactions[transactional_id]
            if meta.state in PREPARED:
                self.journal(
                    "txn_completing",
                    f"{transactional_id} was {meta.state.value} when its coordinator changed: broker "
                    f"{self.broker.id} sends the markers again and completes it",
                    transactional_id,
                )
                self._send_markers(meta)

    # ------------------------------------------------------------------ FindCoordinator key_type=1

    def _on_find_coordinator(self, env: Envelope) -> None:
        req: FindCoordinatorRequest = env.body
        if not req.key:
            err: KafkaError = errors.InvalidRequest("the transactional id is empty")
            self._respond(env, FindCoordinatorResponse(error=err.name, message=err.message))
            return
        partition = self._partition_of(req.key)
        info = self.broker.metadata.partitions.get(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
        if info is None:
            self._maybe_create_topic()
            err = errors.CoordinatorNotAvailable(f"{TRANSACTION_STATE_TOPIC} is being created")
            self._respond(env, FindCoordinatorResponse(error=err.name, message=err.message))
            return
        if info.leader < 0 or info.leader not in self.broker.metadata.live_brokers:
            err = errors.CoordinatorNotAvailable(f"{TRANSACTION_STATE_TOPIC}-{partition} has no leader")
            self._respond(env, FindCoordinatorResponse(error=err.name, message=err.message))
            return
        self._respond(env, FindCoordinatorResponse(node_id=info.leader))

    def _maybe_create_topic(self) -> None:
        if self._creating_topic or self.broker.session is None:
            return
        self._creating_topic = True
        self.broker.spawn(self._create_topic(), f"create {TRANSACTION_STATE_TOPIC}")

    async def _create_topic(self) -> None:
        config = self.broker.config

        def topic_config(rf: int) -> Mapping[str, str]:
            min_isr = min(config.int("transaction.state.log.min.isr"), rf)
            return {**TRANSACTION_STATE_TOPIC_CONFIG, "min.insync.replicas": str(min_isr)}

        try:
            await maybe_create_internal_topic(
                self.broker,
                TRANSACTION_STATE_TOPIC,
                self.num_partitions,
                config.int("transaction.state.log.replication.factor"),
                topic_config,
                lambda rf: (
                    f"{self.num_partitions} partitions (transaction.state.log.num.partitions; Kafka's default "
                    f"is 50), replication factor {rf}, min.insync.replicas "
                    f"{topic_config(rf)['min.insync.replicas']}, compacted"
                ),
            )
        finally:
            self._creating_topic = False

    # ------------------------------------------------------------------ InitProducerId

    def _on_init_producer_id(self, env: Envelope) -> None:
        req: InitProducerIdRequest = env.body
        transactional_id = req.transactional_id or ""

        def fail(error: KafkaError) -> None:
            self._respond(env, InitProducerIdResponse(error=error.name, message=error.message))

        max_timeout = self.broker.config.int("transaction.max.timeout.ms")
        if not 0 < req.transaction_timeout_ms <= max_timeout:
            fail(
                errors.InvalidTransactionTimeout(
                    f"transaction.timeout.ms {req.transaction_timeout_ms} is not within (0, "
                    f"transaction.max.timeout.ms={max_timeout}]"
                )
            )
            return
        refused = self._not_here(transactional_id)
        if refused is not None:
            fail(refused)
            return
        meta = self.transactions.get(transactional_id)
        if meta is None:
            self._init_new(env, transactional_id, req.transaction_timeout_ms)
            return
        if meta.pending:
            fail(errors.ConcurrentTransactions(f"{transactional_id} is busy: {meta.pending}"))
            return
        if req.producer_id >= 0 and (req.producer_id, req.producer_epoch) != (
            meta.producer_id,
            meta.producer_epoch,
        ):
            # KIP-360: a producer that asks to bump an epoch that is no longer the id's has been fenced.
            fail(
                errors.ProducerFenced(
                    f"{transactional_id} has producer id {meta.producer_id} epoch {meta.producer_epoch}, "
                    f"not {req.producer_id} epoch {req.producer_epoch}"
                )
            )
            return
        if meta.state in PREPARED or meta.state is TxnState.PREPARE_EPOCH_FENCE:
            fail(
                errors.ConcurrentTransactions(
                    f"{transactional_id} is completing a transaction ({meta.state.value})"
                )
            )
            return
        if meta.state is TxnState.ONGOING:
            self._fence_and_abort(meta, reply=fail)
            return
        producer_id, epoch = meta.producer_id, meta.producer_epoch + 1
        if epoch >= MAX_PRODUCER_EPOCH - 1:

            def with_new_id(result: int | KafkaError) -> None:
                if isinstance(result, KafkaError):
                    fail(result)
                else:
                    self._store_init(env, meta, result, 0, req.transaction_timeout_ms)

            self.broker.producer_ids.allocate(with_new_id)
            return
        self._store_init(env, meta, producer_id, epoch, req.transaction_timeout_ms)

    def _init_new(self, env: Envelope, transactional_id: str, timeout_ms: int) -> None:
        meta = TransactionMetadata(
            transactional_id,
            pending="taking a producer id",
            coordinator_epoch=self.partitions[self._partition_of(transactional_id)],
        )
        self.transactions[transactional_id] = meta

        def allocated(result: int | KafkaError) -> None:
            if not self._is_current(meta):
                return
            if isinstance(result, KafkaError):
                del self.transactions[transactional_id]
                self._respond(env, InitProducerIdResponse(error=result.name, message=result.message))
                return
            meta.pending = ""
            self._store_init(env, meta, result, 0, timeout_ms, new=True)

        self.broker.producer_ids.allocate(allocated)

    def _store_init(
        self,
        env: Envelope,
        meta: TransactionMetadata,
        producer_id: int,
        epoch: int,
        timeout_ms: int,
        *,
        new: bool = False,
    ) -> None:
        record = meta.record(
            producer_id=producer_id,
            producer_epoch=epoch,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=(),
            start_ms=-1,
            update_ms=self.now_ms,
        )

        def stored(error: KafkaError | None) -> None:
            if error is not None:
                if new and self._is_current(meta):
                    del self.transactions[meta.transactional_id]
                self._respond(env, InitProducerIdResponse(error=error.name, message=error.message))
                return
            self.journal(
                "txn_init",
                f"{meta.transactional_id}: producer id {producer_id}, epoch {epoch} (InitProducerId)"
                + ("" if new else "; any producer with an older epoch of this transactional.id is fenced"),
                meta.transactional_id,
                producer_id=producer_id,
                producer_epoch=epoch,
            )
            self._respond(env, InitProducerIdResponse(producer_id=producer_id, producer_epoch=epoch))

        self._store(meta, record, "InitProducerId", stored)

    def _fence_and_abort(self, meta: TransactionMetadata, *, reply: Callable[[KafkaError], None]) -> None:
        """An open transaction when a producer with the same id initializes: the epoch goes up by one
        (PrepareEpochFence), the transaction is aborted under it, and the newcomer is told to retry."""
        if meta.producer_epoch + 1 >= MAX_PRODUCER_EPOCH:
            reply(errors.ConcurrentTransactions(f"{meta.transactional_id}: the epoch is exhausted"))
            return
        fenced_epoch = meta.producer_epoch + 1
        self.journal(
            "txn_fenced",
            f"{meta.transactional_id}: a new producer initializes while the transaction of epoch "
            f"{meta.producer_epoch} is open: PrepareEpochFence, the epoch becomes {fenced_epoch} and the "
            "transaction is aborted under it",
            meta.transactional_id,
        )
        meta.state = TxnState.PREPARE_EPOCH_FENCE  # in memory only, until PrepareAbort is written

        def prepared(error: KafkaError | None) -> None:
            if error is not None and meta.state is TxnState.PREPARE_EPOCH_FENCE:
                meta.state = TxnState.ONGOING
            reply(
                error
                or errors.ConcurrentTransactions(
                    f"{meta.transactional_id}: aborting the open transaction of the fenced producer; retry"
                )
            )

        self._end(meta, commit=False, epoch=fenced_epoch, then=prepared)

    # ------------------------------------------------------------------ AddPartitionsToTxn / AddOffsetsToTxn

    def _check(self, transactional_id: str, producer_id: int, epoch: int) -> TransactionMetadata | KafkaError:
        """The id's metadata, or the error that refuses a request from this producer (Kafka's order)."""
        refused = self._not_here(transactional_id)
        if refused is not None:
            return refused
        meta = self.transactions.get(transactional_id)
        if meta is None:
            return errors.InvalidProducerIdMapping(
                f"{transactional_id} has no producer id (InitProducerId first)"
            )
        if meta.producer_id != producer_id:
            return errors.InvalidProducerIdMapping(
                f"{transactional_id} has producer id {meta.producer_id}, not {producer_id}"
            )
        if epoch != meta.producer_epoch:
            return errors.ProducerFenced(
                f"{transactional_id}: epoch {epoch} is not the current epoch {meta.producer_epoch}; "
                "a newer producer with this transactional.id has fenced this one"
            )
        if meta.pending:
            return errors.ConcurrentTransactions(f"{transactional_id} is busy: {meta.pending}")
        return meta

    def _on_add_partitions(self, env: Envelope) -> None:
        req: AddPartitionsToTxnRequest = env.body

        def answer(error: KafkaError | None) -> None:
            self._respond(
                env,
                AddPartitionsToTxnResponse(
                    error=error.name if error else None,
                    message=error.message if error else "",
                    partitions=dict.fromkeys(req.partitions, error.name if error else None),
                ),
            )

        self._add(req.transactional_id, req.producer_id, req.producer_epoch, set(req.partitions), answer)

    def _on_add_offsets(self, env: Envelope) -> None:
        req: AddOffsetsToTxnRequest = env.body
        offsets_partition = partition_for_group(
            req.group_id, self.broker.config.int("offsets.topic.num.partitions")
        )
        tp = TopicPartition(OFFSETS_TOPIC, offsets_partition)

        def answer(error: KafkaError | None) -> None:
            self._respond(
                env,
                AddOffsetsToTxnResponse(
                    error=error.name if error else None, message=error.message if error else ""
                ),
            )

        self._add(req.transactional_id, req.producer_id, req.producer_epoch, {tp}, answer)

    def _add(
        self, transactional_id: str, producer_id: int, epoch: int, tps: set[TopicPartition], then: Then
    ) -> None:
        found = self._check(transactional_id, producer_id, epoch)
        if isinstance(found, KafkaError):
            then(found)
            return
        meta = found
        if meta.state in PREPARED or meta.state is TxnState.PREPARE_EPOCH_FENCE:
            then(
                errors.ConcurrentTransactions(
                    f"{transactional_id} is completing a transaction ({meta.state.value})"
                )
            )
            return
        if meta.state is TxnState.ONGOING and tps <= meta.partitions:
            then(None)
            return
        starting = meta.state is not TxnState.ONGOING
        added = sorted(tps - meta.partitions)
        record = meta.record(
            state=TxnState.ONGOING,
            partitions=tuple(sorted(meta.partitions | tps)),
            start_ms=self.now_ms if starting else meta.start_ms,
            update_ms=self.now_ms,
        )

        def stored(error: KafkaError | None) -> None:
            if error is None:
                self.journal(
                    "txn_partitions_added",
                    f"{transactional_id} "
                    + ("begins a transaction with " if starting else "adds ")
                    + ", ".join(str(tp) for tp in added)
                    + " (AddPartitionsToTxn)",
                    transactional_id,
                )
            then(error)

        self._store(meta, record, "adding partitions", stored)

    # ------------------------------------------------------------------ EndTxn

    def _on_end_txn(self, env: Envelope) -> None:
        req: EndTxnRequest = env.body

        def answer(error: KafkaError | None) -> None:
            self._respond(
                env,
                EndTxnResponse(error=error.name if error else None, message=error.message if error else ""),
            )

        found = self._check(req.transactional_id, req.producer_id, req.producer_epoch)
        if isinstance(found, KafkaError):
            answer(found)
            return
        meta = found
        word = "commit" if req.committed else "abort"
        if meta.state is TxnState.ONGOING:
            self._end(meta, commit=req.committed, epoch=meta.producer_epoch, then=answer)
        elif meta.state is (TxnState.COMPLETE_COMMIT if req.committed else TxnState.COMPLETE_ABORT):
            answer(None)  # a retry of an EndTxn that completed
        elif meta.state is (TxnState.PREPARE_COMMIT if req.committed else TxnState.PREPARE_ABORT):
            answer(errors.ConcurrentTransactions(f"{meta.transactional_id} is completing its {word}"))
        else:
            answer(
                errors.InvalidTxnState(
                    f"{meta.transactional_id} cannot {word} in state {meta.state.value}"
                    + (": no transaction is open" if meta.state in COMPLETED else "")
                )
            )

    def _end(self, meta: TransactionMetadata, *, commit: bool, epoch: int, then: Then) -> None:
        """PrepareCommit or PrepareAbort, then (once written) the answer and the markers."""
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        record = meta.record(state=state, producer_epoch=epoch, update_ms=self.now_ms)

        def stored(error: KafkaError | None) -> None:
            if error is not None:
                then(error)
                return
            self.journal(
                "txn_prepared",
                f"{meta.transactional_id}: {state.value} written to {TRANSACTION_STATE_TOPIC}; the transaction "
                f"will {'commit' if commit else 'abort'} whatever happens now. Markers go to "
                + (", ".join(str(tp) for tp in sorted(meta.partitions)) or "no partition"),
                meta.transactional_id,
                state=state.value,
            )
            then(None)
            self._send_markers(meta)

        self._store(meta, record, state.value, stored)

    # ------------------------------------------------------------------ markers

    def _send_markers(self, meta: TransactionMetadata) -> None:
        meta.pending = "writing markers"
        self.broker.spawn(self._write_markers(meta), f"markers of {meta.transactional_id}")

    async def _write_markers(self, meta: TransactionMetadata) -> None:
        commit = meta.state is TxnState.PREPARE_COMMIT
        left = set(meta.partitions)
        while left:
            if not self._is_current(meta) or not self.broker.alive:
                return  # another coordinator completes it
            by_leader: dict[BrokerId, list[TopicPartition]] = {}
            for tp in sorted(left):
                info = self.broker.metadata.partitions.get(tp)
                if info is None and tp.topic not in {t.topic for t in self.broker.metadata.partitions}:
                    left.discard(tp)  # the topic was deleted: nothing to mark
                    continue
                if info is None or info.leader < 0 or info.leader not in self.broker.metadata.live_brokers:
                    continue
                by_leader.setdefault(info.leader, []).append(tp)
            for leader, tps in by_leader.items():
                request = WriteTxnMarkersRequest(
                    markers=(
                        TxnMarkerEntry(
                            producer_id=meta.producer_id,
                            producer_epoch=meta.producer_epoch,
                            committed=commit,
                            coordinator_epoch=meta.coordinator_epoch,
                            partitions=tuple(tps),
                        ),
                    )
                )
                try:
                    response = await self.broker.call(leader, request, timeout_ms=MARKER_TIMEOUT_MS)
                except KafkaError:
                    continue
                if not self._is_current(meta):
                    return
                assert isinstance(response, WriteTxnMarkersResponse)
                for tp, error in response.results.get(meta.producer_id, {}).items():
                    if error is None or error in ("INVALID_PRODUCER_EPOCH", "TRANSACTION_COORDINATOR_FENCED"):
                        # Written; or a newer marker is there already (Kafka drops the partition too).
                        left.discard(tp)
                    elif error == "UNKNOWN_TOPIC_OR_PARTITION" and tp not in self.broker.metadata.partitions:
                        left.discard(tp)
            if left:
                await self.broker.sleep(MARKER_RETRY_BACKOFF_MS)
        if not self._is_current(meta):
            return
        state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        record = meta.record(state=state, partitions=(), update_ms=self.now_ms)
        meta.pending = ""

        def stored(error: KafkaError | None) -> None:
            if error is not None:
                # Still prepared: a coordinator that loads it sends the markers again; this one retries.
                if self._is_current(meta) and self.broker.alive:
                    self.broker.later(MARKER_RETRY_BACKOFF_MS, self._send_markers, meta, label="complete txn")
                    meta.pending = "writing markers"
                return
            self.journal(
                "txn_completed",
                f"{meta.transactional_id}: every partition has its {'commit' if commit else 'abort'} marker; "
                f"{state.value}",
                meta.transactional_id,
                state=state.value,
            )

        self._store(meta, record, state.value, stored)

    def _on_write_txn_markers(self, env: Envelope) -> None:
        """A partition leader's side: write each marker, answer once the ISR has them all (acks=all)."""
        req: WriteTxnMarkersRequest = env.body
        results: dict[TopicPartition, ProducePartitionResult] = {}
        owner: dict[TopicPartition, int] = {}
        required: dict[TopicPartition, int] = {}
        answers: dict[int, dict[TopicPartition, str | None]] = {}
        for entry in req.markers:
            answers.setdefault(entry.producer_id, {})
            marker = Marker(
                producer_id=entry.producer_id,
                producer_epoch=entry.producer_epoch,
                commit=entry.committed,
                coordinator_epoch=entry.coordinator_epoch,
            )
            for tp in entry.partitions:
                error = self._write_marker(tp, marker, required)
                if error is not None:
                    answers[entry.producer_id][tp] = error.name
                else:
                    owner[tp] = entry.producer_id
                    results[tp] = ProducePartitionResult()

        def replicated(done: dict[TopicPartition, ProducePartitionResult]) -> None:
            for tp, result in done.items():
                answers[owner[tp]][tp] = result.error
            self._respond(env, WriteTxnMarkersResponse(results=answers))

        self.broker.await_replication(results, required, timeout_ms=MARKER_TIMEOUT_MS, respond=replicated)

    def _write_marker(
        self, tp: TopicPartition, marker: Marker, required: dict[TopicPartition, int]
    ) -> KafkaError | None:
        partition = self.broker.partitions.get(tp)
        if partition is None or not partition.is_leader:
            if partition is None and tp not in self.broker.metadata.partitions:
                return errors.UnknownTopicOrPartition(f"{tp} does not exist")
            return errors.NotLeaderOrFollower(f"broker {self.broker.id} is not the leader of {tp}")
        if len(partition.isr) < partition.min_insync_replicas:
            return errors.NotEnoughReplicas(
                f"the ISR {list(partition.isr)} of {tp} is smaller than min.insync.replicas"
            )
        try:
            info = partition.log.append_marker(
                marker, leader_epoch=partition.leader_epoch, now_ms=self.now_ms
            )
        except KafkaError as exc:
            return exc
        required[tp] = info.last_offset + 1
        self.broker._data_appended(tp)
        if tp.topic == OFFSETS_TOPIC:
            self.broker.groups.on_txn_marker(tp, marker.producer_id, commit=marker.commit)
        return None

    # ------------------------------------------------------------------ timeouts

    def abort_timed_out_transactions(self) -> None:
        """Kafka's abortTimedOutTransactions: an open transaction past its timeout is aborted under a
        bumped epoch, so the producer that left it open is fenced."""
        now = self.now_ms
        for meta in list(self.transactions.values()):
            if meta.state is not TxnState.ONGOING or meta.pending or now <= meta.start_ms + meta.timeout_ms:
                continue
            self.journal(
                "txn_timed_out",
                f"{meta.transactional_id}: transaction open for {now - meta.start_ms} ms, longer than its "
                f"transaction.timeout.ms={meta.timeout_ms}: the coordinator aborts it and bumps the epoch to "
                f"{meta.producer_epoch + 1} (its producer is fenced)",
                meta.transactional_id,
            )
            self._end(meta, commit=False, epoch=meta.producer_epoch + 1, then=lambda _e: None)

    # ------------------------------------------------------------------ Describe / List

    def _on_describe_transactions(self, env: Envelope) -> None:
        req: DescribeTransactionsRequest = env.body
        out = []
        for transactional_id in req.transactional_ids:
            refused = self._not_here(transactional_id)
            meta = self.transactions.get(transactional_id)
            if refused is None and meta is None:
                refused = errors.TransactionalIdNotFound(f"{transactional_id} is not known")
            if refused is not None or meta is None:
                assert refused is not None
                out.append(
                    DescribedTransaction(
                        transactional_id=transactional_id, error=refused.name, message=refused.message
                    )
                )
                continue
            out.append(
                DescribedTransaction(
                    transactional_id=transactional_id,
                    state=meta.state.value,
                    timeout_ms=meta.timeout_ms,
                    start_ms=meta.start_ms,
                    producer_id=meta.producer_id,
                    producer_epoch=meta.producer_epoch,
                    partitions=tuple(sorted(meta.partitions)),
                )
            )
        self._respond(env, DescribeTransactionsResponse(transactions=tuple(out)))

    def _on_list_transactions(self, env: Envelope) -> None:
        req: ListTransactionsRequest = env.body
        listed = tuple(
            ListedTransaction(
                transactional_id=m.transactional_id, producer_id=m.producer_id, state=m.state.value
            )
            for m in sorted(self.transactions.values(), key=lambda m: m.transactional_id)
            if (not req.state_filters or m.state.value in req.state_filters)
            and (not req.producer_id_filters or m.producer_id in req.producer_id_filters)
        )
        self._respond(env, ListTransactionsResponse(transactions=listed))

    # ------------------------------------------------------------------ writing __transaction_state

    def _store(self, meta: TransactionMetadata, record: TxnRecord, why: str, then: Then) -> None:
        """Append the id's new state (acks=all); it takes effect once the ISR has it."""
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, self._partition_of(meta.transactional_id))
        batch = build_batch([(_key(meta.transactional_id), record.encode())], timestamp_ms=self.now_ms)
        meta.pending = why

        def done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
            if not self._is_current(meta):
                then(
                    errors.NotCoordinator(
                        f"broker {self.broker.id} no longer coordinates {meta.transactional_id}"
                    )
                )
                return
            meta.pending = ""
            result = results[tp]
            if result.error is None:
                meta.apply(record)
                then(None)
            elif result.error in ("NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION"):
                then(errors.NotCoordinator(f"broker {self.broker.id} lost {tp}: {result.message}"))
            else:
                then(errors.CoordinatorNotAvailable(f"{tp}: {result.error} {result.message}"))

        self.broker.append_records({tp: batch}, acks=-1, timeout_ms=STATE_WRITE_TIMEOUT_MS, respond=done)

    # ------------------------------------------------------------------ for snapshots

    def describe(self, meta: TransactionMetadata) -> dict[str, Any]:
        return {
            "state": meta.state.value,
            "producer_id": meta.producer_id,
            "producer_epoch": meta.producer_epoch,
            "partitions": [[tp.topic, tp.partition] for tp in sorted(meta.partitions)],
            "coordinator": self.broker.id,
            # The __transaction_state partition the id hashes to: its leader is the coordinator.
            "state_partition": self._partition_of(meta.transactional_id),
            "coordinator_epoch": meta.coordinator_epoch,
            "timeout_ms": meta.timeout_ms,
            "start_ms": meta.start_ms,
            # When the coordinator will abort it (an open transaction only).
            "deadline_ms": meta.start_ms + meta.timeout_ms if meta.state is TxnState.ONGOING else None,
            "pending": meta.pending,
        }


def transaction_coordinator_of(
    brokers: Mapping[BrokerId, Broker], transactional_id: str
) -> tuple[Broker, TransactionMetadata] | None:
    """The live broker that coordinates ``transactional_id`` now, with its metadata."""
    for broker in brokers.values():
        coordinator = broker.transactions
        if (
            broker.alive
            and transactional_id in coordinator.transactions
            and coordinator._partition_of(transactional_id) in coordinator.partitions
        ):
            return broker, coordinator.transactions[transactional_id]
    return None
