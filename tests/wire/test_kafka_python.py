"""kafka-python, unmodified, against a served 3-broker lab over real sockets.

Retries without idempotence may write a record twice, so "every acknowledged record" is checked
as a set.
"""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, NoError

from lab.cluster import ServedCluster
from tests.processes import wait_until
from tests.wire.served import assert_written_once_in_order

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


def produce_through_a_leader_kill(kafka_lab: ServedCluster, **config: object) -> list[bytes]:
    """10,000 records to orders with ``config``; partition 0's leader killed after 3,000. The records
    acknowledged, all of them (no send may fail), and the partition has a new leader."""
    producer = KafkaProducer(
        bootstrap_servers=kafka_lab.bootstrap_servers,
        acks="all",
        linger_ms=5,
        retry_backoff_ms=100,
        request_timeout_ms=5_000,
        max_in_flight_requests_per_connection=1,
        **config,
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
    return acked


def test_every_acknowledged_record_survives_a_leader_kill(kafka_lab: ServedCluster) -> None:
    acked = produce_through_a_leader_kill(kafka_lab, retries=50)
    seen = consume_all(kafka_lab.bootstrap_servers, 3, set(acked))
    assert set(acked) <= set(seen)


def high_watermark(kafka_lab: ServedCluster, topic: str, partition: int) -> int:
    state = kafka_lab.cluster.partition_state(topic, partition)
    return int(state["logs"][str(state["leader"])]["high_watermark"])


class GroupMember(threading.Thread):
    """One consumer of a group, committing what it read after every poll, until told to stop."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        consumed: list[bytes],
        lock: threading.Lock,
        finished: threading.Barrier,
    ) -> None:
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(
            "orders",
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            heartbeat_interval_ms=500,
            retry_backoff_ms=100,
        )
        self.consumed = consumed
        self.lock = lock
        self.stop = threading.Event()
        self.commit_failures: list[str] = []
        self.error: BaseException | None = None
        self.finished = finished  # shared by the group's members
        self.assigned: tuple[int, ...] = ()  # set by the member's thread (a consumer is not thread-safe)
        self.read = 0

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                batches = self.consumer.poll(timeout_ms=200)
                self.assigned = tuple(tp.partition for tp in self.consumer.assignment())
                with self.lock:
                    for records in batches.values():
                        self.consumed.extend(r.value for r in records)
                        self.read += len(records)
                if batches:
                    try:
                        self.consumer.commit()
                    except KafkaError as error:
                        # A rebalance or a coordinator that moved: the next poll rejoins, and the
                        # records since the last commit may be read again (never lost).
                        self.commit_failures.append(repr(error))
            self.consumer.commit()  # what it read last, before either member leaves
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

    def ok(value: bytes):
        return lambda _metadata: acked.append(value)

    coordinator = kafka_lab.cluster.groups()["shipping"]["coordinator"]
    leaders = {kafka_lab.cluster.leader_of("orders", p) for p in range(3)}
    victim = coordinator if kill_coordinator else min(leaders - {coordinator})
    assert victim in leaders
    for i in range(10_000):
        value = b"order-%05d" % i
        key = b"customer-%03d" % (i % 100)
        producer.send("orders", key=key, value=value).add_callback(ok(value)).add_errback(failed.append)
        if i == 3_000:
            kafka_lab.cluster.kill_broker(victim)
    producer.flush(timeout=120)
    producer.close()
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


def test_admin_client_creates_describes_alters_and_deletes(kafka_lab: ServedCluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import InvalidConfigurationError, TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=kafka_lab.bootstrap_servers, request_timeout_ms=10_000)
    try:
        cluster = admin.describe_cluster()
        assert sorted(b["node_id"] for b in cluster["brokers"]) == [1, 2, 3]
        assert cluster["controller_id"] == kafka_lab.cluster.snapshot()["controller"]

        admin.create_topics(
            [NewTopic("payments", 2, 3, topic_configs={"retention.ms": "60000"})], timeout_ms=10_000
        )
        assert kafka_lab.cluster.partition_count("payments") == 2
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("payments", 2, 3)], timeout_ms=10_000)
        with pytest.raises(InvalidConfigurationError):
            admin.create_topics(
                [NewTopic("refunds", 1, 1, topic_configs={"cleanup.policy": "sideways"})], timeout_ms=10_000
            )
        assert "refunds" not in admin.list_topics()

        [described] = admin.describe_topics(["payments"])
        assert described["error_code"] == 0
        assert sorted(p["partition"] for p in described["partitions"]) == [0, 1]
        assert all(len(p["replicas"]) == 3 for p in described["partitions"])

        resource = ConfigResource(ConfigResourceType.TOPIC, "payments")
        [configs] = admin.describe_configs([resource])
        entries = {e[0]: e[1] for e in configs.resources[0][4]}
        assert entries["retention.ms"] == "60000"

        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "payments", {"retention.ms": "120000"})]
        )
        [configs] = admin.describe_configs([resource])
        assert {e[0]: e[1] for e in configs.resources[0][4]}["retention.ms"] == "120000"

        [(error, _dir, topics)] = admin.describe_log_dirs().log_dirs  # DescribeLogDirs v0
        assert error == 0
        assert "payments" in {name for name, _ in topics}

        admin.create_partitions({"payments": NewPartitions(total_count=4)})
        assert kafka_lab.cluster.partition_count("payments") == 4

        admin.delete_topics(["payments"], timeout_ms=10_000)
        assert wait_until(lambda: "payments" not in kafka_lab.cluster.topics(), 30)
    finally:
        admin.close()


def test_admin_client_lists_describes_and_deletes_groups(kafka_lab: ServedCluster) -> None:
    from kafka.admin import KafkaAdminClient

    producer = KafkaProducer(bootstrap_servers=kafka_lab.bootstrap_servers, acks="all")
    for i in range(10):
        producer.send("orders", value=b"v%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kafka_lab.bootstrap_servers,
        group_id="audit",
        client_id="auditor",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    read = 0
    deadline = time.monotonic() + 60
    while read < 10 and time.monotonic() < deadline:
        read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    consumer.commit()
    admin = KafkaAdminClient(bootstrap_servers=kafka_lab.bootstrap_servers, request_timeout_ms=10_000)
    try:
        assert ("audit", "consumer") in admin.list_consumer_groups()
        [group] = admin.describe_consumer_groups(["audit"])
        assert group.state == "Stable"
        assert [m.client_id for m in group.members] == ["auditor"]
        assert {t: sorted(ps) for t, ps in group.members[0].member_assignment.assignment} == {
            "orders": [0, 1, 2]
        }
        offsets = admin.list_consumer_group_offsets("audit")
        assert sum(o.offset for o in offsets.values()) == 10
        consumer.close()
        assert wait_until(lambda: kafka_lab.cluster.groups().get("audit", {}).get("state") == "Empty", 30)
        assert admin.delete_consumer_groups(["audit"]) == [("audit", NoError)]
        assert ("audit", "consumer") not in admin.list_consumer_groups()
    finally:
        admin.close()


def test_a_real_consumers_group_is_in_the_labs_groups_view(kafka_lab: ServedCluster) -> None:
    producer = KafkaProducer(bootstrap_servers=kafka_lab.bootstrap_servers, acks="all")
    for i in range(30):
        producer.send("orders", key=b"k%d" % i, value=b"v%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kafka_lab.bootstrap_servers,
        group_id="billing",
        client_id="invoicer",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        read = 0
        deadline = time.monotonic() + 60
        while read < 10 and time.monotonic() < deadline:
            read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        consumer.commit()

        def group() -> object:
            views = kafka_lab.lab.frame.views["groups"].groups  # type: ignore[attr-defined]
            return next((g for g in views if g.group_id == "billing"), None)

        def committed() -> bool:
            g = group()
            return g is not None and sum(o.committed or 0 for o in g.partitions) == read  # type: ignore[attr-defined]

        assert wait_until(committed, 15)
        g = group()
        [member] = g.members  # type: ignore[attr-defined]
        assert (member.client_id, member.host, member.leader) == ("invoicer", "127.0.0.1", True)
        assert member.partitions == ("orders-0", "orders-1", "orders-2")
        assert g.state == "Stable"  # type: ignore[attr-defined]
        assert g.total_lag == 30 - read  # type: ignore[attr-defined]
        assert {o.owner for o in g.partitions} == {"invoicer"}  # type: ignore[attr-defined]
    finally:
        consumer.close()


def test_an_idempotent_producer_writes_each_record_once_in_order_through_a_leader_kill(
    kafka_lab: ServedCluster,
) -> None:
    # InitProducerId, then a producer id, epoch and sequence in each batch; kafka-python's idempotent
    # producer insists on one request in flight, as the helper has it.
    acked = produce_through_a_leader_kill(kafka_lab, enable_idempotence=True)
    assert_written_once_in_order(kafka_lab, acked)
