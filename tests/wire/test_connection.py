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
    assert 22 not in served  # InitProducerId: the lab has no idempotence yet, so it does not say it has
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
        (struct.pack(">hhih", 22, 4, 1, -1), "API key 22"),  # InitProducerId: not served
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
