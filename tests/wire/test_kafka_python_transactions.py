"""kafka-python's transactional producer (2.1 and later have one), unmodified, against a served lab:
commit and abort read back by read_committed and read_uncommitted consumers, and offsets sent to a
transaction."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from lab.cluster import ServedCluster

pytestmark = pytest.mark.kafka_lab(brokers=3, topics=["in:2:3", "out:2:3"])


def read(bootstrap: str, topic: str, isolation: str, expected: int, timeout_s: float = 30) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level=isolation,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(2)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    quiet = 0
    while time.monotonic() < deadline and quiet < 4:
        got = [r.value for records in consumer.poll(timeout_ms=500).values() for r in records]
        values += got
        quiet = quiet + 1 if not got and len(values) >= expected else 0
    consumer.close()
    return sorted(values)


def test_commit_abort_and_offsets_in_a_transaction(kafka_lab: ServedCluster) -> None:
    bootstrap = kafka_lab.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-tx")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(40):
        producer.send("out", value=b"c%02d" % i, key=b"%d" % i)
    producer.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(7, "", -1)}, "kp-group")
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(20):
        producer.send("out", value=b"a%02d" % i, key=b"%d" % i)
    producer.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(99, "", -1)}, "kp-group")
    producer.flush()
    producer.abort_transaction()
    producer.close()
    committed = sorted(b"c%02d" % i for i in range(40))
    assert read(bootstrap, "out", "read_committed", 40) == committed
    assert read(bootstrap, "out", "read_uncommitted", 60) == sorted(
        committed + [b"a%02d" % i for i in range(20)]
    )
    assert kafka_lab.cluster.groups()["kp-group"]["committed"] == {"in/0": 7}
