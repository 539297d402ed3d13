"""confluent-kafka (librdkafka), unmodified, against a served 3-broker lab over real sockets."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from lab.cluster import ServedCluster
from tests.processes import wait_until
from tests.wire.served import assert_written_once_in_order

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


def produce_through_a_leader_kill(kafka_lab: ServedCluster, config: dict[str, object]) -> list[bytes]:
    """10,000 records to orders with ``config``; partition 0's leader killed after 3,000. The records
    acknowledged, all of them (no delivery may fail)."""
    producer = Producer(
        {
            "bootstrap.servers": kafka_lab.bootstrap_servers,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            **config,
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
    return acked


def test_every_acknowledged_record_survives_a_leader_kill(kafka_lab: ServedCluster) -> None:
    acked = produce_through_a_leader_kill(
        kafka_lab, {"acks": "all", "max.in.flight.requests.per.connection": 1}
    )
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


# ---------------------------------------------------------------------------- admin


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")  # Kafka's AlterConfigs, on purpose
def test_admin_client_creates_describes_alters_and_deletes(kafka_lab: ServedCluster) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": kafka_lab.bootstrap_servers})
    described = admin.describe_cluster(request_timeout=10).result(10)
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert described.controller.id == kafka_lab.cluster.snapshot()["controller"]

    futures = admin.create_topics(
        [
            NewTopic("payments", num_partitions=2, replication_factor=3, config={"retention.ms": "60000"}),
            NewTopic("orders", num_partitions=1, replication_factor=1),  # exists
            NewTopic(
                "refunds", num_partitions=1, replication_factor=1, config={"cleanup.policy": "sideways"}
            ),
            NewTopic("wide", num_partitions=1, replication_factor=4),  # more than the brokers
        ],
        operation_timeout=10,
    )
    futures["payments"].result(10)
    errors = {}
    for name in ("orders", "refunds", "wide"):
        with pytest.raises(KafkaException) as raised:
            futures[name].result(10)
        errors[name] = raised.value.args[0].name()
    assert errors == {
        "orders": "TOPIC_ALREADY_EXISTS",
        "refunds": "INVALID_CONFIG",
        "wide": "INVALID_REPLICATION_FACTOR",
    }
    assert kafka_lab.cluster.partition_count("payments") == 2
    assert "refunds" not in kafka_lab.cluster.topics()

    metadata = admin.list_topics(timeout=10)
    assert sorted(metadata.topics["payments"].partitions) == [0, 1]
    assert all(len(p.replicas) == 3 for p in metadata.topics["payments"].partitions.values())

    topic = ConfigResource(ResourceType.TOPIC, "payments")
    [configs] = admin.describe_configs([topic]).values()
    assert configs.result(10)["retention.ms"].value == "60000"

    altered = ConfigResource(
        ResourceType.TOPIC,
        "payments",
        incremental_configs=[
            ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    [done] = admin.incremental_alter_configs([altered]).values()
    done.result(10)
    # What the admin client reads back is ZooKeeper's; the brokers apply it when notified.
    config = {k: c.value for k, c in admin.describe_configs([topic])[topic].result(10).items()}
    assert (config["retention.ms"], config["cleanup.policy"]) == ("120000", "compact")

    [done] = admin.alter_configs(
        [ConfigResource(ResourceType.TOPIC, "payments", set_config={"retention.ms": "1000"})]
    ).values()
    done.result(10)
    config = {k: c.value for k, c in admin.describe_configs([topic])[topic].result(10).items()}
    assert config["retention.ms"] == "1000"
    # AlterConfigs replaces the whole set, as Kafka's does: cleanup.policy is back to its default.
    assert config["cleanup.policy"] == "delete"
    assert wait_until(lambda: kafka_lab.cluster.topic_config("payments") == {"retention.ms": "1000"}, 10)

    [grown] = admin.create_partitions([NewPartitions("payments", 4)], operation_timeout=10).values()
    grown.result(10)
    assert kafka_lab.cluster.partition_count("payments") == 4
    [shrunk] = admin.create_partitions([NewPartitions("payments", 2)], operation_timeout=10).values()
    with pytest.raises(KafkaException) as raised:
        shrunk.result(10)
    assert raised.value.args[0].name() == "INVALID_PARTITIONS"

    [deleted] = admin.delete_topics(["payments"], operation_timeout=10).values()
    deleted.result(10)
    assert wait_until(lambda: "payments" not in kafka_lab.cluster.topics(), 30)
    [missing] = admin.delete_topics(["payments"], operation_timeout=10).values()
    with pytest.raises(KafkaException) as raised:
        missing.result(10)
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART  # librdkafka's name for it


def test_admin_client_lists_describes_and_deletes_groups(kafka_lab: ServedCluster) -> None:
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    producer = Producer({"bootstrap.servers": kafka_lab.bootstrap_servers, "acks": "all"})
    for i in range(10):
        producer.produce("orders", value=b"v%d" % i)
    producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_lab.bootstrap_servers,
            "group.id": "audit",
            "client.id": "auditor",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["orders"])
    read = 0
    deadline = time.monotonic() + 60
    while read < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            read += 1
    consumer.commit(asynchronous=False)
    admin = AdminClient({"bootstrap.servers": kafka_lab.bootstrap_servers})
    listed = admin.list_consumer_groups(request_timeout=10).result(10)
    assert "audit" in {g.group_id for g in listed.valid}
    [described] = admin.describe_consumer_groups(["audit"], request_timeout=10).values()
    group = described.result(10)
    assert group.state == ConsumerGroupState.STABLE
    assert [m.client_id for m in group.members] == ["auditor"]
    assert sorted(tp.partition for tp in group.members[0].assignment.topic_partitions) == [0, 1, 2]
    [busy] = admin.delete_consumer_groups(["audit"], request_timeout=10).values()
    with pytest.raises(KafkaException) as raised:
        busy.result(10)
    assert raised.value.args[0].name() == "NON_EMPTY_GROUP"
    consumer.close()
    assert wait_until(lambda: kafka_lab.cluster.groups().get("audit", {}).get("state") == "Empty", 30)
    [deleted] = admin.delete_consumer_groups(["audit"], request_timeout=10).values()
    deleted.result(10)
    assert "audit" not in kafka_lab.cluster.groups()


def test_an_idempotent_producer_writes_each_record_once_in_order_through_a_leader_kill(
    kafka_lab: ServedCluster,
) -> None:
    # librdkafka's default is false: asked for, it needs InitProducerId
    acked = produce_through_a_leader_kill(kafka_lab, {"enable.idempotence": True})
    assert_written_once_in_order(kafka_lab, acked)
