"""kafka-python, unmodified, against a served 3-broker lab over real sockets.

Retries without idempotence may write a record twice, so "every acknowledged record" is checked
as a set.
"""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from lab.cluster import ServedCluster

FAST_FAILOVER = {"zookeeper.session.timeout.ms": "1500", "min.insync.replicas": "2"}
pytestmark = pytest.mark.kafka_lab(brokers=3, topics=["orders:3:3"], config=FAST_FAILOVER)


def consume_all(bootstrap: str, partitions: int, expected: set[bytes], timeout_s: float = 60) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition("orders", p) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while not expected <= set(values) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values += [r.value for r in records]
    consumer.close()
    return values


def test_every_acknowledged_record_survives_a_leader_kill(kafka_lab: ServedCluster) -> None:
    producer = KafkaProducer(
        bootstrap_servers=kafka_lab.bootstrap_servers,
        acks="all",
        linger_ms=5,
        retries=50,
        retry_backoff_ms=100,
        request_timeout_ms=5_000,
        max_in_flight_requests_per_connection=1,
    )
    acked: list[bytes] = []
    failed: list[BaseException] = []
    lock = threading.Lock()

    def done(value: bytes):
        def ok(_metadata: object) -> None:
            with lock:
                acked.append(value)

        return ok

    victim = kafka_lab.cluster.leader_of("orders", 0)
    for i in range(10_000):
        value = b"record-%05d" % i
        producer.send("orders", value=value).add_callback(done(value)).add_errback(failed.append)
        if i == 3_000:
            kafka_lab.cluster.kill_broker(victim)
    producer.flush(timeout=120)
    producer.close()
    assert not failed, failed[:3]
    assert len(acked) == 10_000
    assert kafka_lab.cluster.leader_of("orders", 0) != victim
    seen = consume_all(kafka_lab.bootstrap_servers, 3, set(acked))
    assert set(acked) <= set(seen)
