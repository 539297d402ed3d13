"""Running a scenario against a cluster, one step at a time, whatever drives the clock.

``ScenarioRun.advance()`` runs steps until one needs time to pass (a wait, a produce waiting for
its answers, a wait_until) and returns the virtual time at which to call it again; ``None`` once
the scenario is over. The command line and the API drive a memory-store cluster with
``run_to_end``; the live dashboard calls ``advance`` from its driver thread each frame, so a
scenario plays, pauses and steps with the lab's clock.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lab.engine.acl import AclBinding, AclFilter, parse_binding
from lab.engine.clients import ConsumerRecord, Producer, RecordMetadata
from lab.engine.cluster import Cluster
from lab.engine.errors import KafkaError, KafkaTimeout
from lab.engine.ids import TopicPartition
from lab.engine.tasks import Pending, Task
from lab.engine.txn_client import TransactionManager
from lab.scenarios.format import PRODUCER_FIELDS, Scenario, Step

POLL_MS = 50  # how often a waiting step looks again, in virtual ms
# The facade's bounds on its waits, which a step that waits the runner's way keeps.
ANSWER_MS = 30_000  # ZooKeeper's answer to an admin write
LEADERS_MS = 30_000  # a new topic's (or partitions') leaders; a deleted topic's znodes going
CONFIG_MS = 10_000  # the controller reading a config change
MAX_VIRTUAL_MS = 3_600_000  # the virtual time a run may take, from its start, where its driver owns the clock

T = TypeVar("T")


def _timed_out(ms: int, what: str) -> str:
    """What a step says when it waited too long: the facade's KAFKA_TIMEOUT, word for word."""
    return str(KafkaTimeout(f"timed out after {ms} ms waiting for {what}"))


@dataclass(slots=True)
class Check:
    what: str
    expected: Any
    actual: Any
    ok: bool


@dataclass(slots=True)
class StepResult:
    index: int
    line: int
    label: str
    ok: bool
    detail: str = ""
    checks: list[Check] = field(default_factory=list)
    time_ms: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "line": self.line,
            "label": self.label,
            "ok": self.ok,
            "detail": self.detail,
            "time_ms": self.time_ms,
            "checks": [
                {"what": c.what, "expected": c.expected, "actual": c.actual, "ok": c.ok} for c in self.checks
            ],
        }


@dataclass(slots=True)
class _Waiting:
    due_ms: int
    poll: Callable[[], bool] | None = None  # True once done; None: done at due_ms
    deadline_ms: int | None = None
    on_timeout: Callable[[], str] | None = None
    succeed_on_timeout: bool = False
    then: Callable[[], None] | None = None  # once poll is true: the step goes on (and may wait again)
    error: KafkaError | None = None  # what poll raised: the step fails with it


class ScenarioRun:
    def __init__(self, scenario: Scenario, cluster: Cluster) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.index = 0
        self.results: list[StepResult] = []
        self.producers: dict[str, Producer] = {}
        self.sent: dict[str, list[Pending[RecordMetadata]]] = {}
        self.consumed: dict[str, list[ConsumerRecord]] = {}
        self.readers: dict[str, Any] = {}
        self.start_seq = cluster.journal.last_seq
        self.start_ms = cluster.now_ms
        self._waiting: _Waiting | None = None
        self._current: StepResult | None = None

    # ------------------------------------------------------------------ progress

    @property
    def done(self) -> bool:
        return self.index >= len(self.scenario.steps) and self._waiting is None

    @property
    def passed(self) -> bool:
        return self.done and all(r.ok for r in self.results)

    @property
    def status(self) -> str:
        if not self.done:
            return "running"
        return "passed" if self.passed else "failed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.slug,
            "name": self.scenario.name,
            "status": self.status,
            "step": self.index,
            "steps": len(self.scenario.steps),
            "results": [r.to_dict() for r in self.results],
        }

    # ------------------------------------------------------------------ the loop

    def advance(self) -> int | None:
        """Run what is due now; the virtual time to come back, or None when the scenario is over."""
        now = self.cluster.now_ms
        while True:
            if self._waiting is not None:
                waiting = self._waiting
                if waiting.poll is None:
                    if now < waiting.due_ms:
                        return waiting.due_ms
                    self._finish(True)
                elif self._polled(waiting):
                    self._go_on(waiting)
                    continue  # the next step, or the next wait of this one
                elif waiting.deadline_ms is not None and now >= waiting.deadline_ms:
                    self._finish(
                        waiting.succeed_on_timeout,
                        waiting.on_timeout() if waiting.on_timeout else "timed out",
                    )
                else:
                    return now + POLL_MS
            if self.index >= len(self.scenario.steps):
                return None
            step = self.scenario.steps[self.index]
            self._current = StepResult(
                index=self.index, line=step.line, label=step.label, ok=True, time_ms=now
            )
            self.index += 1
            try:
                getattr(self, f"_do_{step.kind}")(step)
            except KafkaError as exc:
                self._finish(False, str(exc))
                continue
            if self._waiting is None:
                self._finish(self._current.ok)

    @staticmethod
    def _polled(waiting: _Waiting) -> bool:
        """Whether what ``waiting`` waits for has come; an error it ends with counts as come (and fails the step)."""
        assert waiting.poll is not None
        if waiting.error is not None:
            return True
        try:
            return waiting.poll()
        except KafkaError as exc:
            waiting.error = exc
            return True

    def _go_on(self, waiting: _Waiting) -> None:
        """What ``waiting`` waited for has come: the step passes, fails with the error, or waits again."""
        self._waiting = None
        if waiting.error is not None:
            self._finish(False, str(waiting.error))
            return
        if waiting.then is not None:
            try:
                waiting.then()
            except KafkaError as exc:
                self._waiting = None
                self._finish(False, str(exc))
                return
            if self._waiting is not None:
                return
        assert self._current is not None
        self._finish(self._current.ok)

    def condition(self) -> Callable[[], bool] | None:
        """What the waiting step waits for, if it waits for a condition (not just time); an error it
        ends with counts as true, for ``advance`` to report."""
        waiting = self._waiting
        if waiting is None or waiting.poll is None:
            return None
        return lambda: self._polled(waiting)

    def deadline(self) -> int:
        waiting = self._waiting
        if waiting is None:
            return self.cluster.now_ms
        return waiting.deadline_ms if waiting.deadline_ms is not None else waiting.due_ms

    def abort(self, reason: str) -> None:
        """End the run here: the step under way fails with ``reason``, and no later step runs."""
        if self._current is not None:
            self._finish(False, reason)
        self._waiting = None
        self.index = len(self.scenario.steps)

    def _finish(self, ok: bool, detail: str = "") -> None:
        result = self._current
        self._waiting = None
        self._current = None
        if result is None:
            return
        result.ok = ok and all(c.ok for c in result.checks)
        if detail:
            result.detail = detail if not result.detail else f"{result.detail}; {detail}"
        self.results.append(result)

    def _wait(self, ms: int) -> None:
        self._waiting = _Waiting(due_ms=self.cluster.now_ms + ms)

    def _wait_for(
        self,
        poll: Callable[[], bool],
        timeout_ms: int,
        on_timeout: Callable[[], str],
        *,
        succeed_on_timeout: bool = False,
        then: Callable[[], None] | None = None,
    ) -> None:
        now = self.cluster.now_ms
        self._waiting = _Waiting(
            due_ms=now,
            poll=poll,
            deadline_ms=now + timeout_ms,
            on_timeout=on_timeout,
            succeed_on_timeout=succeed_on_timeout,
            then=then,
        )

    def _answered(self, answer: Pending[T], what: str, then: Callable[[T], None] | None = None) -> None:
        """Wait, the runner's way, for a request in flight (ZooKeeper's answer to an admin write), as long
        as the facade waits for one: its error fails the step; its answer goes on to ``then`` (which may
        wait again, for the controller, say)."""

        def go_on() -> None:
            value = answer.result()  # Kafka's error, if it was refused
            if then is not None:
                then(value)

        self._wait_for(answer.done, ANSWER_MS, lambda: _timed_out(ANSWER_MS, what), then=go_on)

    def _until(self, poll: Callable[[], bool], timeout_ms: int, what: str) -> None:
        """Wait for ``poll``, failing as the facade's ``wait_for`` does after ``timeout_ms``."""
        self._wait_for(poll, timeout_ms, lambda: _timed_out(timeout_ms, what))

    # ------------------------------------------------------------------ steps

    def _do_note(self, step: Step) -> None:
        """Narration for the people watching: its label is the text."""

    # The admin steps start their request and wait between engine steps, never inside one, so on a live
    # lab the driver runs on (a paused controller holds the step, not the lab); the bounds and errors
    # are the facade's.

    def _do_create_topic(self, step: Step) -> None:
        a = step.args
        name = a["name"]
        assignment = a.get("assignment")
        if assignment is not None:
            answer = self.cluster.begin_create_topic(
                name, config=a.get("config"), assignment={int(p): list(r) for p, r in assignment.items()}
            )
        else:
            answer = self.cluster.begin_create_topic(
                name,
                partitions=a.get("partitions", 1),
                replication_factor=a.get("replication_factor", 1),
                config=a.get("config"),
            )

        def leaders(placement: Mapping[int, object]) -> None:
            self._until(
                lambda: self.cluster.partitions_usable(name, placement),
                LEADERS_MS,
                f"every partition of {name} to have a leader",
            )

        self._answered(answer, "the topic's znodes", leaders)

    def _do_delete_topic(self, step: Step) -> None:
        name = step.args["name"]
        asked: list[Pending[bool]] = []  # the question "is it still there?" in flight, or its answer

        def gone() -> bool:
            if asked and asked[0].done():
                if not asked[0].result():  # ZooKeeper's error fails the step
                    return True  # (and stays so: the answer is kept)
                asked.clear()
            if not asked:
                asked.append(self.cluster.begin_topic_exists(name))
            return False

        self._answered(
            self.cluster.begin_delete_topic(name),
            "the deletion request",
            lambda _: self._until(
                gone,
                LEADERS_MS,
                f"topic {name} to be deleted (the controller deletes it once every replica's broker is up)",
            ),
        )

    def _do_add_partitions(self, step: Step) -> None:
        topic = step.args["topic"]

        def leaders(new: list[int]) -> None:
            self._until(
                lambda: self.cluster.partitions_usable(topic, new),
                LEADERS_MS,
                f"the new partitions of {topic} to have leaders",
            )

        self._answered(
            self.cluster.begin_create_partitions(topic, step.args["total"]),
            f"the partitions of {topic}",
            leaders,
        )

    def _do_set_config(self, step: Step) -> None:
        topic = step.args["topic"]

        def taken_in(merged: dict[str, str]) -> None:
            # As alter_topic_config: done once the controller reads the change (at once without one).
            self._until(
                lambda: self.cluster.config_taken_in(topic, merged),
                CONFIG_MS,
                f"the controller to read {topic}'s new config",
            )

        self._answered(
            self.cluster.begin_alter_topic_config(topic, step.args["config"]), "the config change", taken_in
        )

    def _do_produce(self, step: Step) -> None:
        a = step.args
        acks = a.get("acks", "all")
        name = a.get("producer") or f"scenario-acks-{acks}"
        producer = self.producers.get(name)
        if producer is None:
            settings = {k: a[k] for k in PRODUCER_FIELDS if k in a}
            producer = self.cluster.producer(
                acks,
                client_id=name if name not in self.cluster.clients else None,
                principal=a.get("principal"),
                **settings,
            )
            self.producers[name] = producer
        futures = self.sent.setdefault(name, [])
        mine: list[Pending[RecordMetadata]] = []
        template = a.get("value", "{producer}-{i}")
        for _ in range(a.get("count", 1)):
            i = len(futures)
            value = None if a.get("tombstone") else template.format(i=i, producer=name)
            key = a.get("key")
            future = producer.send(
                a["topic"],
                value,
                key=None if key is None else key.format(i=i, producer=name),
                partition=a.get("partition"),
                timestamp=a.get("timestamp"),
            )
            futures.append(future)
            mine.append(future)
        if not a.get("wait", True):
            return

        def answered() -> bool:
            return all(f.done() for f in mine)

        def summary() -> str:
            acked = sum(1 for f in mine if f.done() and f.exception() is None)
            failed = [f.exception() for f in mine if f.done() and f.exception() is not None]
            names = sorted({getattr(e, "name", type(e).__name__) for e in failed})
            return f"{acked} acknowledged, {len(failed)} failed" + (f" ({', '.join(names)})" if names else "")

        def check() -> bool:
            if not answered():
                return False
            assert self._current is not None
            self._current.detail = summary()
            return True

        self._wait_for(check, 180_000, lambda: "still waiting for answers: " + summary())

    def _do_consume(self, step: Step) -> None:
        a = step.args
        topic = a["topic"]
        name = a.get("as", "consumed")
        consumer = self.cluster.consumer(isolation_level=a.get("isolation_level", "read_uncommitted"))
        self.readers[name] = consumer
        if "partition" in a:
            tps = [TopicPartition(topic, a["partition"])]
        else:
            tps = [TopicPartition(topic, p) for p in range(self.cluster.partition_count(topic))]
        consumer.assign(tps)
        start = a.get("from", "earliest")
        for tp in tps:
            if start == "earliest":
                consumer.seek_to_beginning(tp.topic, tp.partition)
            elif start == "latest":
                consumer.seek_to_end(tp.topic, tp.partition)
            else:
                consumer.seek(tp.topic, tp.partition, int(start))
        got = self.consumed.setdefault(name, [])
        got.clear()
        wanted = a.get("count")
        timeout = a.get("timeout_ms", 3000)

        def poll() -> bool:
            got.extend(consumer.take(10_000))
            return wanted is not None and len(got) >= wanted

        def summary() -> str:
            if wanted is None:
                return f"read {len(got)} record(s) in {timeout} ms"
            return f"read {len(got)} of {wanted} record(s) within timeout_ms={timeout}"

        # Without a count, read for the whole timeout and pass; with one, fail if it does not come.
        self._wait_for(poll, timeout, summary, succeed_on_timeout=wanted is None)

    def _do_begin_transaction(self, step: Step) -> None:
        a = step.args
        name = a["producer"]
        producer = self.producers.get(name)
        if producer is None:
            settings: dict[str, Any] = {"transactional_id": a.get("transactional_id", name)}
            if "transaction_timeout_ms" in a:
                settings["transaction_timeout_ms"] = a["transaction_timeout_ms"]
            producer = self.cluster.producer(
                "all", client_id=name if name not in self.cluster.clients else None, **settings
            )
            self.producers[name] = producer
        txn = producer.txn
        if txn is None:
            raise KafkaError(f"producer {name!r} was made without a transactional id")
        expected = a.get("expect_error")
        if txn.state.value != "UNINITIALIZED":
            self._call(expected, producer.begin_transaction)
            return
        task = txn.start_init()
        self._task(task, "init_transactions", then=producer.begin_transaction, expected=expected)

    def _do_commit_transaction(self, step: Step) -> None:
        txn = self._txn(step)
        self._call(
            step.args.get("expect_error"),
            lambda: self._task(
                txn.start_commit(), "commit_transaction", expected=step.args.get("expect_error")
            ),
        )

    def _do_abort_transaction(self, step: Step) -> None:
        txn = self._txn(step)
        self._call(
            step.args.get("expect_error"),
            lambda: self._task(
                txn.start_abort(), "abort_transaction", expected=step.args.get("expect_error")
            ),
        )

    def _call(self, expected: str | None, call: Callable[[], None]) -> None:
        """A transactional call that may fail at once (a call out of order: Kafka's client refuses it
        before sending anything): with ``expected``, that error is the step's success."""
        try:
            call()
        except KafkaError as exc:
            if expected is None:
                raise
            self._failed_as(expected, exc)
            return
        if expected is not None and self._waiting is None:
            raise KafkaError(f"expected {expected}, but the call succeeded")

    def _failed_as(self, expected: str, error: BaseException) -> None:
        name = getattr(error, "name", type(error).__name__)
        assert self._current is not None
        if name != expected:
            raise KafkaError(f"expected {expected}, got {name}: {error}")
        self._current.detail = f"{name}, as expected: {error}"

    def _txn(self, step: Step) -> TransactionManager:
        name = step.args["producer"]
        # The scenario's own, else one the lab already has (a dashboard producer, an exercise's setup).
        found = self.cluster.clients.get(name)
        producer = self.producers.get(name) or (found if isinstance(found, Producer) else None)
        if producer is None or producer.txn is None:
            raise KafkaError(
                f"no transactional producer named {step.args['producer']!r} (begin_transaction makes one)"
            )
        return producer.txn

    def _task(
        self,
        task: Task[None],
        what: str,
        then: Callable[[], None] | None = None,
        *,
        expected: str | None = None,
    ) -> None:
        """Wait, the runner's way, for a transactional call; its error (by Kafka's name) fails the step,
        unless it is the ``expected`` one, and then only that error passes it."""

        def go_on() -> None:
            error = task.outcome.failed_with()
            if expected is not None:
                if error is None:
                    raise KafkaError(f"expected {expected}, but {what} succeeded")
                self._failed_as(expected, error)
                return
            task.outcome.result()
            if then is not None:
                then()

        self._wait_for(task.outcome.done, ANSWER_MS, lambda: _timed_out(ANSWER_MS, what), then=go_on)

    def _do_seek(self, step: Step) -> None:
        a = step.args
        consumer = self.readers.get(a["as"])
        if consumer is None:
            raise KafkaError(f"no consumer named {a['as']!r} in this scenario")
        tp = TopicPartition.parse(a["partition"])
        consumer.seek(tp.topic, tp.partition, a["offset"])
        self.consumed[a["as"]] = []

    def _do_read(self, step: Step) -> None:
        """Read on with a consumer from an earlier consume step (after a seek, say)."""
        a = step.args
        consumer = self.readers.get(a["as"])
        if consumer is None:
            raise KafkaError(f"no consumer named {a['as']!r} in this scenario (a consume step makes one)")
        got = self.consumed.setdefault(a["as"], [])
        wanted = len(got) + a["count"]

        def poll() -> bool:
            got.extend(consumer.take(10_000))
            return len(got) >= wanted

        self._wait_for(
            poll, a.get("timeout_ms", 3000), lambda: f"read {len(got)} of {wanted} record(s) in time"
        )

    def _do_kill(self, step: Step) -> None:
        self.cluster.kill_broker(step.args["broker"], lose_unflushed=step.args.get("lose_unflushed", False))

    def _do_restart(self, step: Step) -> None:
        self.cluster.restart_broker(step.args["broker"])

    def _do_pause(self, step: Step) -> None:
        self.cluster.pause_broker(step.args["broker"])

    def _do_resume(self, step: Step) -> None:
        self.cluster.resume_broker(step.args["broker"])

    def _do_heal(self, step: Step) -> None:
        self.cluster.heal(step.args["broker"])

    def _do_controlled_shutdown(self, step: Step) -> None:
        broker = step.args["broker"]
        self.cluster.controlled_shutdown(broker, wait=False)
        self._wait_for(
            lambda: not self.cluster.brokers[broker].alive,
            60_000,
            lambda: f"broker {broker} did not shut down",
        )

    def _do_isolate(self, step: Step) -> None:
        self.cluster.isolate_broker(step.args["broker"], from_=step.args.get("from", "zookeeper"))

    def _do_slow(self, step: Step) -> None:
        self.cluster.slow_broker(step.args["broker"], step.args.get("delay_ms", 2000))

    def _do_wait(self, step: Step) -> None:
        self._wait(step.args["ms"])

    def _do_lose_ack(self, step: Step) -> None:
        client = step.args["client"]
        if client in self.producers:
            client = self.producers[client].client_id
        self.cluster.lose_next_ack(client, step.args.get("count", 1))

    def _do_add_producer(self, step: Step) -> None:
        a = step.args
        self.cluster.simulated_producer(
            a["topic"],
            rate_per_s=a.get("rate", 10),
            keys=a.get("keys", 10) or None,
            acks=a.get("acks", "all"),
            name=a.get("name"),
            principal=a.get("principal"),
        )

    def _do_stop_producer(self, step: Step) -> None:
        sim = self.cluster.simulated.get(step.args["name"])
        if sim is None:
            raise KafkaError(f"no simulated client named {step.args['name']!r}")
        sim.stop()

    def _do_add_consumer(self, step: Step) -> None:
        a = step.args
        config: dict[str, object] = {}
        if "assignor" in a:
            config["partition_assignment_strategy"] = a["assignor"]
        for key in (
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "max_poll_interval_ms",
            "group_instance_id",
        ):
            if key in a:
                config[key] = a[key]
        self.cluster.simulated_consumer(
            a["group"],
            a["topics"],
            processing_ms=a.get("processing_ms", 10),
            name=a.get("name"),
            principal=a.get("principal"),
            **config,
        )

    def _sim(self, name: str) -> Any:
        sim = self.cluster.simulated.get(name)
        if sim is None:
            raise KafkaError(f"no simulated client named {name!r}")
        return sim

    def _do_stop_consumer(self, step: Step) -> None:
        self._sim(step.args["name"]).stop()

    def _do_crash_consumer(self, step: Step) -> None:
        self._sim(step.args["name"]).crash()

    def _do_reassign(self, step: Step) -> None:
        tp = TopicPartition.parse(step.args["partition"])
        plan = {(tp.topic, tp.partition): step.args["replicas"]}
        self._answered(self.cluster.begin_reassign_partitions(plan), "the reassignment")

    def _do_elect_preferred(self, step: Step) -> None:
        names = step.args.get("partitions")
        parts = (
            None if names is None else [(tp.topic, tp.partition) for tp in map(TopicPartition.parse, names)]
        )
        if parts is None:  # every partition: the list is read first, as the facade does
            self.cluster.elect_preferred_leaders(None, wait=False)
            return
        self._answered(self.cluster.begin_elect_preferred_leaders(parts), "the preferred leader election")

    def _acl(self, step: Step) -> AclBinding:
        a = step.args
        return parse_binding(
            resource_type=a.get("resource_type", "Topic"),
            name=a["name"],
            pattern=a.get("pattern", "Literal"),
            principal=a["principal"],
            host=a.get("host", "*"),
            operation=a["operation"],
            permission=a.get("permission", "Allow"),
        )

    def _acls_taken_in(self) -> None:
        """Done once every broker's authorizer holds what ZooKeeper does (a change notification read)."""
        held: list[Pending[list[AclBinding]]] = []

        def taken_in() -> bool:
            if held and held[0].done():
                if self.cluster.acls_taken_in(held[0].result()):
                    return True
                held.clear()
            if not held:
                held.append(self.cluster.begin_describe_acls())
            return False

        self._until(taken_in, CONFIG_MS, "the brokers' authorizers to read the ACLs")

    def _do_create_acl(self, step: Step) -> None:
        self._answered(
            self.cluster.begin_create_acls([self._acl(step)]), "the ACL", lambda _: self._acls_taken_in()
        )

    def _do_delete_acl(self, step: Step) -> None:
        r, e = (b := self._acl(step)).resource, b.entry
        exactly = AclFilter(r.type, r.name, r.pattern, e.principal, e.host, e.operation, e.permission)
        self._answered(
            self.cluster.begin_delete_acls([exactly]), "the ACL's deletion", lambda _: self._acls_taken_in()
        )

    def _do_expect(self, step: Step) -> None:
        assert self._current is not None
        self._current.checks = self.check(dict(step.args))
        self._current.ok = all(c.ok for c in self._current.checks)

    def _do_wait_until(self, step: Step) -> None:
        args = {k: v for k, v in step.args.items() if k != "timeout_ms"}
        timeout = step.args.get("timeout_ms", 30_000)

        def poll() -> bool:
            checks = self.check(args)
            assert self._current is not None
            self._current.checks = checks
            return all(c.ok for c in checks)

        def timed_out() -> str:
            return f"not true within {timeout} ms"

        self._wait_for(poll, timeout, timed_out)

    # ------------------------------------------------------------------ expectations

    def check(self, args: dict[str, Any]) -> list[Check]:
        from lab.scenarios.expect import evaluate

        return evaluate(self, args)


@dataclass(slots=True)
class Report:
    scenario: Scenario
    run: ScenarioRun
    time_ms: int

    @property
    def passed(self) -> bool:
        return self.run.passed


def drive(
    run: ScenarioRun,
    *,
    progress: Callable[[ScenarioRun], None] | None = None,
    max_virtual_ms: int = MAX_VIRTUAL_MS,
    interrupt: Callable[[], str | None] | None = None,
) -> str | None:
    """Run a scenario on a cluster whose clock the caller owns (the memory store): None at its end.

    ``interrupt`` is asked between engine steps, inside waits too; a reason it returns stops the drive
    there and is returned, and the next call goes on from that very point (the API's scheduler shares
    its workers this way, and stops runs that are cancelled or over their time). The virtual-time
    budget counts from the run's start, and holds inside a long wait.
    """
    cluster = run.cluster
    limit = run.start_ms + max_virtual_ms
    reason: str | None = None

    def stopped() -> bool:
        nonlocal reason
        if interrupt is not None:
            reason = interrupt()
        return reason is not None

    while True:
        seen = len(run.results)
        due = run.advance()
        if progress is not None and len(run.results) != seen:
            progress(run)
        if due is None:
            return None
        if cluster.now_ms >= limit:
            run.abort(f"the scenario ran past {max_virtual_ms} ms of virtual time")
            if progress is not None:
                progress(run)
            return None
        if stopped():
            return reason
        condition = run.condition()
        if condition is None:
            cluster.run_until_true(stopped, min(due, limit) - cluster.now_ms)
        else:
            # Check after every event, so the next step runs at the very instant it becomes true.
            deadline = min(run.deadline(), limit)
            cluster.run_until_true(_either(condition, stopped), max(0, deadline - cluster.now_ms))
        if reason is not None:
            return reason


def _either(first: Callable[[], bool], second: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: first() or second()


def cluster_for(scenario: Scenario, data_dir: str | Path) -> Cluster:
    """A fresh memory-store cluster with the scenario's settings."""
    return Cluster.create(
        brokers=scenario.cluster.brokers,
        seed=scenario.cluster.seed,
        config=dict(scenario.cluster.config),
        data_dir=data_dir,
        name=scenario.slug,
    )


def run_to_end(
    scenario: Scenario,
    *,
    data_dir: str | Path | None = None,
    progress: Callable[[ScenarioRun], None] | None = None,
    max_virtual_ms: int = MAX_VIRTUAL_MS,
) -> Report:
    """Run a scenario on a fresh memory-store cluster, in virtual time, to the end."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kafka-lab-scenario-"))
        cluster = cluster_for(scenario, data_dir)
        stack.callback(cluster.close)
        run = ScenarioRun(scenario, cluster)
        drive(run, progress=progress, max_virtual_ms=max_virtual_ms)
        return Report(scenario=scenario, run=run, time_ms=cluster.now_ms)
