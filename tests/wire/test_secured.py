"""Real clients on the lab's secured listeners, over real sockets: confluent-kafka and kafka-python with
SCRAM over SASL_SSL verifying the lab's CA, PLAIN over SASL_PLAINTEXT, TLS alone; Kafka's errors for a
wrong password, and bad input (garbage for a TLS handshake, a malformed SASL frame, an unknown
mechanism) leaves the broker serving the next good client."""

from __future__ import annotations

import logging
import shutil
import socket
import ssl
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTopicPartition
from kafka.errors import KafkaError as KPKafkaError

from lab.cluster import ServedCluster
from tests.processes import wait_until

pytestmark = pytest.mark.kafka_lab(
    brokers=3,
    topics=["orders:3:3"],
    listeners=["SASL_SSL", "SASL_PLAINTEXT", "SSL"],
    users={"alice": "alice-secret"},
)


def scram(kafka_lab: ServedCluster, mechanism: str = "SCRAM-SHA-256", password: str = "alice-secret") -> dict:
    return {
        "bootstrap.servers": kafka_lab.bootstrap("SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
        "ssl.ca.location": kafka_lab.ca_file,
    }


def confluent_round_trip(config: dict, count: int = 200) -> list[bytes]:
    """Produce ``count`` records to orders and read them back with ``config``: the values read."""
    tag = uuid.uuid4().hex[:8].encode()
    producer = Producer({**config, "linger.ms": 5, "message.timeout.ms": 30_000})
    failed: list[KafkaError] = []
    for i in range(count):
        producer.produce("orders", value=tag + b"-%04d" % i, on_delivery=lambda e, m: e and failed.append(e))
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    consumer = Consumer({**config, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition("orders", p, 0) for p in range(3)])
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    while sum(v.startswith(tag) for v in seen) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen.append(message.value())
    consumer.close()
    return [v for v in seen if v.startswith(tag)]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_produces_and_consumes_with_scram_over_sasl_ssl(
    kafka_lab: ServedCluster, mechanism: str
) -> None:
    assert len(confluent_round_trip(scram(kafka_lab, mechanism))) == 200
    events = kafka_lab.cluster.events()
    assert any(
        e.kind == "client_authenticated" and "User:alice" in e.text and mechanism in e.text for e in events
    )


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_produces_and_consumes_with_scram_over_sasl_ssl(
    kafka_lab: ServedCluster, mechanism: str
) -> None:
    options = {
        "bootstrap_servers": kafka_lab.bootstrap("SASL_SSL"),
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_cafile": kafka_lab.ca_file,
    }
    tag = uuid.uuid4().hex[:8].encode()
    producer = KafkaProducer(**options)
    futures = [producer.send("orders", value=tag + b"-%03d" % i) for i in range(100)]
    for future in futures:
        future.get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(**options, enable_auto_commit=False, consumer_timeout_ms=2000)
    consumer.assign([KPTopicPartition("orders", p) for p in range(3)])
    consumer.seek_to_beginning()
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len({v for v in seen if v.startswith(tag)}) < 100 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            seen |= {r.value for r in records}
    consumer.close()
    assert len({v for v in seen if v.startswith(tag)}) == 100


def test_a_wrong_password_fails_with_sasl_authentication_failed(
    kafka_lab: ServedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    errors: list[KafkaError] = []
    admin = AdminClient({**scram(kafka_lab, password="wrong"), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)

    def told() -> bool:
        admin.poll(0.1)  # error_cb runs from poll
        return any(e.code() == KafkaError._AUTHENTICATION for e in errors)

    assert wait_until(told, 10)
    assert any(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism "
        "SCRAM-SHA-256" in e.str()
        for e in errors
    ), errors
    # kafka-python logs Kafka's error as it closes the connection, and its send never gets through.
    with caplog.at_level(logging.ERROR, logger="kafka.conn"):
        producer = KafkaProducer(
            bootstrap_servers=kafka_lab.bootstrap("SASL_SSL"),
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password="wrong",
            ssl_cafile=kafka_lab.ca_file,
            max_block_ms=3000,
        )
        with pytest.raises(KPKafkaError):
            producer.send("orders", b"never").get(timeout=5)
        producer.close(timeout=5)
    assert (
        "[Error 58] SaslAuthenticationFailedError: Authentication failed during authentication" in caplog.text
    )
    failed = [e for e in kafka_lab.cluster.events() if e.kind == "client_authentication_failed"]
    assert failed
    # The broker carries on: the right password works at once.
    assert len(confluent_round_trip(scram(kafka_lab), 10)) == 10


def test_plain_over_sasl_plaintext_and_tls_alone(kafka_lab: ServedCluster) -> None:
    plain = {
        "bootstrap.servers": kafka_lab.bootstrap("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    assert len(confluent_round_trip(plain, 10)) == 10
    tls = {
        "bootstrap.servers": kafka_lab.bootstrap("SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": kafka_lab.ca_file,
    }
    assert len(confluent_round_trip(tls, 10)) == 10


def test_a_client_that_does_not_trust_the_lab_ca_is_refused_by_its_own_tls(kafka_lab: ServedCluster) -> None:
    host, port = kafka_lab.bootstrap("SSL").split(",")[0].rsplit(":", 1)
    context = ssl.create_default_context()  # the system's CAs, not the lab's
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        context.wrap_socket(raw, server_hostname=host)
    context = ssl.create_default_context(cafile=kafka_lab.ca_file)
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host),
    ):
        pass  # the lab's CA vouches for the broker under the advertised host's name
    # A broker describes the listeners it was made with, as Kafka's DescribeConfigs does; no password.
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    admin = AdminClient(scram(kafka_lab))  # kept: a client collected mid-call is destroyed
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["advertised.listeners"].value.split(",") == [
        f"{p}://{kafka_lab.bootstrap(p).split(',')[0]}"
        for p in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
    ]
    assert configs["sasl.enabled.mechanisms"].value == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert configs["ssl.key.password"].is_sensitive
    assert configs["ssl.key.password"].value is None


def test_bad_input_fails_the_connection_and_the_broker_carries_on(kafka_lab: ServedCluster) -> None:
    host, port = kafka_lab.bootstrap("SASL_SSL").split(",")[0].rsplit(":", 1)
    # Not TLS at all where a TLS handshake should be: the listener closes that connection, and the
    # timeline says whose handshake failed and why.
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        mine = raw.getsockname()
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n")
        while raw.recv(1024):
            pass

    def told() -> list[str]:
        return [e.text for e in kafka_lab.cluster.events() if e.kind == "tls_handshake_failed"]

    assert wait_until(lambda: told(), 10)
    assert told()[0] == (
        f"TLS handshake from {mine[0]}:{mine[1]} to broker 1's SASL_SSL listener failed: "
        "not TLS (HTTP_REQUEST: a PLAINTEXT client on a TLS listener?)"
    )
    # Garbage that starts like a TLS record: closed too (its line waits for the 5 s summary).
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(b"\x16\x03\x01\x00\x05garbage-not-a-client-hello" * 4)
        received = b""
        while chunk := raw.recv(1024):
            received += chunk
        assert received[:1] in (b"", b"\x15")  # nothing, or a TLS alert; then the close
    context = ssl.create_default_context(cafile=kafka_lab.ca_file)
    plain_host, plain_port = kafka_lab.bootstrap("SASL_PLAINTEXT").split(",")[0].rsplit(":", 1)

    def request(api_key: int, version: int, body: bytes, correlation: int) -> bytes:
        header = struct.pack(">hhih", api_key, version, correlation, 4) + b"test"
        payload = header + body
        return struct.pack(">i", len(payload)) + payload

    # An unknown mechanism: UNSUPPORTED_SASL_MECHANISM (33) and the enabled ones, then the close.
    with socket.create_connection((plain_host, int(plain_port)), timeout=5) as sock:
        sock.sendall(request(17, 1, struct.pack(">h", 6) + b"GSSAPI", 1))
        answer = _read_frame(sock)
        (correlation, error) = struct.unpack_from(">ih", answer)
        assert (correlation, error) == (1, 33)
        assert b"SCRAM-SHA-256" in answer
        assert sock.recv(1) == b""
    # A malformed SASL frame after a good handshake: SASL_AUTHENTICATION_FAILED (58), then the close.
    with socket.create_connection((plain_host, int(plain_port)), timeout=5) as sock:
        sock.sendall(request(17, 1, struct.pack(">h", 13) + b"SCRAM-SHA-256", 1))
        assert struct.unpack_from(">ih", _read_frame(sock)) == (1, 0)
        sock.sendall(request(36, 1, struct.pack(">i", 5) + b"\xff\x00\x01\x02\x03", 2))
        answer = _read_frame(sock)
        assert struct.unpack_from(">ih", answer) == (2, 58)
        assert b"invalid credentials with SASL mechanism SCRAM-SHA-256" in answer
        assert sock.recv(1) == b""
    # A TLS client of the SASL_SSL listener that sends Metadata before authenticating: closed.
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as sock,
    ):
        sock.sendall(request(3, 1, struct.pack(">i", -1), 1))
        assert sock.recv(1) == b""
    assert len(confluent_round_trip(scram(kafka_lab), 10)) == 10


def _read_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", _exactly(sock, 4))[0]
    return _exactly(sock, size)


def _exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def test_kcat_produces_and_consumes_with_scram_over_sasl_ssl(kafka_lab: ServedCluster) -> None:
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is not installed: `make system-kcat` installs Debian's"
    secured = [
        kcat,
        "-b",
        kafka_lab.bootstrap("SASL_SSL"),
        "-X",
        "security.protocol=SASL_SSL",
        "-X",
        "sasl.mechanisms=SCRAM-SHA-512",
        "-X",
        "sasl.username=alice",
        "-X",
        "sasl.password=alice-secret",
        "-X",
        f"ssl.ca.location={kafka_lab.ca_file}",
    ]
    tag = uuid.uuid4().hex[:8]
    lines = [f"{tag}-{i}" for i in range(20)]
    produced = subprocess.run(
        [*secured, "-P", "-t", "orders", "-p", "0"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [*secured, "-C", "-t", "orders", "-p", "0", "-o", "beginning", "-e"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert [line for line in consumed.stdout.splitlines() if line.startswith(tag)] == lines


def test_the_clients_view_shows_who_logged_in_and_by_which_listener(kafka_lab: ServedCluster) -> None:
    producer = Producer({**scram(kafka_lab), "client.id": "who-am-i"})
    producer.produce("orders", b"hello")
    assert producer.flush(30) == 0

    def rows() -> list:
        return [r for r in kafka_lab.lab.frame.views["wire-clients"].rows if r.client_id == "who-am-i"]  # type: ignore[attr-defined]

    # A frame drawn while a connection was still logging in shows it as User:ANONYMOUS (Kafka's
    # principal until SASL says otherwise): the view catches up within a frame or two.
    assert wait_until(lambda: {(r.listener, r.principal) for r in rows()} == {("SASL_SSL", "User:alice")}, 15)
    del producer
