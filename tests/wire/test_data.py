"""The data plane over the wire, in virtual time: what a client sends, what the lab answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from lab.engine.cluster import Cluster
from lab.engine.records import build_batch, iter_records
from tests.engine.helpers import checked_cluster, part
from tests.wire.harness import WireClient

PRODUCE, FETCH, LIST_OFFSETS, METADATA, EPOCH = 0, 1, 2, 3, 23


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
        yield c


def leader(cluster: Cluster, partition: int = 0) -> int:
    found = cluster.leader_of("orders", partition)
    assert found is not None
    return found


def produce_body(partition: int, values: list[bytes], *, acks: int = -1) -> dict:
    batch = build_batch([(None, v) for v in values], timestamp_ms=1_000)
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": 5_000,
        "topic_data": [{"name": "orders", "partition_data": [{"index": partition, "records": batch}]}],
    }


def fetch_body(
    partition: int, offset: int, *, max_wait: int = 500, min_bytes: int = 1, epoch: int = -1
) -> dict:
    return {
        "replica_id": -1,
        "max_wait": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": epoch,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_names_every_broker_at_its_listener_and_each_partitions_leader(
    cluster: Cluster, version: int
) -> None:
    client = WireClient(cluster)
    topics = [{"topic_id": None, "name": "orders"}] if version >= 10 else [{"name": "orders"}]
    body = {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
        "include_cluster_authorized_operations": False,
    }
    answer = client.ask(METADATA, version, body)
    assert sorted((b.node_id, b.host, b.port) for b in answer.brokers) == [
        (1, "127.0.0.1", 9092),
        (2, "127.0.0.1", 9093),
        (3, "127.0.0.1", 9094),
    ]
    [topic] = answer.topics
    assert (topic.name, topic.error_code) == ("orders", ErrorCode.none)
    state = {p.partition_index: p for p in topic.partitions}
    for p in (0, 1):
        snapshot = cluster.partition_state("orders", p)
        assert state[p].leader_id == snapshot["leader"]
        assert sorted(state[p].isr_nodes) == sorted(snapshot["isr"])
        if version >= 7:
            assert state[p].leader_epoch == snapshot["leader_epoch"]
    assert answer.controller_id == cluster.controller_id()


def test_unknown_topic_is_unknown_topic_or_partition(cluster: Cluster) -> None:
    answer = WireClient(cluster).ask(
        METADATA,
        9,
        {
            "topics": [{"name": "nope"}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert answer.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def test_librdkafkas_all_topics_metadata_with_trailing_bytes_is_answered_as_kafka_does(
    cluster: Cluster,
) -> None:
    # librdkafka (confluent-kafka's admin list_topics, kcat -L) asks v12 for every topic with a
    # 4-byte placeholder where the compact array count goes: Kafka reads a null array and ignores
    # the 3 bytes its reading leaves, so the request is answered.
    client = WireClient(cluster)
    header = bytes.fromhex("0003000c00000063000772646b61666b6100")
    client.send_raw(header + bytes.fromhex("00000000010000"))
    answer = client.answer(METADATA, 12)
    assert client.last_correlation == 0x63
    assert [t.name for t in answer.topics] == ["orders"]


def test_produce_acks_all_then_fetch_reads_the_records_back(cluster: Cluster) -> None:
    client = WireClient(cluster, leader(cluster))
    answer = client.ask(PRODUCE, 9, produce_body(0, [b"a", b"b", b"c"]))
    [part] = answer.responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (ErrorCode.none, 0)
    fetched = client.ask(FETCH, 12, fetch_body(0, 0))
    [data] = fetched.responses[0].partitions
    assert data.high_watermark == 3
    assert [r.value for r in iter_records(data.records)] == [b"a", b"b", b"c"]
    assert [r.offset for r in iter_records(data.records)] == [0, 1, 2]


def test_produce_to_a_follower_is_not_leader_or_follower(cluster: Cluster) -> None:
    follower = next(b for b in cluster.broker_ids if b != leader(cluster))
    answer = WireClient(cluster, follower).ask(PRODUCE, 9, produce_body(0, [b"x"]))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.not_leader_or_follower


def test_acks_all_below_min_insync_replicas_is_not_enough_replicas(cluster: Cluster) -> None:
    lead = leader(cluster)
    for b in cluster.broker_ids:
        if b != lead:
            cluster.kill_broker(b)
    cluster.run_until_true(lambda: len(cluster.partition_state("orders", 0)["isr"]) == 1, 60_000)
    answer = WireClient(cluster, lead).ask(PRODUCE, 9, produce_body(0, [b"x"]))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.not_enough_replicas


def test_acks_zero_gets_no_answer_and_the_next_request_is_answered_in_order(cluster: Cluster) -> None:
    client = WireClient(cluster, leader(cluster))
    client.send(PRODUCE, 9, produce_body(0, [b"fire", b"forget"], acks=0))
    answer = client.ask(PRODUCE, 9, produce_body(0, [b"then"], acks=1))
    assert answer.responses[0].partition_responses[0].base_offset == 2
    assert not client.sent


def test_a_fetch_at_the_end_waits_max_wait_in_virtual_time_then_answers_empty(cluster: Cluster) -> None:
    client = WireClient(cluster, leader(cluster))
    start = cluster.now_ms
    answer = client.ask(FETCH, 12, fetch_body(0, 0, max_wait=800))
    assert answer.responses[0].partitions[0].records in (b"", None)
    assert 800 <= cluster.now_ms - start < 900


def test_a_waiting_fetch_answers_as_soon_as_min_bytes_arrive(cluster: Cluster) -> None:
    lead = leader(cluster)
    consumer, producer = WireClient(cluster, lead), WireClient(cluster, lead)
    consumer.send(FETCH, 12, fetch_body(0, 0, max_wait=10_000, min_bytes=1))
    cluster.run_for(100)
    assert not consumer.sent  # nothing yet: it waits
    producer.ask(PRODUCE, 9, produce_body(0, [b"now"]))
    start = cluster.now_ms
    answer = consumer.answer(FETCH, 12)
    assert cluster.now_ms - start < 100
    assert [r.value for r in iter_records(answer.responses[0].partitions[0].records)] == [b"now"]


def test_min_bytes_holds_the_answer_until_enough_has_come(cluster: Cluster) -> None:
    lead = leader(cluster)
    consumer, producer = WireClient(cluster, lead), WireClient(cluster, lead)
    consumer.send(FETCH, 12, fetch_body(0, 0, max_wait=10_000, min_bytes=400))
    producer.ask(PRODUCE, 9, produce_body(0, [b"small"]))
    cluster.run_for(1_000)
    assert not consumer.sent
    producer.ask(PRODUCE, 9, produce_body(0, [b"x" * 500]))
    answer = consumer.answer(FETCH, 12, timeout_ms=1_000)
    assert len(list(iter_records(answer.responses[0].partitions[0].records))) == 2


def test_a_stale_leader_epoch_is_fenced(cluster: Cluster) -> None:
    epoch = cluster.partition_state("orders", 0)["leader_epoch"]
    client = WireClient(cluster, leader(cluster))
    answer = client.ask(FETCH, 12, fetch_body(0, 0, epoch=epoch - 1 if epoch > 0 else -1))
    if epoch > 0:
        assert answer.responses[0].partitions[0].error_code == ErrorCode.fenced_leader_epoch
    newer = client.ask(FETCH, 12, fetch_body(0, 0, epoch=epoch + 1))
    assert newer.responses[0].partitions[0].error_code == ErrorCode.unknown_leader_epoch


def test_list_offsets_by_time_gives_the_records_offset_and_timestamp(cluster: Cluster) -> None:
    client = WireClient(cluster, leader(cluster))
    for ts, value in ((1_000, b"a"), (2_000, b"b"), (3_000, b"c")):
        body = produce_body(0, [value])
        body["topic_data"][0]["partition_data"][0]["records"] = build_batch([(None, value)], timestamp_ms=ts)
        client.ask(PRODUCE, 9, body)
    answer = client.ask(
        LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": 1_500}],
                }
            ],
        },
    )
    found = answer.topics[0].partitions[0]
    assert (found.offset, found.timestamp) == (1, 2_000)
    assert found.leader_epoch == cluster.partition_state("orders", 0)["leader_epoch"]


def test_offset_for_leader_epoch_tells_a_consumer_where_an_epoch_ended(cluster: Cluster) -> None:
    client = WireClient(cluster, leader(cluster))
    client.ask(PRODUCE, 9, produce_body(0, [b"a", b"b"]))
    old_epoch = cluster.partition_state("orders", 0)["leader_epoch"]
    cluster.kill_broker(leader(cluster))
    cluster.run_until_true(
        lambda: (
            cluster.leader_of("orders", 0) is not None
            and cluster.partition_state("orders", 0)["leader_epoch"] > old_epoch
        ),
        60_000,
    )
    answer = WireClient(cluster, leader(cluster)).ask(
        EPOCH,
        4,
        {
            "replica_id": -1,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": old_epoch}],
                }
            ],
        },
    )
    result = answer.topics[0].partitions[0]
    assert (result.error_code, result.leader_epoch, result.end_offset) == (ErrorCode.none, old_epoch, 2)


# ---------------------------------------------------------------------------- auto.create.topics.enable


def ask_metadata(
    cluster: Cluster, topic: str, *, allow: bool = True, version: int = 9, broker: int = 1
) -> object:
    body: dict = {"topics": [{"name": topic, "topic_id": None} if version >= 10 else {"name": topic}]}
    if version >= 4:
        body["allow_auto_topic_creation"] = allow
    if 8 <= version <= 10:
        body["include_cluster_authorized_operations"] = False
    if version >= 8:
        body["include_topic_authorized_operations"] = False
    return WireClient(cluster, broker).ask(METADATA, version, body)


@pytest.mark.parametrize("version", [1, 4, 12])  # before v4 a request cannot say no: Kafka creates
def test_metadata_for_an_unknown_topic_creates_it_and_says_leader_not_available_until_it_has_leaders(
    version: int,
) -> None:
    with checked_cluster(3, config={"num.partitions": "3", "default.replication.factor": "2"}) as cluster:
        [topic] = ask_metadata(cluster, "payments", version=version).topics
        assert topic.error_code == ErrorCode.leader_not_available
        assert topic.partitions == ()
        assert cluster.run_until_true(lambda: "payments" in cluster.topics(), 5_000)
        assert cluster.partition_count("payments") == 3
        assert all(len(part(cluster, "payments", p)["replicas"]) == 2 for p in range(3))

        def led() -> bool:
            [t] = ask_metadata(cluster, "payments", version=version).topics
            return t.error_code == ErrorCode.none and all(p.leader_id >= 0 for p in t.partitions)

        assert cluster.run_until_true(led, 5_000)
        assert any(
            e.kind == "topic_auto_created"
            and "num.partitions=3" in e.text
            and "default.replication.factor=2" in e.text
            for e in cluster.events()
        )


def test_a_client_that_does_not_allow_creation_is_told_the_topic_is_unknown(cluster: Cluster) -> None:
    [topic] = ask_metadata(cluster, "payments", allow=False).topics
    assert topic.error_code == ErrorCode.unknown_topic_or_partition
    cluster.run_for(1_000)
    assert "payments" not in cluster.topics()


def test_auto_creation_turned_off_on_the_broker_is_unknown_topic_or_partition() -> None:
    with checked_cluster(3, config={"auto.create.topics.enable": "false"}) as cluster:
        [topic] = ask_metadata(cluster, "payments", version=1).topics
        assert topic.error_code == ErrorCode.unknown_topic_or_partition
        cluster.run_for(1_000)
        assert "payments" not in cluster.topics()


def test_auto_creation_answers_kafkas_error_when_the_topic_cannot_be_made() -> None:
    with checked_cluster(3, config={"default.replication.factor": "4"}) as cluster:
        [topic] = ask_metadata(cluster, "payments").topics
        assert topic.error_code == ErrorCode.invalid_replication_factor
        [topic] = ask_metadata(cluster, "bad name!").topics
        assert topic.error_code == ErrorCode.invalid_topic_exception
        # The group coordinator makes __consumer_offsets on a group's first use, not a metadata request.
        [topic] = ask_metadata(cluster, "__consumer_offsets").topics
        assert topic.error_code == ErrorCode.unknown_topic_or_partition
        assert not {"payments", "bad name!"} & set(cluster.topics())
