"""A lab's Kafka listeners as its page shows them: ``bootstrap.servers``, each broker's listener, and
what the lab's clock means for a real client connected to it. Also the snippets a person copies.

Pure: it reads listener states (``lab.runtime.listeners.ListenerState`` or anything shaped like
one) and the clock's rate, and makes values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from lab.engine.endpoints import format_address
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
        return format_address(self.host, self.port)

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


# What a client of each secured listener sets beside bootstrap.servers (librdkafka's names).
CLIENT_SETTINGS = {
    "SASL_PLAINTEXT": "security.protocol=SASL_PLAINTEXT, sasl.mechanism=SCRAM-SHA-256 (or SCRAM-SHA-512, PLAIN), "
    "sasl.username, sasl.password: a user of the lab's (the topic admin's Users)",
    "SSL": "security.protocol=SSL, ssl.ca.location=the lab's CA file (download it here): TLS, no login",
    "SASL_SSL": "security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-256 (or SCRAM-SHA-512, PLAIN), "
    "sasl.username, sasl.password, ssl.ca.location=the lab's CA file",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SecuredListenerView:
    """One listener beside PLAINTEXT (SASL_PLAINTEXT, SSL, SASL_SSL): its own ports on every broker."""

    protocol: str
    bootstrap_servers: str
    brokers: tuple[BrokerListenerView, ...]

    @property
    def settings(self) -> str:
        return CLIENT_SETTINGS.get(self.protocol, "")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenersView:
    bootstrap_servers: str  # "" when the lab has no listeners
    brokers: tuple[BrokerListenerView, ...]
    clock_note: str  # what the clock's speed does to connected clients; "" at 1x
    missing: str = ""  # why there are no listeners, when there are none
    secured: tuple[SecuredListenerView, ...] = ()  # the listeners beside PLAINTEXT

    @property
    def tls(self) -> bool:
        """Some listener speaks TLS: the page offers the lab's CA file."""
        return any(s.tls for s in self.secured)

    @property
    def broker_config(self) -> str:
        """The brokers' listener settings, as Kafka's server.properties would say them (broker 1's)."""
        mine = [("PLAINTEXT", b) for b in self.brokers if b.broker_id == 1]
        mine += [(s.protocol, b) for s in self.secured for b in s.brokers if b.broker_id == 1]
        if not mine:
            return ""
        listeners = ",".join(f"{p}://{b.address}" for p, b in mine)
        protocols = ",".join(f"{p}:{p}" for p, _ in mine)
        return f"listeners={listeners}\nlistener.security.protocol.map={protocols}"


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
    by_protocol: dict[str, list[BrokerListenerView]] = {}
    for s in sorted(listeners, key=lambda s: s.broker_id):
        by_protocol.setdefault(getattr(s, "protocol", "PLAINTEXT"), []).append(
            BrokerListenerView(
                broker_id=s.broker_id, host=s.host, port=s.port, open=s.open, error=s.error, opening=opening
            )
        )
    brokers = tuple(by_protocol.pop("PLAINTEXT", ()))
    return ListenersView(
        bootstrap_servers=",".join(b.address for b in brokers),
        brokers=brokers,
        clock_note=clock_note(rate, paused=paused),
        missing="" if brokers else missing or "This lab has no Kafka listeners.",
        secured=tuple(
            SecuredListenerView(
                protocol=protocol, bootstrap_servers=",".join(b.address for b in found), brokers=tuple(found)
            )
            for protocol, found in by_protocol.items()
        ),
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


def secured_snippets(
    listener: SecuredListenerView, topic: str, ca_file: str = "ca.pem"
) -> tuple[Snippet, ...]:
    """The same programs on a secured listener, as user ``alice`` (made in the topic admin's Users)."""
    b, t, p = listener.bootstrap_servers, topic, listener.protocol
    kcat_x = [f"security.protocol={p}"]
    py = [f'security_protocol="{p}"']
    ck = [f'"security.protocol": "{p}"']
    if listener.sasl:
        kcat_x += ["sasl.mechanisms=SCRAM-SHA-256", "sasl.username=alice", "sasl.password=alice-secret"]
        py += [
            'sasl_mechanism="SCRAM-SHA-256"',
            'sasl_plain_username="alice"',
            'sasl_plain_password="alice-secret"',
        ]
        ck += [
            '"sasl.mechanism": "SCRAM-SHA-256"',
            '"sasl.username": "alice"',
            '"sasl.password": "alice-secret"',
        ]
    if listener.tls:
        kcat_x.append(f"ssl.ca.location={ca_file}")
        py.append(f'ssl_cafile="{ca_file}"')
        ck.append(f'"ssl.ca.location": "{ca_file}"')
    x = " ".join(f"-X {o}" for o in kcat_x)
    py_options = "".join(f"    {o},\n" for o in py)
    ck_options = "".join(f"    {o},\n" for o in ck)
    return (
        Snippet(
            name=f"kcat-{p.lower()}",
            language="sh",
            install="apt-get install kcat",
            text=(
                f"kcat -b {b} {x} -L\n"
                f"echo 'key1:hello' | kcat -b {b} {x} -t {t} -P -K:\n"
                f"kcat -b {b} {x} -t {t} -C -o beginning -e -f '%p %o %k %s\\n'\n"
            ),
        ),
        Snippet(
            name=f"kafka-python-{p.lower()}",
            language="python",
            install="pip install kafka-python",
            text=(
                "from kafka import KafkaConsumer, KafkaProducer\n\n"
                f'options = dict(\n    bootstrap_servers="{b}",\n{py_options})\n'
                'producer = KafkaProducer(acks="all", **options)\n'
                f'producer.send("{t}", key=b"key1", value=b"hello").get(timeout=30)\n'
                "producer.close()\n\n"
                f'consumer = KafkaConsumer("{t}", group_id="my-app", auto_offset_reset="earliest", **options)\n'
                "for record in consumer:\n"
                "    print(record.partition, record.offset, record.key, record.value)\n"
            ),
        ),
        Snippet(
            name=f"confluent-kafka-{p.lower()}",
            language="python",
            install="pip install confluent-kafka",
            text=(
                "from confluent_kafka import Consumer, Producer\n\n"
                f'config = {{\n    "bootstrap.servers": "{b}",\n{ck_options}}}\n'
                'producer = Producer({**config, "acks": "all"})\n'
                f'producer.produce("{t}", key="key1", value="hello")\n'
                "producer.flush(30)\n\n"
                'consumer = Consumer({**config, "group.id": "my-app", "auto.offset.reset": "earliest"})\n'
                f'consumer.subscribe(["{t}"])\n'
                "while True:\n"
                "    msg = consumer.poll(1.0)\n"
                "    if msg is not None and not msg.error():\n"
                "        print(msg.partition(), msg.offset(), msg.key(), msg.value())\n"
            ),
        ),
    )
