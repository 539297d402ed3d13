"""The controls of a live lab, by name: parse a request's parameters, then act on the driver thread.

``plan(name, params)`` checks the parameters where the request arrives and raises a
named ``KafkaError`` (``IllegalArgument``) for bad input, so nothing reaches the engine
that the engine would have to refuse for a typo. It returns an ``Act``: a function the
driver thread calls with the live lab; what it returns (a sentence, or ``Waiting`` for
an answer that takes engine time) is what the person sees as "done".
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lab.engine import limits
from lab.engine.cluster import Cluster, Isolation
from lab.engine.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    IllegalArgument,
    IllegalState,
    KafkaError,
    KafkaTimeout,
    LeaderNotAvailable,
    NotCoordinator,
    RequestTimedOut,
    ZooKeeperNotAvailable,
)
from lab.engine.limits import Number, Text, Whole
from lab.engine.tasks import Pending
from lab.runtime.spec import ClientSpec, check_rate
from lab.visuals.clock import clock_label

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

Act = Callable[["LiveLab"], Any]
Parse = Callable[[Mapping[str, Any]], Act]
T = TypeVar("T")

PRODUCE_WAIT_S = 3.0
RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms
RETRY_WAIT_S = 15.0
RESET_WAIT_S = 20.0  # a reset answers when the lab is up, or says it is still starting


@dataclass(slots=True, kw_only=True)
class Waiting:
    """A result that needs engine time: the driver checks ``ready`` each frame until ``deadline``."""

    ready: Callable[[], bool]
    result: Callable[[], Any]
    on_timeout: Callable[[], Any]
    deadline: float  # time.monotonic()


def group_retriable(error: KafkaError) -> bool:
    """What a group's offset commit is retried for, as Kafka's consumer and tools do: the coordinator
    not found, moved or loading (the lab's first group creates __consumer_offsets), a partition
    between leaders, a request that timed out."""
    return isinstance(
        error,
        (
            CoordinatorNotAvailable,
            NotCoordinator,
            CoordinatorLoadInProgress,
            LeaderNotAvailable,
            RequestTimedOut,
        ),
    )


def retrying(
    fn: Callable[[], Any],
    *,
    then: Callable[[Any], Any] = lambda value: value,
    wait_s: float = RETRY_WAIT_S,
    retry: Callable[[KafkaError], bool] = lambda error: error.retriable,
) -> Waiting:
    """``fn()`` now and, while it fails with a retriable error (COORDINATOR_NOT_AVAILABLE while
    __consumer_offsets is being created, say), again on the driver's ticks every retry.backoff.ms, as
    Kafka's clients retry; the driver runs the lab in between instead of waiting. ``fn`` may answer at
    once or with a ``Pending`` (a request in flight, an offset commit, say): the driver runs the lab
    until it is answered, and a retriable error it ends with is tried again the same way. The answer
    is ``then(value)``, or the last error, or after ``wait_s`` a KAFKA_TIMEOUT saying what is still
    unanswered. ``retry`` says which errors are tried again (``GROUP_RETRIABLE`` for a group's
    commits: a typo's UNKNOWN_TOPIC_OR_PARTITION is answered at once). ZOOKEEPER_NOT_AVAILABLE is
    answered at once: it lasts."""
    deadline = time.monotonic() + wait_s
    outcome: list[tuple[bool, Any]] = []  # [(True, value)] or [(False, error)] once settled
    last: list[KafkaError] = []
    flight: list[Pending[Any]] = []  # the request fn() started, while it is unanswered
    next_try = [0.0]

    def failed(error: BaseException) -> bool:
        now = time.monotonic()
        retriable = isinstance(error, KafkaError) and retry(error)
        if retriable and not isinstance(error, ZooKeeperNotAvailable) and now < deadline:
            last[:] = [error]  # type: ignore[list-item]
            next_try[0] = now + RETRY_BACKOFF_S
            return False
        outcome.append((False, error))
        return True

    def attempt() -> bool:
        if outcome:
            return True
        if flight:
            request = flight[0]
            if not request.done():
                return False
            flight.clear()
            error = request.failed_with()
            if error is not None:
                return failed(error)
            outcome.append((True, request.result()))
            return True
        if time.monotonic() < next_try[0]:
            return False
        try:
            value = fn()
        except KafkaError as error:
            return failed(error)
        if isinstance(value, Pending):
            flight.append(value)
            return attempt()  # it may be answered already
        outcome.append((True, value))
        return True

    def result() -> Any:
        if not outcome:
            if flight:
                raise KafkaTimeout(
                    f"no answer within {wait_s:g} s: the request is still waiting in the lab "
                    "(is the clock paused, or the broker that must answer paused or cut off?)"
                )
            raise last[0] if last else KafkaTimeout(f"no answer within {wait_s:g} s")
        ok, value = outcome[0]
        if not ok:
            raise value
        return then(value)

    attempt()  # the first try at once, on the driver thread
    return Waiting(ready=attempt, result=result, on_timeout=result, deadline=deadline + RETRY_BACKOFF_S)


class NotFound(KafkaError):
    """Something a command names does not exist (a broker, a produce request) and Kafka has no name for it."""

    name = "NOT_FOUND"


PAUSED_GRACE_S = 0.3  # with the lab's clock paused, how long an answer waits for ZooKeeper anyway


def in_flight(
    lab: LiveLab,
    request: Pending[T],
    *,
    settled: Callable[[T], bool],
    answer: Callable[[T | None, bool], Any],
    what: str,
    wait_s: float,
) -> Waiting:
    """An admin request in flight (a ``begin_*`` call's Pending): the driver runs the lab, and everyone
    else's calls, until ZooKeeper has answered it and ``settled(value)`` holds (the controller has acted
    on it); then ``answer(value, True)``. Kafka's error if it was refused. After ``wait_s``, or at once
    when the lab's clock is paused (nothing moves until it runs), ``answer(value, False)`` with what
    there is, ``value`` None while ZooKeeper has not answered; with the clock running, a ZooKeeper that
    has not answered in ``wait_s`` is a KAFKA_TIMEOUT (the request may still be carried out)."""
    begun = time.monotonic()

    def paused() -> bool:
        return lab.clock.paused and time.monotonic() >= begun + PAUSED_GRACE_S

    def ready() -> bool:
        if request.done():
            return request.failed_with() is not None or settled(request.result()) or paused()
        return paused()

    def result() -> Any:
        if not request.done():
            if lab.clock.paused:
                return answer(None, False)
            raise KafkaTimeout(
                f"ZooKeeper has not answered {what} within {wait_s:g} s; it may still be carried out: "
                "look again in a moment"
            )
        value = request.result()  # Kafka's error, if it was refused
        return answer(value, settled(value))

    return Waiting(ready=ready, result=result, on_timeout=result, deadline=begun + wait_s)


def on_success(request: Pending[T], then: Callable[[T], None]) -> None:
    """``then(value)`` once ``request`` succeeds (on the driver thread), answered or not by then."""
    request.add_done_callback(lambda done: then(done.result()) if done.failed_with() is None else None)


def _int(params: Mapping[str, Any], key: str, limit: Whole, *, default: int | None = None) -> int:
    """The whole number ``params[key]``, within the lab's ``limit`` for it (named by the parameter)."""
    low, high = limit.low, limit.high
    raw = str(params.get(key, "")).strip()
    if not raw:
        if default is None:
            raise IllegalArgument(f"{key} is required")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise IllegalArgument(f"{key} must be a whole number, not {raw!r}") from None
    if not low <= value <= high:
        raise IllegalArgument(f"{key} must be between {low} and {high}, not {value}")
    return value


def _float(params: Mapping[str, Any], key: str, limit: Number, *, default: float) -> float:
    low, high = limit.low, limit.high
    raw = str(params.get(key, "")).strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise IllegalArgument(f"{key} must be a number, not {raw!r}") from None
    if not low - 1e-9 <= value <= high + 1e-9:
        raise IllegalArgument(f"{key} must be between {low:g} and {high:g}, not {value:g}")
    return value


def _choice(params: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str | None = None) -> str:
    raw = str(params.get(key, "")).strip() or default
    if raw not in choices:
        raise IllegalArgument(f"{key} must be one of {', '.join(choices)}, not {raw!r}")
    return raw


def _text(
    params: Mapping[str, Any], key: str, limit: Text, *, required: bool = True, strip: bool = True
) -> str:
    """The text ``params[key]`` (stripped, unless it is a record's key: Kafka keeps every character)."""
    given = params.get(key)
    raw = "" if given is None else str(given)  # JSON's null: not given
    raw = raw.strip() if strip else raw
    if required and not raw:
        raise IllegalArgument(f"{key} is required")
    if len(raw) > limit.max_length:
        raise IllegalArgument(f"{key} is longer than {limit.max_length} characters")
    return limit.check(raw) if raw else raw


def _flag(params: Mapping[str, Any], key: str) -> bool:
    """A yes/no argument: JSON's true/false, or a form's "1"/"0", "true"/"false", "on" (absent: no)."""
    raw = params.get(key, False)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("", "0", "false", "off", "no"):
        return False
    if text in ("1", "true", "on", "yes"):
        return True
    raise IllegalArgument(f"{key} must be true or false, not {raw!r}")


def _strings(params: Mapping[str, Any], key: str) -> dict[str, str]:
    """A JSON object of names to values (a topic's configs), each value as text (absent: none)."""
    raw = params.get(key) or {}
    if not isinstance(raw, Mapping):
        raise IllegalArgument(f"{key} must be an object of names to values")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(value, (str, int, float, bool)):
            raise IllegalArgument(f"{key}.{name} must be a value, not {type(value).__name__}")
        out[str(name)] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _names(params: Mapping[str, Any], key: str) -> list[str]:
    raw = params.get(key) or []
    if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
        raise IllegalArgument(f"{key} must be a list of names")
    return list(raw)


def _whole_list(params: Mapping[str, Any], key: str, limit: Whole) -> list[int] | None:
    """A JSON list of whole numbers each within ``limit`` (absent or null: None)."""
    raw = params.get(key)
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)):
        raise IllegalArgument(f"{key} must be a list of whole numbers")
    return [_int({key: x}, key, limit) for x in raw]


def _optional_int(params: Mapping[str, Any], key: str, limit: Whole) -> int | None:
    raw = params.get(key)
    return None if raw is None or str(raw).strip() == "" else _int(params, key, limit)


# A simulated consumer's topics, comma-separated: a few topic names.
TOPIC_LIST = Text(what="topics", max_length=10 * (limits.TOPIC_NAME.max_length + 1))


def _broker(params: Mapping[str, Any]) -> int:
    return _int(params, "broker", limits.BROKER_ID)


# ---------------------------------------------------------------------------- brokers


def _broker_op(operation: Callable[[Cluster, int], object], said: str) -> Parse:
    """A control that does one thing to one broker and says so (``said`` has ``{b}`` for its id)."""

    def parse(p: Mapping[str, Any]) -> Act:
        b = _broker(p)

        def run(lab: LiveLab) -> str:
            operation(lab.cluster, b)
            return said.format(b=b)

        return run

    return parse


def _kill(p: Mapping[str, Any]) -> Act:
    b = _broker(p)
    lose = _flag(p, "lose_unflushed")

    def run(lab: LiveLab) -> str:
        lab.cluster.kill_broker(b, lose_unflushed=lose)
        return f"Broker {b} killed." + (" Its unflushed log tail is lost." if lose else "")

    return run


_restart = _broker_op(Cluster.restart_broker, "Broker {b} restarting: it recovers its logs, then registers.")
_pause = _broker_op(Cluster.pause_broker, "Broker {b} paused.")
_resume = _broker_op(Cluster.resume_broker, "Broker {b} resumed.")
_heal = _broker_op(Cluster.heal, "Broker {b} healed.")
_shutdown = _broker_op(
    lambda cluster, b: cluster.controlled_shutdown(b, wait=False),
    "Broker {b} shutting down: it hands its leaderships over first.",
)


def _slow(p: Mapping[str, Any]) -> Act:
    b = _broker(p)
    ms = _int(p, "ms", limits.SLOW_MS, default=2000)

    def run(lab: LiveLab) -> str:
        lab.cluster.broker(b)
        if lab.cluster.slow.get(b):
            raise IllegalState(f"broker {b} is already slow (+{lab.cluster.slow[b]} ms); heal it first")
        lab.cluster.slow_broker(b, ms)
        return f"Broker {b} slowed: +{ms} ms on every message."

    return run


def _isolate(p: Mapping[str, Any]) -> Act:
    b = _broker(p)
    side = _choice(p, "from", ("zookeeper", "brokers", "clients"))
    what = {"zookeeper": "ZooKeeper", "brokers": "the other brokers", "clients": "its clients"}[side]

    def run(lab: LiveLab) -> str:
        lab.cluster.isolate_broker(b, from_=cast(Isolation, side))
        return f"Broker {b} cut off from {what}."

    return run


# ---------------------------------------------------------------------------- records and topics


def acks_waiting(futures: Sequence[Any], *, topic: str, acks: str, deadline: float) -> Waiting:
    """Wait, on the driver thread, for a producer's answers; then say what was acknowledged, and where."""
    count = len(futures)

    def summary() -> str:
        failed = [f.failed_with() for f in futures if f.done() and f.failed_with() is not None]
        done = [f.result() for f in futures if f.done() and f.failed_with() is None]
        if failed and not done:
            error = failed[0]
            if isinstance(error, KafkaError):
                raise error
            raise IllegalState(str(error))
        where: dict[int, list[int]] = {}
        for md in done:
            where.setdefault(md.partition, []).append(md.offset)
        spans = ", ".join(
            f"{topic}-{p} offset{'s' if len(o) > 1 else ''} {_span(o)}" for p, o in sorted(where.items())
        )
        text = f"{len(done)} of {count} record(s) acknowledged (acks={acks}): {spans}."
        if failed:
            text += f" {len(failed)} failed: {failed[0]}."
        return text

    def timed_out() -> str:
        answered = sum(f.done() for f in futures)
        return (
            f"{count} record(s) sent to {topic}; {count - answered} still wait for acks={acks} "
            "(the leader answers once the ISR has them, or the producer gives up after delivery.timeout.ms)."
        )

    return Waiting(
        ready=lambda: all(f.done() for f in futures), result=summary, on_timeout=timed_out, deadline=deadline
    )


def _span(offsets: Sequence[int]) -> str:
    low, high = min(offsets), max(offsets)
    return str(low) if low == high else f"{low} to {high}"


def _produce(p: Mapping[str, Any]) -> Act:
    topic = _text(p, "topic", limits.TOPIC_NAME)
    count = _int(p, "count", limits.RECORDS, default=1)
    key = _text(p, "key", limits.KEY, required=False, strip=False) or None
    acks = _choice(p, "acks", ("0", "1", "all"), default="all")

    def run(lab: LiveLab) -> Any:
        if topic not in lab.cluster.topics():
            raise IllegalArgument(f"there is no topic {topic!r}; create it first")
        producer = lab.producer(acks)
        stamp = clock_label(lab.cluster.now_ms)  # virtual time, as the clock shows it
        futures = [producer.send(topic, f"record {i + 1} at {stamp}", key=key) for i in range(count)]
        if acks == "0":
            return f"{count} record(s) sent to {topic} with acks=0: no answer comes back."

        return acks_waiting(futures, topic=topic, acks=acks, deadline=time.monotonic() + PRODUCE_WAIT_S)

    return run


# ---------------------------------------------------------------------------- simulated clients


def _name(p: Mapping[str, Any]) -> str:
    return _text(p, "name", limits.CLIENT_NAME, required=False)


def _principal(p: Mapping[str, Any]) -> str:
    """A simulated client's principal (User:alice), or "": the lab's super user."""
    return _text(p, "principal", limits.PRINCIPAL, required=False)


def _as(principal: str) -> str:
    return f" as {principal}" if principal else ""


def _add_producer(p: Mapping[str, Any]) -> Act:
    topic = _text(p, "topic", limits.TOPIC_NAME)
    rate = _float(p, "rate", limits.PRODUCER_RATE, default=10)
    acks = _choice(p, "acks", ("0", "1", "all"), default="all")
    name = _name(p)
    principal = _principal(p)

    def run(lab: LiveLab) -> str:
        client = lab.add_client(
            ClientSpec(
                kind="producer", name=name, topics=(topic,), rate_per_s=rate, acks=acks, principal=principal
            )
        )
        return f"Simulated producer {client} writes {rate:g} record(s)/s to {topic}{_as(principal)}."

    return run


def _add_consumer(p: Mapping[str, Any]) -> Act:
    group = _text(p, "group", limits.GROUP_ID)
    topics = tuple(t.strip() for t in _text(p, "topics", TOPIC_LIST).split(",") if t.strip())
    processing = _int(p, "processing_ms", limits.PROCESSING_MS, default=50)
    session = 0  # the lab's default (session.timeout.ms 6000; Kafka's is 45000)
    if str(p.get("session_timeout_ms", "")).strip():
        session = _int(p, "session_timeout_ms", limits.SESSION_TIMEOUT_MS)
    name = _name(p)
    principal = _principal(p)

    def run(lab: LiveLab) -> str:
        client = lab.add_client(
            ClientSpec(
                kind="consumer",
                name=name,
                topics=topics,
                group=group,
                processing_ms=processing,
                session_timeout_ms=session,
                principal=principal,
            )
        )
        return f"Simulated consumer {client} joins group {group} on {', '.join(topics)}{_as(principal)}."

    return run


def _client_op(op: str) -> Parse:
    def parse(p: Mapping[str, Any]) -> Act:
        name = _text(p, "name", limits.CLIENT_NAME)

        def run(lab: LiveLab) -> str:
            return lab.client_op(name, op)

        return run

    return parse


# ---------------------------------------------------------------------------- the clock


def _clock_pause(p: Mapping[str, Any]) -> Act:
    def run(lab: LiveLab) -> str:
        if lab.clock.paused:
            raise IllegalState("the clock is already paused")
        lab.clock.pause(lab.cluster.now_ms)
        return "Clock paused."

    return run


def _clock_resume(p: Mapping[str, Any]) -> Act:
    def run(lab: LiveLab) -> str:
        if not lab.clock.paused:
            raise IllegalState("the clock is running")
        lab.clock.resume(lab.cluster.now_ms)
        return f"Clock running at {lab.clock.rate:g}x."

    return run


def _clock_step(p: Mapping[str, Any]) -> Act:
    events = _int(p, "events", limits.STEP_EVENTS) if str(p.get("events", "")).strip() else 0
    ms = _int(p, "ms", limits.STEP_MS) if str(p.get("ms", "")).strip() else 0
    if bool(events) == bool(ms):
        raise IllegalArgument("step either some events or some ms, not both and not neither")

    def run(lab: LiveLab) -> str:
        if not lab.clock.paused:
            raise IllegalState("pause the clock first: stepping is for a stopped clock")
        before = lab.cluster.now_ms
        if events:
            ran = 0
            while ran < events and lab.cluster.step():
                ran += 1
            text = f"Stepped {ran} event(s): {before} ms → {lab.cluster.now_ms} ms."
        else:
            lab.cluster.run_until(before + ms, pace=False)
            text = f"Stepped {ms} ms: {before} ms → {lab.cluster.now_ms} ms."
        lab.clock.anchor(lab.cluster.now_ms)
        return text

    return run


def _clock_speed(p: Mapping[str, Any]) -> Act:
    raw = str(p.get("rate", "")).strip()
    try:
        rate = float(raw)
    except ValueError:
        raise IllegalArgument(f"rate must be a number, not {raw!r}") from None
    check_rate(rate)

    def run(lab: LiveLab) -> str:
        lab.clock.set_rate(rate, lab.cluster.now_ms)
        lab.update_spec(lab.spec.with_rate(rate))
        return f"Clock speed {rate:g}x."

    return run


def _clock_reset(p: Mapping[str, Any]) -> Act:
    def run(lab: LiveLab) -> Waiting:
        lab.reset_now()

        def result() -> str:
            if lab.state == "failed":
                raise IllegalState(f"the lab did not start again: {lab.error}")
            return "Lab reset: a fresh cluster with fresh data."

        def still() -> str:
            return (
                f"Lab resetting: {lab.starting_note or 'the brokers register'}; the page shows when it is up."
            )

        return Waiting(
            ready=lambda: lab.state != "resetting",
            result=result,
            on_timeout=still,
            deadline=time.monotonic() + RESET_WAIT_S,
        )

    return run


_COMMANDS: dict[str, Parse] = {
    "kill": _kill,
    "restart": _restart,
    "pause": _pause,
    "resume": _resume,
    "slow": _slow,
    "isolate": _isolate,
    "heal": _heal,
    "shutdown": _shutdown,
    "produce": _produce,
    "client-producer": _add_producer,
    "client-consumer": _add_consumer,
    "client-stop": _client_op("stop"),
    "client-crash": _client_op("crash"),
    "client-remove": _client_op("remove"),
    "clock-pause": _clock_pause,
    "clock-resume": _clock_resume,
    "clock-step": _clock_step,
    "clock-speed": _clock_speed,
    "clock-reset": _clock_reset,
}


# The dashboard's controls: what a lab's page may ask through its control route (``views_lab.act``).
CONTROLS: frozenset[str] = frozenset(_COMMANDS) | {
    "topic-create",
    *(f"txn-{call}" for call in ("init", "begin", "send", "commit", "abort", "close")),
}

# Every command a lab knows, by name: the controls above, and what apps add with ``register``.
COMMANDS: Mapping[str, Parse] = MappingProxyType(_COMMANDS)
_READS: set[str] = set()

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-.][a-z0-9]+)*")


def register(name: str, parse: Callable[[Mapping[str, Any]], Act]) -> None:
    """Add command ``name``: ``parse(args)`` checks its JSON arguments where the request arrives (raising
    IllegalArgument) and returns the ``Act`` the lab runs. A name is registered once: a second
    registration of the same name is a mistake in the code, refused with ValueError. The lab's
    journal keeps every command that ran (``register_read`` for one that changes nothing)."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"a command name is lowercase words joined by - or ., not {name!r}")
    if name in _COMMANDS:
        raise ValueError(f"there is a command named {name!r} already")
    _COMMANDS[name] = parse


def register_read(name: str, parse: Callable[[Mapping[str, Any]], Act]) -> None:
    """``register`` a command that only reads the lab: the journal does not keep it."""
    register(name, parse)
    _READS.add(name)


def is_read(name: str) -> bool:
    return name in _READS


def plan(name: str, params: Mapping[str, Any]) -> Act:
    """The command ``name`` with ``params`` checked; IllegalArgument for an unknown name or bad input."""
    parser = _COMMANDS.get(name)
    if parser is None:
        raise IllegalArgument(f"there is no control named {name!r}")
    return parser(params)


# The commands of pages and the API beside the dashboard's (topics, records, groups, reads).
import lab.runtime.commands  # noqa: E402, F401
