"""confluent-kafka's (librdkafka's) transactional producer, unmodified, against a served lab: init,
commit and abort, a zombie fenced, and a consume-transform-produce loop with
send_offsets_to_transaction, read back by read_committed consumers."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from lab.cluster import ServedCluster

pytestmark = pytest.mark.kafka_lab(brokers=3, topics=["in:2:3", "out:2:3"])


def read(bootstrap: str, topic: str, isolation: str, expected: int, timeout_s: float = 30) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    quiet_until = None
    while time.monotonic() < deadline:
        message = consumer.poll(0.3)
        if message is None or message.error():
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 2  # a little longer: nothing more comes
                if time.monotonic() > quiet_until:
                    break
            continue
        values.append(message.value())
    consumer.close()
    return sorted(values)


def transactional(bootstrap: str, transactional_id: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5})


def test_commit_is_seen_whole_by_read_committed_and_abort_never(kafka_lab: ServedCluster) -> None:
    producer = transactional(kafka_lab.bootstrap_servers, "wire-tx")
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(100):
        producer.produce("out", value=b"c%03d" % i, key=b"%d" % i)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(50):
        producer.produce("out", value=b"a%03d" % i, key=b"%d" % i)
    producer.flush(30)
    producer.abort_transaction(30)
    committed = sorted(b"c%03d" % i for i in range(100))
    assert read(kafka_lab.bootstrap_servers, "out", "read_committed", 100) == committed
    uncommitted = read(kafka_lab.bootstrap_servers, "out", "read_uncommitted", 150)
    assert uncommitted == sorted(committed + [b"a%03d" % i for i in range(50)])


def test_a_second_producer_with_the_same_id_fences_the_first(kafka_lab: ServedCluster) -> None:
    zombie = transactional(kafka_lab.bootstrap_servers, "wire-zombie")
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce("out", value=b"zombie")
    zombie.flush(30)
    fresh = transactional(kafka_lab.bootstrap_servers, "wire-zombie")
    fresh.init_transactions(30)  # aborts the zombie's open transaction and bumps the epoch
    with pytest.raises(KafkaException) as caught:
        zombie.commit_transaction(30)
    assert caught.value.args[0].fatal() or "fenced" in str(caught.value).lower()
    fresh.begin_transaction()
    fresh.produce("out", value=b"fresh")
    fresh.commit_transaction(30)
    assert read(kafka_lab.bootstrap_servers, "out", "read_committed", 1) == [b"fresh"]


def test_consume_transform_produce_commits_outputs_and_offsets_together(kafka_lab: ServedCluster) -> None:
    bootstrap = kafka_lab.bootstrap_servers
    source = Producer({"bootstrap.servers": bootstrap})
    for i in range(60):
        source.produce("in", value=b"%03d" % i, key=b"%d" % i)
    assert source.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "uppercase",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["in"])
    producer = transactional(bootstrap, "wire-ctp")
    producer.init_transactions(30)
    done = 0
    deadline = time.monotonic() + 60
    while done < 60 and time.monotonic() < deadline:
        batch = consumer.consume(20, 0.5)
        batch = [m for m in batch if not m.error()]
        if not batch:
            continue
        producer.begin_transaction()
        for message in batch:
            producer.produce("out", value=b"out-" + message.value(), key=message.key())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        done += len(batch)
    consumer.close()
    assert done == 60
    assert read(bootstrap, "out", "read_committed", 60) == sorted(b"out-%03d" % i for i in range(60))
    # The group's offsets moved with the transactions: a new member starts after what was done.
    group = kafka_lab.cluster.groups()["uppercase"]
    assert sum(group["committed"].values()) == 60
