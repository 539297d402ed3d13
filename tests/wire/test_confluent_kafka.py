"""confluent-kafka (librdkafka), unmodified, against a served 3-broker lab over real sockets."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from lab.cluster import ServedCluster

FAST_FAILOVER = {"zookeeper.session.timeout.ms": "1500", "min.insync.replicas": "2"}
pytestmark = pytest.mark.kafka_lab(brokers=3, topics=["orders:3:3"], config=FAST_FAILOVER)


def consume_all(bootstrap: str, expected: set[bytes], timeout_s: float = 60) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition("orders", p, 0) for p in range(3)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while not expected <= set(values) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        values.append(message.value())
    consumer.close()
    return values


def test_every_acknowledged_record_survives_a_leader_kill(kafka_lab: ServedCluster) -> None:
    producer = Producer(
        {
            "bootstrap.servers": kafka_lab.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "max.in.flight.requests.per.connection": 1,
        }
    )
    acked: list[bytes] = []
    failed: list[KafkaError] = []

    def delivered(error: KafkaError | None, message: object) -> None:
        if error is None:
            acked.append(message.value())  # type: ignore[attr-defined]
        else:
            failed.append(error)

    victim = kafka_lab.cluster.leader_of("orders", 0)
    for i in range(10_000):
        producer.produce("orders", value=b"record-%05d" % i, on_delivery=delivered)
        producer.poll(0)
        if i == 3_000:
            kafka_lab.cluster.kill_broker(victim)
    assert producer.flush(120) == 0
    assert not failed, failed[:3]
    assert len(acked) == 10_000
    seen = consume_all(kafka_lab.bootstrap_servers, set(acked))
    assert set(acked) <= set(seen)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_stored_as_sent_and_read_back(kafka_lab: ServedCluster, codec: str) -> None:
    producer = Producer(
        {"bootstrap.servers": kafka_lab.bootstrap_servers, "compression.type": codec, "linger.ms": 20}
    )
    for i in range(200):
        producer.produce("orders", key=b"k", value=b"compressed %d " % i * 10)
    assert producer.flush(30) == 0
    browsed = [r for p in range(3) for r in kafka_lab.cluster.browse("orders", p, limit=1000)]
    assert sorted(r["value"] for r in browsed) == sorted(f"compressed {i} " * 10 for i in range(200))
