"""The listeners: one asyncio loop for every broker's socket, frames handed to the lab's driver."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader

from lab.cluster import ServedCluster, free_ports, parse_topic, serve
from lab.runtime.listeners import PAUSE_READING_AT, WireLoop
from lab.wire.codec import API_VERSIONS, Header, encode_request
from lab.wire.framing import frame
from lab.wire.shape import make
from tests.processes import wait_until


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCluster]:
    with serve(brokers=1, port=free_ports(1), data_dir=tmp_path) as cluster:
        yield cluster


def api_versions(correlation_id: int) -> bytes:
    header = Header(api_key=API_VERSIONS, api_version=0, correlation_id=correlation_id, client_id="t")
    return frame(encode_request(header, make(load_request_schema(API_VERSIONS, 0), {})))


def read_answers(sock: socket.socket, count: int) -> list[int]:
    """The correlation ids of the next ``count`` response frames."""
    stream = sock.makefile("rb")
    ids = []
    for _ in range(count):
        (size,) = struct.unpack(">i", stream.read(4))
        body = stream.read(size)
        assert len(body) == size, "the lab closed the connection"
        ids.append(struct.unpack_from(">i", body)[0])
    return ids


def test_calls_from_many_threads_all_run_on_the_loop_in_each_threads_order() -> None:
    wire_loop = WireLoop()
    ran: list[tuple[int, int]] = []
    done = threading.Event()
    per_thread = 5_000

    def note(thread: int, n: int) -> None:
        ran.append((thread, n))
        if len(ran) == 2 * per_thread:
            done.set()

    def caller(thread: int) -> None:
        for n in range(per_thread):
            wire_loop.call(note, thread, n)

    threads = [threading.Thread(target=caller, args=(t,)) for t in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert done.wait(30), f"{2 * per_thread - len(ran)} calls never ran"
    for t in (0, 1):
        assert [n for thread, n in ran if thread == t] == list(range(per_thread))


def test_a_client_that_sends_faster_than_the_lab_reads_is_paused_then_served_in_order(
    served: ServedCluster,
) -> None:
    # The driver is held busy while the client pipelines more requests than a connection may
    # queue: reading stops (back-pressure), then resumes once the driver catches up.
    busy, release = threading.Event(), threading.Event()

    def hold(_lab: object) -> None:
        busy.set()
        release.wait(30)

    held = served.lab.submit(hold)
    assert busy.wait(30)
    host, port = served.brokers[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        first = 5 * PAUSE_READING_AT
        sock.sendall(b"".join(api_versions(i) for i in range(first)))
        release.set()
        held.result(30)
        assert read_answers(sock, first) == list(range(first))
        sock.sendall(b"".join(api_versions(i) for i in range(first, first + 10)))
        assert read_answers(sock, 10) == list(range(first, first + 10))


def hello(correlation_id: int, client_id: str = "billing") -> bytes:
    header = Header(api_key=API_VERSIONS, api_version=3, correlation_id=correlation_id, client_id=client_id)
    body = make(
        load_request_schema(API_VERSIONS, 3),
        {"client_software_name": "lab-test", "client_software_version": "1.0"},
    )
    return frame(encode_request(header, body))


def client_events(served: ServedCluster) -> list[str]:
    return [f"{e.kind}: {e.text}" for e in served.cluster.events() if e.kind.startswith("client_")]


def test_a_connected_client_is_in_the_labs_frame_and_its_goodbye_in_the_timeline(
    served: ServedCluster,
) -> None:
    host, port = served.brokers[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(hello(1))
        assert read_answers(sock, 1) == [1]
        address = "{}:{}".format(*sock.getsockname())

        def rows() -> tuple:
            return served.lab.frame.views["wire-clients"].rows  # type: ignore[attr-defined]

        assert wait_until(lambda: len(rows()) == 1, 10)
        [row] = rows()
        assert (row.address, row.client_id, row.software, row.broker) == (
            address,
            "billing",
            "lab-test 1.0",
            1,
        )
        assert row.requests == 1
    assert wait_until(lambda: not rows(), 10)
    assert client_events(served) == [
        f"client_connected: lab-test 1.0 (client.id billing) connected to broker 1 from {address}",
        f"client_closed: lab-test 1.0 (client.id billing) at {address} closed its connection to broker 1",
    ]


def test_a_killed_brokers_clients_are_told_why_they_were_dropped(tmp_path: Path) -> None:
    with serve(brokers=2, port=free_ports(2), data_dir=tmp_path) as served:
        host, port = served.brokers[2].split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(hello(1))
            assert read_answers(sock, 1) == [1]
            address = "{}:{}".format(*sock.getsockname())
            served.cluster.kill_broker(2)
            assert sock.recv(1) == b""  # the lab closed it
        assert wait_until(lambda: any("client_disconnected" in e for e in client_events(served)), 10)
        assert (
            f"client_disconnected: lab-test 1.0 (client.id billing) at {address} disconnected from broker 2: "
            "broker 2 was killed"
        ) in client_events(served)


def test_a_bad_frame_drops_the_client_and_says_so(served: ServedCluster) -> None:
    host, port = served.brokers[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(hello(1))
        assert read_answers(sock, 1) == [1]
        sock.sendall(struct.pack(">i", -5))
        assert sock.recv(1) == b""
    assert wait_until(lambda: any("client_disconnected" in e for e in client_events(served)), 10)
    assert any("a frame said its size was -5 bytes" in e for e in client_events(served))


def metadata(sock: socket.socket, correlation_id: int) -> Any:
    """Every topic's metadata (Metadata v12), as the broker behind ``sock`` answers it."""
    header = Header(api_key=3, api_version=12, correlation_id=correlation_id, client_id="t")
    request = make(
        load_request_schema(3, 12),
        {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    sock.sendall(frame(encode_request(header, request)))
    stream = sock.makefile("rb")
    (size,) = struct.unpack(">i", stream.read(4))
    body = stream.read(size)
    schema = load_response_schema(3, 12)
    _, at = entity_reader(schema.__header_schema__)(body, 0)
    answer, _ = entity_reader(schema)(body, at)
    return answer


def test_a_killed_leader_stays_listed_with_its_address_while_the_cluster_thinks_it_alive(
    tmp_path: Path,
) -> None:
    # Until its ZooKeeper session expires, a crashed broker is alive to the others: Kafka's Metadata
    # still names it, at its address, as the leader it was; clients find it refusing connections
    # and retry. A leader missing from the brokers listed would leave a client with a partition
    # whose leader it cannot look up (aiokafka loops on "Broker id 1 not in current metadata").
    config = {"zookeeper.session.timeout.ms": "60000"}
    topics = [parse_topic("orders:3:3")]
    with serve(brokers=3, port=free_ports(3), data_dir=tmp_path, topics=topics, config=config) as served:
        victim = served.cluster.leader_of("orders", 0)
        survivor = next(b for b in (1, 2, 3) if b != victim)
        served.cluster.kill_broker(victim)
        host, port = served.brokers[survivor].split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            answer = metadata(sock, 1)
        listed = {b.node_id: f"{b.host}:{b.port}" for b in answer.brokers}
        assert listed[victim] == served.brokers[victim]
        leaders = {p.leader_id for t in answer.topics for p in t.partitions}
        assert leaders <= set(listed) | {-1}


def test_a_failed_tls_handshake_is_told_in_words_a_person_acts_on() -> None:
    import ssl

    from lab.runtime.listeners import tls_failure

    def ssl_error(reason: str) -> ssl.SSLError:
        error = ssl.SSLError(1, f"[SSL: {reason}] ...")
        error.reason = reason  # what OpenSSL's error carries
        return error

    assert tls_failure(ssl_error("WRONG_VERSION_NUMBER")).startswith("not TLS (WRONG_VERSION_NUMBER")
    assert tls_failure(ssl_error("HTTP_REQUEST")).startswith("not TLS (HTTP_REQUEST")
    assert "does not trust the broker's certificate" in tls_failure(ssl_error("TLSV1_ALERT_UNKNOWN_CA"))
    assert (
        tls_failure(ssl_error("NO_SHARED_CIPHER")) == "no TLS version or cipher in common (NO_SHARED_CIPHER)"
    )
    assert tls_failure(ssl_error("UNEXPECTED_MESSAGE")) == "a malformed TLS handshake (UNEXPECTED_MESSAGE)"
    late = ConnectionAbortedError("SSL handshake is taking longer than 60.0 seconds: aborting the connection")
    assert tls_failure(late) == "no handshake within 60 s"
    assert tls_failure(ConnectionResetError()) == "the client closed the connection during the handshake"


def test_a_brokers_listener_settings_are_what_its_server_properties_would_say() -> None:
    from lab.runtime.listeners import Listeners

    listeners = Listeners(
        None,
        bind_host="0.0.0.0",
        advertised_host="10.0.0.5",
        ports={1: 19092, 2: 19093},
        secured={"SASL_SSL": {1: 19095, 2: 19096}},
    )
    assert listeners.server_properties(2) == {
        "listeners": "PLAINTEXT://0.0.0.0:19093,SASL_SSL://0.0.0.0:19096",
        "advertised.listeners": "PLAINTEXT://10.0.0.5:19093,SASL_SSL://10.0.0.5:19096",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "ssl.keystore.type": "PEM",
    }
    plain = Listeners(None, bind_host="127.0.0.1", advertised_host="127.0.0.1", ports={1: 19092})
    assert plain.server_properties(1) == {
        "listeners": "PLAINTEXT://127.0.0.1:19092",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:19092",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
    }


def test_ipv6_listeners_are_written_in_brackets_as_in_kafkas_server_properties() -> None:
    from lab.runtime.listeners import Listeners

    listeners = Listeners(
        None,
        bind_host="::",
        advertised_host="::1",
        ports={1: 19092, 2: 19093},
        secured={"SSL": {1: 19098, 2: 19099}},
    )
    assert listeners.server_properties(2)["listeners"] == "PLAINTEXT://[::]:19093,SSL://[::]:19099"
    assert (
        listeners.server_properties(2)["advertised.listeners"] == "PLAINTEXT://[::1]:19093,SSL://[::1]:19099"
    )
    assert listeners.bootstrap_servers == "[::1]:19092,[::1]:19093"  # what a client's bootstrap.servers takes


def test_a_brokers_znode_registers_every_listener_at_the_address_the_page_shows(tmp_path: Path) -> None:
    """/brokers/ids/<id> as Kafka writes it for a served lab: every listener's advertised address in
    ``endpoints``, their security protocols, and host and port of the PLAINTEXT one: what the page's
    listeners panel shows, not 127.0.0.1:9092+id."""
    import json

    base = free_ports(4)
    with serve(
        brokers=2, port=base, data_dir=tmp_path, advertised_host="localhost", listeners=["SASL_SSL"]
    ) as served:
        live = served.lab
        tree = live.submit(lambda lab: {n["path"]: n["data"] for n in lab.cluster.zookeeper_tree()}).result(
            10
        )
        assert live.listeners is not None
        shown = live.listeners.states()
        for broker in (1, 2):
            znode = json.loads(tree[f"/brokers/ids/{broker}"])
            mine = [s for s in shown if s.broker_id == broker]
            assert znode["endpoints"] == [f"{s.protocol}://{s.host}:{s.port}" for s in mine]
            assert znode["endpoints"] == [
                f"PLAINTEXT://localhost:{base + broker - 1}",
                f"SASL_SSL://localhost:{base + 2 + broker - 1}",
            ]
            assert znode["listener_security_protocol_map"] == {
                "PLAINTEXT": "PLAINTEXT",
                "SASL_SSL": "SASL_SSL",
            }
            assert (znode["host"], znode["port"]) == ("localhost", base + broker - 1)
