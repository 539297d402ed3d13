"""A lab's Kafka listeners as its page shows them: ``bootstrap.servers``, each broker's listener, and
what the lab's clock means for a real client connected to it. Also the snippets a person copies.

Pure: it reads listener states (``lab.runtime.listeners.ListenerState`` or anything shaped like
one) and the clock's rate, and makes values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from lab.visuals.clock import speed_label


class ListenerLike(Protocol):
    @property
    def broker_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def open(self) -> bool: ...
    @property
    def error(self) -> str: ...


def address(host: str, port: int) -> str:
    """``host:port`` as clients write it (IPv6 in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerListenerView:
    broker_id: int
    host: str  # as advertised: what a client connects to
    port: int
    open: bool
    error: str  # why it could not open (the port is busy), "" otherwise
    opening: bool = False  # the lab is starting: its listeners open once it runs

    @property
    def address(self) -> str:
        return address(self.host, self.port)

    @property
    def state(self) -> str:
        if self.error:
            return "failed"
        return "open" if self.open else "opening" if self.opening else "closed"

    @property
    def why(self) -> str:
        if self.error:
            return f"{self.error}. The broker runs, but clients cannot reach it here."
        if self.open:
            return "accepting Kafka clients"
        if self.opening:
            return "the lab is starting: its listeners open once it runs"
        return "the broker is not running: connections are refused, and open ones were dropped"


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenersView:
    bootstrap_servers: str  # "" when the lab has no listeners
    brokers: tuple[BrokerListenerView, ...]
    clock_note: str  # what the clock's speed does to connected clients; "" at 1x
    missing: str = ""  # why there are no listeners, when there are none


def clock_note(rate: float, *, paused: bool) -> str:
    """Real clients keep their own time: what a paused, slowed or hurried lab means for them."""
    if paused:
        return (
            "The clock is paused: the brokers accept connections but answer nothing until it runs again. "
            "Your clients' own timeouts still run in wall time (request.timeout.ms, delivery.timeout.ms, "
            "the consumer's session.timeout.ms and max.poll.interval.ms), so they time out, retry and "
            "reconnect while the lab waits."
        )
    if rate < 1:
        return (
            f"The lab runs at {speed_label(rate)}: a second of the lab takes {1 / rate:g} s of yours. Your clients' "
            "timeouts (request.timeout.ms, delivery.timeout.ms, the consumer's session.timeout.ms) still "
            "run in wall time, so a request the lab answers late may time out on the client first."
        )
    if rate > 1:
        return (
            f"The lab runs at {speed_label(rate)}: the brokers' timeouts (a group member's session.timeout.ms, "
            f"replica.lag.time.max.ms) pass {rate:g} times faster than your clients' heartbeats, which "
            "run in wall time: a group of real consumers may see members expire and rebalance."
        )
    return ""


def listeners_view(
    listeners: Iterable[ListenerLike], *, rate: float, paused: bool, missing: str = "", opening: bool = False
) -> ListenersView:
    brokers = tuple(
        BrokerListenerView(
            broker_id=s.broker_id, host=s.host, port=s.port, open=s.open, error=s.error, opening=opening
        )
        for s in sorted(listeners, key=lambda s: s.broker_id)
    )
    return ListenersView(
        bootstrap_servers=",".join(b.address for b in brokers),
        brokers=brokers,
        clock_note=clock_note(rate, paused=paused),
        missing="" if brokers else missing or "This lab has no Kafka listeners.",
    )


# ---------------------------------------------------------------------------- snippets


@dataclass(frozen=True, slots=True, kw_only=True)
class Snippet:
    name: str  # kcat, kafka-python, confluent-kafka
    language: str  # sh, python
    install: str  # how to get the client
    text: str


def snippets(bootstrap_servers: str, topic: str) -> tuple[Snippet, ...]:
    """Copy-paste programs that produce a record to ``topic`` and read it back in a group."""
    b, t = bootstrap_servers, topic
    return (
        Snippet(
            name="kcat",
            language="sh",
            install="apt-get install kcat",
            text=(
                f"kcat -b {b} -L\n"
                f"echo 'key1:hello' | kcat -b {b} -t {t} -P -K:\n"
                f"kcat -b {b} -G my-app -X auto.offset.reset=earliest -f '%p %o %k %s\\n' {t}\n"
            ),
        ),
        Snippet(
            name="kafka-python",
            language="python",
            install="pip install kafka-python",
            text=(
                "from kafka import KafkaConsumer, KafkaProducer\n\n"
                f'producer = KafkaProducer(bootstrap_servers="{b}", acks="all")\n'
                f'producer.send("{t}", key=b"key1", value=b"hello").get(timeout=30)\n'
                "producer.close()\n\n"
                "consumer = KafkaConsumer(\n"
                f'    "{t}", bootstrap_servers="{b}",\n'
                '    group_id="my-app", auto_offset_reset="earliest",\n'
                ")\n"
                "for record in consumer:\n"
                "    print(record.partition, record.offset, record.key, record.value)\n"
            ),
        ),
        Snippet(
            name="confluent-kafka",
            language="python",
            install="pip install confluent-kafka",
            text=(
                "from confluent_kafka import Consumer, Producer\n\n"
                f'producer = Producer({{"bootstrap.servers": "{b}", "acks": "all"}})\n'
                f'producer.produce("{t}", key="key1", value="hello")\n'
                "producer.flush(30)\n\n"
                "consumer = Consumer({\n"
                f'    "bootstrap.servers": "{b}",\n'
                '    "group.id": "my-app", "auto.offset.reset": "earliest",\n'
                "})\n"
                f'consumer.subscribe(["{t}"])\n'
                "while True:\n"
                "    msg = consumer.poll(1.0)\n"
                "    if msg is not None and not msg.error():\n"
                "        print(msg.partition(), msg.offset(), msg.key(), msg.value())\n"
            ),
        ),
    )
