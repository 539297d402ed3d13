"""Simulated clients: producers and consumers a lab adds, as engine actors on the virtual clock.

A simulated producer sends at a rate, with keys drawn from a small set (or
none); a simulated consumer is a group member that polls, takes
``processing_ms`` per record, and commits what it processed (commits follow
processing: at-least-once). Its session is the lab's (session.timeout.ms 6 s,
heartbeats every 2 s; Kafka's defaults are 45 s and 3 s), so a crash shows
as a rebalance while a class watches. Each keeps counters so a page can show
what a client was told beside what is really in the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lab.engine.clients import ConsumerRecord, Producer
from lab.engine.errors import IllegalArgument, KafkaError
from lab.engine.ids import TopicPartition
from lab.engine.membership import GroupConsumer
from lab.engine.scheduler import Scheduler, Timer

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster

TICK_MS = 10  # a producer sends at most once per tick, as many records as its rate asks for


class SimulatedProducer:
    kind = "producer"

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        topic: str,
        *,
        rate_per_s: float,
        keys: int | None,
        acks: str,
        principal: str | None = None,
        **config: object,
    ) -> None:
        if rate_per_s <= 0 or rate_per_s > 100_000:
            raise IllegalArgument(f"rate_per_s must be in (0, 100000], not {rate_per_s}")
        if keys is not None and keys < 1:
            raise IllegalArgument("keys must be at least 1 (or None for records without keys)")
        self.cluster = cluster
        self.name = name
        self.topic = topic
        self.rate_per_s = rate_per_s
        self.keys = keys
        self.producer: Producer = cluster.producer(acks, client_id=name, principal=principal, **config)
        self.state = "running"
        self.seq = 0
        self._owed = 0.0
        # Each tick owes the records of the time since the last one; the first tick, now, sends at once.
        self._last_tick_ms = cluster.scheduler.now_ms - self._interval_ms()
        self._timer: Timer | None = cluster.scheduler.call_soon(self._tick, label=f"{name} tick")

    def _interval_ms(self) -> int:
        return max(TICK_MS, round(1000 / self.rate_per_s))

    def _tick(self) -> None:
        self._timer = None
        if self.state != "running":
            return
        now = self.cluster.scheduler.now_ms
        self._owed += self.rate_per_s * (now - self._last_tick_ms) / 1000
        self._last_tick_ms = now
        rng = self.cluster.scheduler.rng
        while self._owed >= 1:
            self._owed -= 1
            key = None if self.keys is None else f"key-{rng.randrange(self.keys)}"
            self.producer.send(self.topic, f"{self.name}-{self.seq}", key=key)
            self.seq += 1
        self._timer = self.cluster.scheduler.call_later(
            self._interval_ms(), self._tick, label=f"{self.name} tick"
        )

    def set_rate(self, rate_per_s: float) -> None:
        if rate_per_s <= 0 or rate_per_s > 100_000:
            raise IllegalArgument(f"rate_per_s must be in (0, 100000], not {rate_per_s}")
        if self.state == "running":
            # The old rate held until now; the next tick comes at the new rate's interval.
            now = self.cluster.scheduler.now_ms
            self._owed += self.rate_per_s * (now - self._last_tick_ms) / 1000
            self._last_tick_ms = now
            Scheduler.cancel(self._timer)
            self._timer = self.cluster.scheduler.call_later(
                max(TICK_MS, round(1000 / rate_per_s)), self._tick, label=f"{self.name} tick"
            )
        self.rate_per_s = rate_per_s

    def stop(self) -> None:
        """Stop sending; what is in flight still gets its answer."""
        self.state = "stopped"
        Scheduler.cancel(self._timer)

    def crash(self) -> None:
        """Die: what was not sent yet is lost, answers in flight go nowhere."""
        self.state = "crashed"
        Scheduler.cancel(self._timer)
        self.producer.close()

    def describe(self) -> dict[str, Any]:
        p = self.producer
        return {
            "name": self.name,
            "kind": "producer",
            "state": self.state,
            "topic": self.topic,
            "rate": self.rate_per_s,
            "keys": self.keys,
            "acks": {-1: "all", 0: "0", 1: "1"}[p.acks],
            "principal": p.principal,
            "sent": p.sent,
            "acked": p.acked,
            "failed": p.failed,
            "retried": p.retried,
            "unanswered": p.unanswered,
        }


class SimulatedConsumer:
    kind = "consumer"

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        group: str,
        topics: Sequence[str],
        *,
        processing_ms: int,
        principal: str | None = None,
        **config: object,
    ) -> None:
        if processing_ms < 0:
            raise IllegalArgument("processing_ms must be >= 0")
        self.cluster = cluster
        self.name = name
        self.group = group
        self.topics = tuple(topics)
        self.processing_ms = processing_ms
        # The lab's session and heartbeat defaults (6 s, 2 s) come with every consumer's config.
        settings: dict[str, object] = {"enable.auto.commit": "false", "auto.offset.reset": "earliest"}
        given = {k.replace("_", "."): v for k, v in config.items()}
        session = str(given.get("session.timeout.ms", "")).strip()
        if session.isdigit() and "heartbeat.interval.ms" not in given:
            # A third of the session, as Kafka advises (the lab's default heartbeat suits its default session).
            given["heartbeat.interval.ms"] = max(1, int(session) // 3)
        settings.update(given)
        consumer = cluster.consumer(group_id=group, client_id=name, principal=principal, **settings)
        assert isinstance(consumer, GroupConsumer)
        self.consumer = consumer
        consumer.on_records = self._wake
        consumer.on_revoked = self._revoked
        consumer.on_lost = self._lost
        consumer.subscribe(self.topics)
        self.state = "running"
        self.processed: list[tuple[TopicPartition, int, bytes | None]] = []
        self._done: dict[TopicPartition, int] = {}  # next offset to commit, per partition
        self._busy = False
        self._timer: Timer | None = cluster.scheduler.call_later(100, self._poll, label=f"{name} poll")
        self.errors: list[str] = []

    def _wake(self) -> None:
        if not self._busy and self.state == "running" and self._timer is None:
            self._timer = self.cluster.scheduler.call_soon(self._poll, label=f"{self.name} poll")

    def _poll(self) -> None:
        self._timer = None
        if self.state != "running":
            return
        try:
            records = self.consumer.take()
        except KafkaError as exc:
            self.errors.append(str(exc))
            records = []
        if not records:
            self._timer = self.cluster.scheduler.call_later(100, self._poll, label=f"{self.name} poll")
            return
        self._busy = True
        self.cluster.scheduler.call_later(
            self.processing_ms * len(records), self._processed, records, label=f"{self.name} processing"
        )

    def _processed(self, records: list[ConsumerRecord]) -> None:
        self._busy = False
        if self.state != "running":
            return
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            self.processed.append((tp, r.offset, r.value))
            self._done[tp] = r.offset + 1
        self._commit()
        self._poll()

    def _commit(self) -> None:
        mine = {
            (tp.topic, tp.partition): o for tp, o in self._done.items() if tp in self.consumer.assignment()
        }
        if mine:
            try:
                self.consumer.commit_async(mine)
            except KafkaError as exc:
                self.errors.append(str(exc))

    def _revoked(self, tps: list[TopicPartition]) -> None:
        """Before giving partitions up, commit what was processed on them (Kafka's onPartitionsRevoked)."""
        mine = {(tp.topic, tp.partition): self._done[tp] for tp in tps if tp in self._done}
        if mine and self.consumer.state != "closed":
            try:
                self.consumer.commit_async(mine)
            except KafkaError as exc:
                self.errors.append(str(exc))
        for tp in tps:
            self._done.pop(tp, None)

    def _lost(self, tps: list[TopicPartition]) -> None:
        """Fenced out (Kafka's onPartitionsLost): the partitions may be someone else's already, so
        what was processed on them is not committed; the new owner reads it again (at-least-once)."""
        for tp in tps:
            self._done.pop(tp, None)

    def stop(self) -> None:
        """Leave cleanly: commit what was processed, then LeaveGroup."""
        if self.state != "running":
            return
        self.state = "stopped"
        Scheduler.cancel(self._timer)
        self._commit()
        self.consumer.close()

    def crash(self) -> None:
        """Die without a word: the group notices only when session.timeout.ms passes."""
        if self.state != "running":
            return
        self.state = "crashed"
        Scheduler.cancel(self._timer)
        self.consumer.crash()

    def describe(self) -> dict[str, Any]:
        c = self.consumer
        return {
            "name": self.name,
            "kind": "consumer",
            "state": self.state,
            "group": self.group,
            "topics": list(self.topics),
            "processing_ms": self.processing_ms,
            "principal": c.principal,
            "member_id": c.member_id,
            "member_state": c.state,
            "generation": c.generation,
            "assignment": [[tp.topic, tp.partition] for tp in c.assignment()],
            "consumed": len(self.processed),
            "rebalances": c.rebalances,
            "errors": self.errors[-3:],
        }


class SimulatedTransformer:
    """A consume-transform-produce worker, exactly once (KIP-98): a group member that reads
    ``source`` with read_committed, writes each record, transformed, to ``target`` in a transaction,
    and sends its consumed offsets to the same transaction (send_offsets_to_transaction), so the
    output and the progress commit together or not at all. A failed transaction is aborted and its
    records are read again from the last committed positions; a fenced worker stops."""

    kind = "transformer"

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        group: str,
        source: str,
        target: str,
        *,
        processing_ms: int,
        transactional_id: str,
        records_per_transaction: int = 10,
        principal: str | None = None,
        **config: Any,
    ) -> None:
        if processing_ms < 0:
            raise IllegalArgument("processing_ms must be >= 0")
        if not 1 <= records_per_transaction <= 10_000:
            raise IllegalArgument("records_per_transaction must be in [1, 10000]")
        self.cluster = cluster
        self.name = name
        self.group = group
        self.records_per_transaction = records_per_transaction
        self.source = source
        self.target = target
        self.processing_ms = processing_ms
        consumer = cluster.consumer(
            group_id=group,
            client_id=f"{name}-consumer",
            enable_auto_commit="false",
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            principal=principal,
        )
        assert isinstance(consumer, GroupConsumer)
        self.consumer = consumer
        consumer.on_records = self._wake
        consumer.subscribe([source])
        self.producer: Producer = cluster.producer(
            "all",
            client_id=f"{name}-producer",
            principal=principal,
            transactional_id=transactional_id,
            **config,
        )
        self.txn = self.producer.txn
        assert self.txn is not None
        self.state = "starting"
        self.transformed = 0  # records written in committed transactions
        self.errors: list[str] = []
        self._busy = True
        self._timer: Timer | None = None
        self._then(self.txn.start_init(), self._ready)

    def _then(self, task: Any, next_step: Any) -> None:
        def done(outcome: Any) -> None:
            error = outcome.failed_with()
            if self.state in ("stopped", "crashed"):
                return
            if error is not None:
                self._failed(error)
            else:
                next_step()

        task.outcome.add_done_callback(done)

    def _ready(self) -> None:
        self.state = "running"
        self._busy = False
        self._poll()

    def _wake(self) -> None:
        if not self._busy and self.state == "running" and self._timer is None:
            self._timer = self.cluster.scheduler.call_soon(self._poll, label=f"{self.name} poll")

    def _poll(self) -> None:
        self._timer = None
        if self.state != "running" or self._busy:
            return
        try:
            records = self.consumer.take(self.records_per_transaction)
        except KafkaError as exc:
            self.errors.append(str(exc))
            records = []
        if not records:
            self._timer = self.cluster.scheduler.call_later(100, self._poll, label=f"{self.name} poll")
            return
        self._busy = True
        self.cluster.scheduler.call_later(
            self.processing_ms * len(records), self._transform, records, label=f"{self.name} processing"
        )

    def _transform(self, records: list[ConsumerRecord]) -> None:
        if self.state != "running":
            return
        assert self.txn is not None
        firsts: dict[TopicPartition, int] = {}
        offsets: dict[TopicPartition, int] = {}
        try:
            self.txn.begin_transaction()
            for r in records:
                tp = TopicPartition(r.topic, r.partition)
                firsts.setdefault(tp, r.offset)
                offsets[tp] = r.offset + 1
                value = None if r.value is None else r.value.upper()
                self.producer.send(self.target, value, key=r.key)
            consumer = self.consumer
            task = self.txn.start_send_offsets(
                offsets, self.group, consumer.generation, consumer.member_id, consumer.instance_id or None
            )
        except KafkaError as exc:
            self._failed(exc, firsts)
            return
        self._pending = (len(records), firsts)
        self._then(task, self._commit)

    def _commit(self) -> None:
        assert self.txn is not None
        self._then(self.txn.start_commit(), self._committed)

    def _committed(self) -> None:
        self.transformed += self._pending[0]
        self._busy = False
        self._poll()

    def _failed(self, error: BaseException, firsts: dict[TopicPartition, int] | None = None) -> None:
        self.errors.append(str(error))
        assert self.txn is not None
        if error.__class__.__name__ == "ProducerFenced" or self.txn.state.value == "FATAL_ERROR":
            self.state = "fenced"  # a newer worker with this transactional.id took over
            self.consumer.close()
            return
        rewind = firsts if firsts is not None else getattr(self, "_pending", (0, {}))[1]
        for tp, offset in rewind.items():
            if tp in self.consumer.assignment():
                self.consumer.seek(tp.topic, tp.partition, offset)  # read it again in the next transaction
        if self.txn.state.value in ("IN_TRANSACTION", "ABORTABLE_ERROR"):
            self._then(self.txn.start_abort(), self._ready)
        elif self.txn.state.value == "UNINITIALIZED":
            self._then(self.txn.start_init(), self._ready)
        else:
            self._busy = False
            self._timer = self.cluster.scheduler.call_later(500, self._poll, label=f"{self.name} retry")

    def stop(self) -> None:
        if self.state in ("stopped", "crashed"):
            return
        self.state = "stopped"
        Scheduler.cancel(self._timer)
        self.consumer.close()
        self.producer.close()

    def crash(self) -> None:
        if self.state in ("stopped", "crashed"):
            return
        self.state = "crashed"
        Scheduler.cancel(self._timer)
        self.consumer.crash()
        self.producer.close()

    def describe(self) -> dict[str, Any]:
        assert self.txn is not None
        return {
            "name": self.name,
            "kind": "transformer",
            "state": self.state,
            "group": self.group,
            "source": self.source,
            "target": self.target,
            "processing_ms": self.processing_ms,
            "transformed": self.transformed,
            "transaction": self.txn.describe(),
            "producer_id": self.producer.producer_id,
            "producer_epoch": self.producer.producer_epoch,
            "errors": self.errors[-3:],
        }
