"""One connection: the APIs it is told of, protocol errors, and faults that reach it."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsV0
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from lab.engine.cluster import Cluster
from lab.wire.apis import APIS
from lab.wire.codec import Header, encode_request
from tests.engine.helpers import checked_cluster
from tests.wire.harness import WireClient
from tests.wire.test_data import METADATA, PRODUCE, leader, produce_body

API_VERSIONS = 18


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        yield c


def metadata_body() -> dict:
    return {
        "topics": [{"name": "orders"}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def test_api_versions_lists_what_is_served_and_names_the_clients_software(cluster: Cluster) -> None:
    client = WireClient(cluster)
    answer = client.ask(API_VERSIONS, 3, {"client_software_name": "kcat", "client_software_version": "1.7.1"})
    served = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
    assert served == {k: (a.min_version, a.max_version) for k, a in APIS.items()}
    assert {0, 1, 2, 3, 18}.issubset(served)
    assert served[22] == (0, 4)  # InitProducerId, as Kafka 3.x serves it
    # The transaction coordinator's and leaders' APIs, at Kafka 3.x's versions (before KIP-890).
    assert {k: served[k] for k in (24, 25, 26, 27, 28, 65, 66)} == {
        24: (0, 3),  # AddPartitionsToTxn
        25: (0, 3),  # AddOffsetsToTxn
        26: (0, 3),  # EndTxn
        27: (1, 1),  # WriteTxnMarkers (kio, from Kafka 4's schemas, has no v0)
        28: (0, 3),  # TxnOffsetCommit
        65: (0, 0),  # DescribeTransactions
        66: (0, 0),  # ListTransactions
    }
    assert client.conn.software == ("kcat", "1.7.1")


def test_api_versions_newer_than_served_answers_v0_with_unsupported_version(cluster: Cluster) -> None:
    client = WireClient(cluster)
    # A client from the future asks with v9, whose body the lab cannot read: it answers in v0.
    payload = struct.pack(">hhih", API_VERSIONS, 9, 77, 4) + b"test" + b"\x00\x00"
    client.send_raw(payload)
    cluster.run_for(10)
    frame = client.sent.pop(0)
    (correlation,) = struct.unpack_from(">i", frame, 4)
    body, _ = entity_reader(ApiVersionsV0)(frame, 8)
    assert correlation == 77
    assert body.error_code == ErrorCode.unsupported_version
    assert any(a.api_key == 0 for a in body.api_keys)
    assert client.closed_because is None


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (struct.pack(">hhih", 57, 0, 1, -1), "API key 57"),  # UpdateFeatures: not served
        (struct.pack(">hhih", 0, 42, 1, -1), "Produce v42"),
        (struct.pack(">hhih", 999, 0, 1, -1), "API key 999"),
        (b"\x00\x03", "shorter than any request header"),
        (struct.pack(">hhih", 3, 9, 1, -1) + b"\xff\xff\xff", "malformed Metadata v9"),
    ],
)
def test_a_request_the_broker_cannot_serve_closes_the_connection_and_says_why(
    cluster: Cluster, payload: bytes, why: str
) -> None:
    client = WireClient(cluster)
    client.send_raw(payload)
    cluster.run_for(10)
    assert client.closed_because is not None
    assert why in client.closed_because
    assert not client.sent
    journal = [e.text for e in cluster.events() if e.kind == "client_disconnected"]
    assert any(why in text for text in journal)
    # The broker carries on: a new connection is served.
    assert WireClient(cluster).ask(METADATA, 9, metadata_body()).topics[0].name == "orders"


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(api_key=st.sampled_from(sorted(APIS)), junk=st.binary(max_size=200), version=st.integers(-1, 20))
def test_any_bytes_are_answered_or_refused_never_crash_the_lab(
    cluster: Cluster, api_key: int, junk: bytes, version: int
) -> None:
    client = WireClient(cluster)
    client.send_raw(struct.pack(">hhi", api_key, version, 5) + junk)
    cluster.run_for(600)  # a fetch may wait out its max wait
    assert client.sent or client.closed_because is not None or client.conn.in_flight == 1
    client.conn.disconnected()
    assert WireClient(cluster).ask(METADATA, 9, metadata_body()).topics[0].error_code == ErrorCode.none


def test_a_killed_broker_drops_its_connections(cluster: Cluster) -> None:
    lead = leader(cluster)
    client = WireClient(cluster, lead)
    cluster.kill_broker(lead)
    client.send(PRODUCE, 9, produce_body(0, [b"x"]))
    cluster.run_for(100)
    assert client.closed_because is not None
    assert "not running" in client.closed_because


def test_a_paused_broker_holds_requests_until_it_resumes(cluster: Cluster) -> None:
    lead = leader(cluster)
    client = WireClient(cluster, lead)
    cluster.pause_broker(lead)
    client.send(METADATA, 9, metadata_body())
    cluster.run_for(5_000)
    assert not client.sent
    assert client.closed_because is None
    cluster.resume_broker(lead)
    assert client.answer(METADATA, 9).topics[0].name == "orders"


def test_a_broker_cut_off_from_clients_never_answers_but_keeps_replicating(cluster: Cluster) -> None:
    lead = leader(cluster)
    client = WireClient(cluster, lead)
    cluster.isolate_broker(lead, from_="clients")
    client.send(METADATA, 9, metadata_body())
    cluster.run_for(5_000)
    assert not client.sent
    assert len(cluster.partition_state("orders", 0)["isr"]) == 3
    cluster.heal(lead)
    assert WireClient(cluster, lead).ask(METADATA, 9, metadata_body()).topics[0].name == "orders"


def test_requests_are_answered_in_the_order_they_came(cluster: Cluster) -> None:
    client = WireClient(cluster, leader(cluster))
    ids = [client.send(PRODUCE, 9, produce_body(0, [b"%d" % i])) for i in range(5)]
    got = []
    for _ in ids:
        answer = client.answer(PRODUCE, 9)
        got.append((client.last_correlation, answer.responses[0].partition_responses[0].base_offset))
    assert got == [(cid, i) for i, cid in enumerate(ids)]


def test_header_client_id_is_what_the_lab_calls_the_client(cluster: Cluster) -> None:
    client = WireClient(cluster)
    client.conn.received(
        encode_request(
            Header(api_key=3, api_version=9, correlation_id=1, client_id="billing-app"),
            __import__("lab.wire.shape", fromlist=["make"]).make(
                __import__("kio.index", fromlist=["x"]).load_request_schema(3, 9), metadata_body()
            ),
        )
    )
    client.answer(METADATA, 9)
    assert client.conn.client_id == "billing-app"


# ---------------------------------------------------------------------------- what the Clients view shows


def hello(client: WireClient, name: str = "kafka-python", version: str = "2.3.3") -> None:
    client.ask(API_VERSIONS, 3, {"client_software_name": name, "client_software_version": version})


def test_a_connection_says_who_it_is_where_it_is_and_what_it_does(cluster: Cluster) -> None:
    lead = leader(cluster)
    client = WireClient(cluster, lead)
    hello(client)
    for i in range(4):
        client.ask(PRODUCE, 9, produce_body(0, [b"a%d" % i, b"b%d" % i]))
    [row] = [r for r in client.server.snapshot() if r["id"] == client.conn.id]
    assert row["peer"] == "127.0.0.1:50000"
    assert (row["software_name"], row["software_version"], row["client_id"]) == (
        "kafka-python",
        "2.3.3",
        "test",
    )
    assert row["broker"] == lead
    assert row["requests"] == 5
    assert row["records_produced"] == 8
    assert row["in_flight"] == 0
    assert row["last_error"] == ""
    # Five requests within the first second of the connection's life.
    assert row["requests_per_s"] == 5.0


def test_requests_per_second_is_over_the_last_few_seconds(cluster: Cluster) -> None:
    client = WireClient(cluster)
    for _ in range(10):
        client.ask(METADATA, 9, metadata_body())
    cluster.run_for(2_500)
    row = client.server.snapshot()[-1]
    assert row["requests_per_s"] == 4.0  # 10 in 2.5 s
    cluster.run_for(6_000)
    assert client.server.snapshot()[-1]["requests_per_s"] == 0.0


def test_an_older_client_has_no_software_name(cluster: Cluster) -> None:
    client = WireClient(cluster)
    client.ask(API_VERSIONS, 0, {})
    row = client.server.snapshot()[-1]
    assert (row["software_name"], row["software_version"]) == ("", "")


def test_a_request_the_broker_holds_is_in_flight(cluster: Cluster) -> None:
    lead = leader(cluster)
    client = WireClient(cluster, lead)
    cluster.pause_broker(lead)
    client.send(METADATA, 9, metadata_body())
    client.send(METADATA, 9, metadata_body())
    cluster.run_for(100)
    assert client.server.snapshot()[-1]["in_flight"] == 2
    cluster.resume_broker(lead)
    client.answer(METADATA, 9)
    client.answer(METADATA, 9)
    assert client.server.snapshot()[-1]["in_flight"] == 0


def test_the_last_error_is_kafkas_name_with_the_api_that_got_it(cluster: Cluster) -> None:
    follower = next(b for b in (1, 2, 3) if b != leader(cluster))
    client = WireClient(cluster, follower)
    client.ask(PRODUCE, 9, produce_body(0, [b"x"]))
    row = client.server.snapshot()[-1]
    assert (row["last_error"], row["last_error_api"], row["errors"]) == (
        "NOT_LEADER_OR_FOLLOWER",
        "Produce",
        1,
    )
    assert row["last_error_ms"] == cluster.now_ms


# ---------------------------------------------------------------------------- what the timeline says


def client_events(cluster: Cluster) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in cluster.events() if e.kind.startswith("client_")]


def test_a_client_connecting_and_closing_is_named_once_each(cluster: Cluster) -> None:
    client = WireClient(cluster, 2)
    hello(client)
    for _ in range(5):
        client.ask(METADATA, 9, metadata_body())
    client.conn.disconnected()
    assert client_events(cluster) == [
        (
            "client_connected",
            "kafka-python 2.3.3 (client.id test) connected to broker 2 from 127.0.0.1:50000",
        ),
        (
            "client_closed",
            "kafka-python 2.3.3 (client.id test) at 127.0.0.1:50000 closed its connection to broker 2",
        ),
    ]


def test_a_dropped_connection_says_why(cluster: Cluster) -> None:
    client = WireClient(cluster, 1)
    hello(client)
    client.server.drop_broker(1, "broker 1 was killed")
    other = WireClient(cluster, 2)
    hello(other, "rdkafka", "2.16.0")
    other.server.close("the lab was reset")
    kinds = client_events(cluster)
    assert (
        "client_disconnected",
        "kafka-python 2.3.3 (client.id test) at 127.0.0.1:50000 disconnected from broker 1: broker 1 was killed",
    ) in kinds
    assert (
        "client_disconnected",
        "rdkafka 2.16.0 (client.id test) at 127.0.0.1:50000 disconnected from broker 2: "
        "the listener closed (the lab was reset)",
    ) in kinds


def test_what_a_client_does_is_summed_up_never_a_line_per_request(cluster: Cluster) -> None:
    lead = leader(cluster)
    follower = next(b for b in (1, 2, 3) if b != lead)
    producer = WireClient(cluster, lead)
    hello(producer)
    to_follower = WireClient(cluster, follower)  # the same client's other connection
    hello(to_follower)
    for i in range(300):
        producer.ask(PRODUCE, 9, produce_body(0, [b"r%d" % i] * 4))
    to_follower.ask(PRODUCE, 9, produce_body(0, [b"x"]))
    to_follower.ask(PRODUCE, 9, produce_body(0, [b"y"]))
    cluster.run_for(6_000)
    summaries = [(k, t) for k, t in client_events(cluster) if k in ("client_activity", "client_errors")]
    assert len(summaries) == 1
    kind, text = summaries[0]
    assert kind == "client_errors"  # NOT_LEADER_OR_FOLLOWER makes a client back off
    assert text.startswith(
        "kafka-python 2.3.3 (client.id test) produced 1,200 records to orders, "
        "2 errors NOT_LEADER_OR_FOLLOWER in Produce (2 times)"
    )
    # Quiet clients say nothing: metadata and heartbeats are no news.
    for _ in range(5):
        producer.ask(METADATA, 9, metadata_body())
    cluster.run_for(6_000)
    assert len([k for k, _ in client_events(cluster) if k in ("client_activity", "client_errors")]) == 1


def test_a_clients_other_connections_take_the_software_it_said_once(cluster: Cluster) -> None:
    # kafka-python asks ApiVersions on its bootstrap connection only.
    bootstrap = WireClient(cluster, 1)
    hello(bootstrap)
    other = WireClient(cluster, 2)
    other.ask(METADATA, 9, metadata_body())
    stranger = WireClient(cluster, 2)
    stranger.send(METADATA, 9, metadata_body(), client_id="someone-else")
    stranger.answer(METADATA, 9)
    rows = {r["id"]: r for r in bootstrap.server.snapshot()}
    assert (rows[other.conn.id]["software_name"], rows[other.conn.id]["software_version"]) == (
        "kafka-python",
        "2.3.3",
    )
    assert rows[stranger.conn.id]["software_name"] == ""


def test_a_client_that_gives_up_on_a_paused_broker_is_named_with_what_it_waited_for(cluster: Cluster) -> None:
    lead = leader(cluster)
    client = WireClient(cluster, lead)
    hello(client)
    cluster.pause_broker(lead)
    client.send(METADATA, 9, metadata_body())
    client.send(METADATA, 9, metadata_body())
    cluster.run_for(1_000)
    client.conn.disconnected()  # its request.timeout.ms ran out
    assert client_events(cluster)[-1] == (
        "client_gave_up",
        f"kafka-python 2.3.3 (client.id test) at 127.0.0.1:50000 closed its connection to broker {lead} with 2 "
        "requests unanswered (a client gives up on a broker that does not answer within its "
        "request.timeout.ms, in wall time)",
    )
