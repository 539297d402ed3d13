"""confluent-kafka (librdkafka), unmodified, against a served 3-broker lab over real sockets."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from lab.cluster import ServedCluster
from tests.processes import wait_until

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


def high_watermark(kafka_lab: ServedCluster, topic: str, partition: int) -> int:
    state = kafka_lab.cluster.partition_state(topic, partition)
    return int(state["logs"][str(state["leader"])]["high_watermark"])


class GroupMember(threading.Thread):
    """One consumer of a group, committing what it read after every batch, until told to stop."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        consumed: list[bytes],
        lock: threading.Lock,
        finished: threading.Barrier,
    ) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "heartbeat.interval.ms": 500,
            }
        )
        self.consumer.subscribe(["orders"])
        self.consumed = consumed
        self.lock = lock
        self.stop = threading.Event()
        self.commit_failures: list[str] = []
        self.error: BaseException | None = None
        self.finished = finished  # shared by the group's members
        # Set by the member's own thread: librdkafka's assignment() called from another thread
        # while this one is in consume() never returns (confluent-kafka 2.16).
        self.assigned: tuple[int, ...] = ()
        self.read = 0

    def commit(self) -> None:
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as error:
            if error.args[0].code() != KafkaError._NO_OFFSET:  # nothing new since the last commit
                raise

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                messages = [m for m in self.consumer.consume(500, timeout=0.2) if not m.error()]
                self.assigned = tuple(tp.partition for tp in self.consumer.assignment())
                with self.lock:
                    self.consumed.extend(m.value() for m in messages)
                    self.read += len(messages)
                if messages:
                    try:
                        self.commit()
                    except KafkaException as error:
                        # A rebalance or a coordinator that moved: records since the last commit
                        # may be read again (never lost).
                        self.commit_failures.append(str(error))
            self.commit()  # what it read last, before either member leaves
        except BaseException as error:
            self.error = error
        finally:
            try:
                self.finished.wait(30)  # both have committed; now leaving rebalances no one
            finally:
                self.consumer.close()


@pytest.mark.parametrize("kill_coordinator", [False, True], ids=["leader", "leader-and-coordinator"])
def test_a_group_of_two_reads_every_acknowledged_record_through_a_leader_kill(
    kafka_lab: ServedCluster, kill_coordinator: bool
) -> None:
    # Three partitions, three leaders: the one killed leads a partition, and is or is not the
    # group's coordinator too (whose death sends the members to find another).
    lock = threading.Lock()
    consumed: list[bytes] = []
    finished = threading.Barrier(2)
    members = [
        GroupMember(kafka_lab.bootstrap_servers, "shipping", consumed, lock, finished) for _ in range(2)
    ]
    for member in members:
        member.start()
    assert wait_until(
        lambda: (
            sorted(p for m in members for p in m.assigned) == [0, 1, 2] and all(m.assigned for m in members)
        ),
        60,
    ), "the two members never shared the partitions"

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

    coordinator = kafka_lab.cluster.groups()["shipping"]["coordinator"]
    leaders = {kafka_lab.cluster.leader_of("orders", p) for p in range(3)}
    victim = coordinator if kill_coordinator else min(leaders - {coordinator})
    assert victim in leaders
    for i in range(10_000):
        # Keyed, so every partition gets records (librdkafka sticks to one partition for unkeyed ones).
        key = b"customer-%03d" % (i % 100)
        producer.produce("orders", key=key, value=b"order-%05d" % i, on_delivery=delivered)
        producer.poll(0)
        if i == 3_000:
            kafka_lab.cluster.kill_broker(victim)
    assert producer.flush(120) == 0
    assert not failed, failed[:3]
    assert len(acked) == 10_000
    assert victim not in {kafka_lab.cluster.leader_of("orders", p) for p in range(3)}

    def settled() -> bool:
        with lock:
            read = set(consumed)
        group = kafka_lab.cluster.groups().get("shipping", {})
        return set(acked) <= read and group.get("state") == "Stable" and len(group["members"]) == 2

    try:
        assert wait_until(settled, 90), (
            f"{len(set(acked) - set(consumed))} acknowledged records unread; "
            f"group: {kafka_lab.cluster.groups().get('shipping')}; "
            f"commit failures: {[m.commit_failures[:3] for m in members]}; "
            f"the lab's journal: {[e.text for e in kafka_lab.cluster.events()][-20:]}"
        )
    finally:
        for member in members:
            member.stop.set()
        for member in members:
            member.join(60)
    assert [m.error for m in members] == [None, None]
    assert all(m.read for m in members)
    # What the members committed last is every partition's end.
    group = kafka_lab.cluster.groups()["shipping"]
    ends = {f"orders/{p}": high_watermark(kafka_lab, "orders", p) for p in range(3)}
    assert group["committed"] == ends
    assert all(ends.values())
    assert sum(ends.values()) >= 10_000
