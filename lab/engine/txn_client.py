"""A transactional producer's side of transactions: Kafka's TransactionManager (KIP-98).

A producer with ``transactional.id`` gets its producer id and epoch from its transaction
coordinator (``init_transactions``: FindCoordinator key_type=1, then InitProducerId, which fences
any older producer with the same id), and then runs transactions:

    begin_transaction()                       local: nothing is sent
    send(...)                                 a partition's first batch waits for AddPartitionsToTxn
    send_offsets_to_transaction(offsets, g)   AddOffsetsToTxn, then TxnOffsetCommit to g's coordinator
    commit_transaction() / abort_transaction()  flush, then EndTxn

States and errors are Kafka's: a call out of order raises ILLEGAL_STATE with Kafka's words
("Invalid transition attempted from state READY to state COMMITTING_TRANSACTION"); a producer
fenced by a newer one is in FATAL_ERROR and every call raises PRODUCER_FENCED; a batch that failed
puts the transaction in ABORTABLE_ERROR: commit raises that error, abort recovers.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lab.engine import errors
from lab.engine.errors import KafkaError
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.protocol import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from lab.engine.tasks import Pending, Task

if TYPE_CHECKING:
    from lab.engine.clients import Producer

# Errors a coordinator answers that mean "ask again" (after finding it again for the first three).
_FIND_AGAIN = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")
_RETRY = (*_FIND_AGAIN, "CONCURRENT_TRANSACTIONS", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "TIMEOUT")
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20
_FATAL = ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionManager:
    def __init__(self, producer: Producer, transactional_id: str, timeout_ms: int) -> None:
        self.producer = producer
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.state = TxnState.UNINITIALIZED
        self.last_error: KafkaError | None = None
        self.coordinator: BrokerId | None = None
        self.partitions: set[TopicPartition] = set()  # in the transaction (the coordinator knows them)
        self._new_partitions: set[TopicPartition] = set()  # sent to, not yet added
        self._adding: Task[None] | None = None
        self._add_due = False
        self.committed = 0  # transactions committed, aborted (for the pictures)
        self.aborted = 0

    # ------------------------------------------------------------------ state

    def _transition(self, target: TxnState) -> None:
        if self.state is TxnState.FATAL_ERROR:
            assert self.last_error is not None
            raise self.last_error
        allowed = {
            TxnState.INITIALIZING: (TxnState.UNINITIALIZED,),
            TxnState.READY: (
                TxnState.INITIALIZING,
                TxnState.COMMITTING_TRANSACTION,
                TxnState.ABORTING_TRANSACTION,
            ),
            TxnState.IN_TRANSACTION: (TxnState.READY,),
            TxnState.COMMITTING_TRANSACTION: (TxnState.IN_TRANSACTION,),
            TxnState.ABORTING_TRANSACTION: (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR),
        }[target]
        if self.state is TxnState.ABORTABLE_ERROR and target is not TxnState.ABORTING_TRANSACTION:
            assert self.last_error is not None
            raise self.last_error
        if self.state not in allowed:
            raise errors.IllegalState(
                f"TransactionalId {self.transactional_id}: Invalid transition attempted from state "
                f"{self.state.value} to state {target.value}"
            )
        self.state = target

    def _fatal(self, error: KafkaError) -> KafkaError:
        if error.name in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
            error = errors.ProducerFenced(
                f"{self.transactional_id}: there is a newer producer with the same transactional.id which "
                f"fences this one ({error.message})"
            )
        self.state = TxnState.FATAL_ERROR
        self.last_error = error
        self._journal("producer_fenced", f"{self.producer.client_id}: {error}")
        self.producer._abort_undrained(error)  # what waits to be sent never will be
        return error

    def _abortable(self, error: KafkaError) -> None:
        if self.state is TxnState.FATAL_ERROR:
            return
        if error.name in _FATAL and error.name != "INVALID_PRODUCER_EPOCH":
            self._fatal(error)
            return
        if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION):
            self.state = TxnState.ABORTABLE_ERROR
            self.last_error = error
            # The transaction can only abort now: what waits to be sent fails with the error.
            self.producer._abort_undrained(error)

    def _journal(self, kind: str, text: str) -> None:
        self.producer.host.journal.record(
            kind, text, client=self.producer.client_id, transactional_id=self.transactional_id
        )

    # ------------------------------------------------------------------ what the producer asks

    def check_send(self) -> None:
        """Kafka's failIfNotReadyForSend."""
        if self.state in (TxnState.FATAL_ERROR, TxnState.ABORTABLE_ERROR):
            assert self.last_error is not None
            raise self.last_error
        if self.producer.producer_id < 0:
            raise errors.IllegalState(
                "Cannot perform a 'send' before completing a call to initTransactions when transactions are enabled."
            )
        if self.state is not TxnState.IN_TRANSACTION:
            raise errors.IllegalState(f"Cannot call send in state {self.state.value}")

    def may_send(self, tp: TopicPartition) -> bool:
        """A batch for ``tp`` may go once ``tp`` is in the transaction; until then AddPartitionsToTxn."""
        if tp in self.partitions:
            return self.state in (
                TxnState.IN_TRANSACTION,
                TxnState.COMMITTING_TRANSACTION,
                TxnState.ABORTING_TRANSACTION,
            )
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION):
            return False
        self._new_partitions.add(tp)
        if self._adding is None and not self._add_due:
            # After this pass of the sender, so every partition it finds new goes in one request.
            self._add_due = True
            self.producer.scheduler.call_soon(
                self._start_adding, label=f"{self.producer.client_id} AddPartitionsToTxn"
            )
        return False

    def _start_adding(self) -> None:
        self._add_due = False
        if self._adding is None and self._new_partitions:
            self._adding = Task.start(self._add_partitions(), f"{self.producer.client_id} AddPartitionsToTxn")

    def batch_failed(self, error: KafkaError) -> None:
        self._abortable(error)

    # ------------------------------------------------------------------ the API
    # Each call checks the state at once (Kafka's errors by name), then runs as a Task: the producer's
    # blocking methods wait for it (driving the clock, as Kafka's block), a simulated client does not.

    def init_transactions(self, timeout_ms: int) -> None:
        self._wait(self.start_init(), timeout_ms, "initTransactions")

    def start_init(self) -> Task[None]:
        self._transition(TxnState.INITIALIZING)
        return Task.start(self._init_flow(), "initTransactions")

    async def _init_flow(self) -> None:
        await self._init()
        self.state = TxnState.READY

    def begin_transaction(self) -> None:
        if self.producer.producer_id < 0 and self.state is TxnState.UNINITIALIZED:
            raise errors.IllegalState(
                "Cannot call beginTransaction before initTransactions: the producer has no producer id"
            )
        self._transition(TxnState.IN_TRANSACTION)
        self.partitions = set()
        self._new_partitions = set()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_id: str,
        *,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        timeout_ms: int,
    ) -> None:
        task = self.start_send_offsets(offsets, group_id, generation_id, member_id, group_instance_id)
        self._wait(task, timeout_ms, "sendOffsetsToTransaction")

    def start_send_offsets(
        self,
        offsets: Mapping[TopicPartition, int],
        group_id: str,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> Task[None]:
        if self.state is not TxnState.IN_TRANSACTION:
            self._transition(TxnState.IN_TRANSACTION)  # raises Kafka's error for the state it is in
        return Task.start(
            self._send_offsets(offsets, group_id, generation_id, member_id, group_instance_id),
            "sendOffsetsToTransaction",
        )

    def commit_transaction(self, timeout_ms: int) -> None:
        self._wait(self.start_commit(), timeout_ms, "commitTransaction")

    def start_commit(self) -> Task[None]:
        self._transition(TxnState.COMMITTING_TRANSACTION)
        self.producer._settle_fast()  # send() appends on its own no more: the next checks the state
        return Task.start(self._commit_flow(), "commitTransaction")

    async def _commit_flow(self) -> None:
        await self._drain()
        if self.state is not TxnState.COMMITTING_TRANSACTION:
            assert self.last_error is not None
            raise self.last_error
        await self._end(commit=True)
        self.committed += 1
        self.state = TxnState.READY

    def abort_transaction(self, timeout_ms: int) -> None:
        self._wait(self.start_abort(), timeout_ms, "abortTransaction")

    def start_abort(self) -> Task[None]:
        self._transition(TxnState.ABORTING_TRANSACTION)
        self.producer._settle_fast()
        self.producer._abort_undrained(
            errors.TransactionAborted(
                f"{self.transactional_id}: the transaction was aborted before this was sent"
            )
        )
        return Task.start(self._abort_flow(), "abortTransaction")

    async def _abort_flow(self) -> None:
        await self._drain()
        await self._end(commit=False)
        if self.producer._epoch_bump_needed:
            # A batch's sequence was lost: the coordinator bumps the epoch (KIP-360), sequences start again.
            await self._init(bump=True)
        self.aborted += 1
        self.state = TxnState.READY

    # ------------------------------------------------------------------ flows

    async def _drain(self) -> None:
        """Until every record sent has its answer (Kafka's flush before EndTxn)."""
        producer = self.producer
        while producer.unanswered and not producer.closed:
            producer._flushing = True
            producer._kick(0)
            await producer.until_drained()
        producer._flushing = False

    def _wait(self, task: Task[None], timeout_ms: int, what: str) -> None:
        if not self.producer.host.run_until_true(task.outcome.done, timeout_ms):
            task.cancel()
            self.producer._flushing = False
            raise errors.KafkaTimeout(f"Timeout expired after {timeout_ms} ms while awaiting {what}")
        error = task.outcome.failed_with()
        if error is not None:
            raise error

    def _ask(self, broker: BrokerId, request: Any) -> Pending[Any]:
        out: Pending[Any] = Pending()
        self.producer.endpoint.request(
            broker, request, out.resolve, timeout_ms=self.producer.request_timeout_ms
        )
        return out

    def _backoff(self, delay_ms: int | None = None) -> Pending[None]:
        out: Pending[None] = Pending()
        backoff = self.producer.retry_backoff_ms
        delay = backoff if delay_ms is None else min(delay_ms, backoff)
        self.producer.scheduler.call_later(delay, out.resolve, None, label="txn backoff")
        return out

    async def _find(self, key: str, key_type: int) -> BrokerId:
        attempt = 0
        while True:
            brokers = self.producer.host.bootstrap_brokers()
            broker = brokers[attempt % len(brokers)]
            attempt += 1
            response = await self._ask(broker, FindCoordinatorRequest(key=key, key_type=key_type))
            if isinstance(response, FindCoordinatorResponse) and response.error is None:
                return response.node_id
            await self._backoff()

    async def _coordinator_call(self, make: Callable[[], Any]) -> Any:
        """Ask the transaction coordinator, finding it (again) and retrying while Kafka would."""
        while True:
            if self.coordinator is None:
                self.coordinator = await self._find(self.transactional_id, 1)
            response = await self._ask(self.coordinator, make())
            error = response.name if isinstance(response, KafkaError) else response.error
            if error is None:
                return response
            if isinstance(response, KafkaError) or error in _FIND_AGAIN:
                self.coordinator = None
            if error not in _RETRY and not isinstance(response, KafkaError):
                raise errors.from_wire(error, response.message)
            if error == "CONCURRENT_TRANSACTIONS" and isinstance(make(), AddPartitionsToTxnRequest):
                # The previous transaction's markers are still being written: Kafka's producer asks
                # again sooner than retry.backoff.ms (ADD_PARTITIONS_RETRY_BACKOFF_MS, 20 ms).
                await self._backoff(ADD_PARTITIONS_RETRY_BACKOFF_MS)
                continue
            await self._backoff()

    async def _init(self, *, bump: bool = False) -> None:
        producer = self.producer
        try:
            response = await self._coordinator_call(
                lambda: InitProducerIdRequest(
                    transactional_id=self.transactional_id,
                    transaction_timeout_ms=self.timeout_ms,
                    producer_id=producer.producer_id if bump else -1,
                    producer_epoch=producer.producer_epoch if bump else -1,
                )
            )
        except KafkaError as error:
            if error.name in _FATAL:
                raise self._fatal(error) from None
            self.state = TxnState.UNINITIALIZED if not bump else self.state
            raise
        assert isinstance(response, InitProducerIdResponse)
        producer._new_epoch(response.producer_id, response.producer_epoch)
        self._journal(
            "producer_id",
            f"{producer.client_id}: transactional.id {self.transactional_id} has producer id "
            f"{response.producer_id}, epoch {response.producer_epoch} (InitProducerId to coordinator "
            f"{self.coordinator})",
        )

    async def _add_partitions(self) -> None:
        try:
            while self._new_partitions and self.state is not TxnState.FATAL_ERROR:
                adding = tuple(sorted(self._new_partitions))
                try:
                    response = await self._coordinator_call(functools.partial(self._add_request, adding))
                except KafkaError as error:
                    if error.name in _FATAL:
                        self._fatal(error)
                    else:
                        self._abortable(error)
                    return
                assert isinstance(response, AddPartitionsToTxnResponse)
                self.partitions.update(adding)
                self._new_partitions.difference_update(adding)
        finally:
            self._adding = None
            self.producer._kick(0)

    def _add_request(self, partitions: tuple[TopicPartition, ...]) -> AddPartitionsToTxnRequest:
        return AddPartitionsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.producer.producer_id,
            producer_epoch=self.producer.producer_epoch,
            partitions=partitions,
        )

    async def _send_offsets(
        self,
        offsets: Mapping[TopicPartition, int],
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> None:
        producer = self.producer
        try:
            await self._coordinator_call(
                lambda: AddOffsetsToTxnRequest(
                    transactional_id=self.transactional_id,
                    producer_id=producer.producer_id,
                    producer_epoch=producer.producer_epoch,
                    group_id=group_id,
                )
            )
            group_coordinator: BrokerId | None = None
            while True:
                if group_coordinator is None:
                    group_coordinator = await self._find(group_id, 0)
                response = await self._ask(
                    group_coordinator,
                    TxnOffsetCommitRequest(
                        transactional_id=self.transactional_id,
                        group_id=group_id,
                        producer_id=producer.producer_id,
                        producer_epoch=producer.producer_epoch,
                        offsets=dict(offsets),
                        generation_id=generation_id,
                        member_id=member_id,
                        group_instance_id=group_instance_id,
                    ),
                )
                if isinstance(response, KafkaError) or response.error in _FIND_AGAIN:
                    group_coordinator = None
                elif response.error is not None:
                    raise errors.from_wire(response.error, response.message)
                else:
                    assert isinstance(response, TxnOffsetCommitResponse)
                    break
                await self._backoff()
        except KafkaError as error:
            if error.name in _FATAL:
                raise self._fatal(error) from None
            self._abortable(error)
            raise
        self._journal(
            "txn_offsets_sent",
            f"{producer.client_id}: offsets of group {group_id} sent to the transaction "
            f"({', '.join(f'{tp}={o}' for tp, o in sorted(offsets.items()))})",
        )

    async def _end(self, *, commit: bool) -> None:
        if not self.partitions and not self._new_partitions:
            return  # nothing was added: the coordinator never heard of this transaction
        producer = self.producer
        try:
            await self._coordinator_call(
                lambda: EndTxnRequest(
                    transactional_id=self.transactional_id,
                    producer_id=producer.producer_id,
                    producer_epoch=producer.producer_epoch,
                    committed=commit,
                )
            )
        except KafkaError as error:
            if error.name in _FATAL:
                raise self._fatal(error) from None
            if commit:
                self._abortable(error)
            raise
        self.partitions = set()
        self._new_partitions = set()
        self._journal(
            "txn_committed" if commit else "txn_aborted",
            f"{producer.client_id}: transaction of {self.transactional_id} "
            + ("committed" if commit else "aborted")
            + " (EndTxn answered: the coordinator writes the markers)",
        )

    def describe(self) -> dict[str, Any]:
        return {
            "transactional_id": self.transactional_id,
            "state": self.state.value,
            "producer_id": self.producer.producer_id,
            "producer_epoch": self.producer.producer_epoch,
            "partitions": [[tp.topic, tp.partition] for tp in sorted(self.partitions)],
            "committed": self.committed,
            "aborted": self.aborted,
            "error": None if self.last_error is None else self.last_error.name,
        }
