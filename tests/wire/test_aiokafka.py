"""aiokafka (asyncio), unmodified, against a served 3-broker lab over real sockets."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, TopicAlreadyExistsError

from lab.cluster import ServedCluster

pytestmark = pytest.mark.kafka_lab(brokers=3, topics=["orders:3:3"], config={"min.insync.replicas": "2"})

RECORDS = 600
GROUP = "billing"


def member(bootstrap: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        "orders",
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        heartbeat_interval_ms=300,  # rebalances are noticed within a heartbeat
    )


async def until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def produce_and_consume_in_a_group(kafka_lab: ServedCluster) -> None:
    bootstrap = kafka_lab.bootstrap_servers
    members = [member(bootstrap), member(bootstrap)]
    for consumer in members:
        await consumer.start()
    consumed: dict[int, list[bytes]] = {0: [], 1: []}
    done = asyncio.Event()

    async def consume(index: int) -> None:
        consumer = members[index]
        while not done.is_set():
            batches = await consumer.getmany(timeout_ms=100)
            for records in batches.values():
                consumed[index] += [r.value for r in records if r.value is not None]
            if batches:
                await consumer.commit()  # what this member has read, synchronously

    readers = [asyncio.create_task(consume(i)) for i in (0, 1)]
    try:
        # The group shares the partitions before anything is written, so both members read.
        await until(
            lambda: (
                all(m.assignment() for m in members)
                and sorted(tp.partition for m in members for tp in m.assignment()) == [0, 1, 2]
            ),
            30,
            "two members to share the three partitions",
        )
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        await producer.start()
        try:
            sent = [await producer.send("orders", value=b"order-%04d" % i) for i in range(RECORDS)]
            acked = [await future for future in sent]
        finally:
            await producer.stop()
        values = {b"order-%04d" % i for i in range(RECORDS)}
        ends = {p: 1 + max((m.offset for m in acked if m.partition == p), default=-1) for p in range(3)}
        assert sum(ends.values()) == RECORDS  # every record acknowledged, at its own offset

        await until(lambda: values <= set(consumed[0]) | set(consumed[1]), 60, "every record")
    finally:
        done.set()
        await asyncio.gather(*readers)  # each commits what it read before it returns
        assignments = [sorted(tp.partition for tp in m.assignment()) for m in members]
        for consumer in members:
            await consumer.stop()  # leaves the group

    assert all(consumed.values()), "both members read records"
    assert set(consumed[0]).isdisjoint(consumed[1]), "a partition is read by one member only"
    assert sorted(p for a in assignments for p in a) == [0, 1, 2]

    # The committed offsets, read back by a new member of the group, are the partitions' ends.
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    await reader.start()
    try:
        committed = {p: await reader.committed(TopicPartition("orders", p)) for p in range(3)}
    finally:
        await reader.stop()
    assert committed == ends
    group = kafka_lab.cluster.groups()[GROUP]
    assert group["committed"] == {f"orders/{p}": end for p, end in ends.items()}
    assert group["total_lag"] == 0


def test_produce_acks_all_then_a_group_of_two_commits_what_it_read(kafka_lab: ServedCluster) -> None:
    asyncio.run(produce_and_consume_in_a_group(kafka_lab))


# ---------------------------------------------------------------------------- through a leader kill


async def a_group_reads_every_acknowledged_record_through_a_leader_kill(kafka_lab: ServedCluster) -> None:
    bootstrap = kafka_lab.bootstrap_servers
    members = [member(bootstrap), member(bootstrap)]
    for consumer in members:
        await consumer.start()
    consumed: set[bytes] = set()
    done = asyncio.Event()

    async def consume(consumer: AIOKafkaConsumer) -> None:
        while not done.is_set():
            batches = await consumer.getmany(timeout_ms=100)
            for records in batches.values():
                consumed.update(r.value for r in records if r.value is not None)
            if batches:
                with contextlib.suppress(KafkaError):  # a rebalance under way: the next commit says it
                    await consumer.commit()

    readers = [asyncio.create_task(consume(m)) for m in members]
    try:
        await until(
            lambda: sorted(tp.partition for m in members for tp in m.assignment()) == [0, 1, 2],
            30,
            "two members to share the three partitions",
        )
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=5,
            request_timeout_ms=5_000,
            retry_backoff_ms=100,
        )
        await producer.start()
        victim = kafka_lab.cluster.leader_of("orders", 0)
        acked: set[bytes] = set()
        try:
            pending = []
            for i in range(10_000):
                value = b"order-%05d" % i
                pending.append((value, await producer.send("orders", value=value)))
                if i == 3_000:
                    kafka_lab.cluster.kill_broker(victim)  # the lab's own fault, mid-run
            for value, future in pending:
                await future  # raises if the producer gave up on it
                acked.add(value)
        finally:
            await producer.stop()
        assert len(acked) == 10_000
        assert victim not in {kafka_lab.cluster.leader_of("orders", p) for p in range(3)}
        await until(lambda: acked <= consumed, 90, "every acknowledged record")
    finally:
        done.set()
        await asyncio.gather(*readers)
        for consumer in members:
            # aiokafka's Fetcher.close awaits the fetch tasks it cancelled: one backing off after the killed
            # broker refused it re-raises its CancelledError from stop() (the client's shutdown, not the lab's).
            with contextlib.suppress(asyncio.CancelledError):
                await consumer.stop()
    group = kafka_lab.cluster.groups()["billing"]
    ends = {
        f"orders/{p}": kafka_lab.cluster.partition_state("orders", p)["logs"][
            str(kafka_lab.cluster.leader_of("orders", p))
        ]["high_watermark"]
        for p in range(3)
    }
    assert group["committed"] == ends  # what the members committed last is every partition's end


@pytest.mark.kafka_lab(
    brokers=3,
    topics=["orders:3:3"],
    config={"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "1500"},
)
def test_a_group_of_two_reads_every_acknowledged_record_through_a_leader_kill(
    kafka_lab: ServedCluster,
) -> None:
    asyncio.run(a_group_reads_every_acknowledged_record_through_a_leader_kill(kafka_lab))


# ---------------------------------------------------------------------------- admin


async def administer(kafka_lab: ServedCluster) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_lab.bootstrap_servers, request_timeout_ms=10_000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("payments", 2, 3, topic_configs={"retention.ms": "60000"})])
        assert kafka_lab.cluster.partition_count("payments") == 2
        # aiokafka hands back CreateTopics' answer: each topic with Kafka's error code.
        again = await admin.create_topics([NewTopic("payments", 2, 3)])
        assert [(t[0], t[1]) for t in again.topic_errors] == [("payments", TopicAlreadyExistsError.errno)]
        assert "payments" in await admin.list_topics()

        [described] = await admin.describe_topics(["payments"])
        assert sorted(p["partition"] for p in described["partitions"]) == [0, 1]

        resource = ConfigResource(ConfigResourceType.TOPIC, "payments")

        async def retention() -> str:
            [answer] = await admin.describe_configs([resource])
            return {e[0]: e[1] for e in answer.resources[0][4]}["retention.ms"]

        assert await retention() == "60000"
        await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "payments", {"retention.ms": "120000"})]
        )
        assert await retention() == "120000"

        await admin.create_partitions({"payments": NewPartitions(total_count=4)})
        assert kafka_lab.cluster.partition_count("payments") == 4

        await admin.delete_topics(["payments"])
        await until(lambda: "payments" not in kafka_lab.cluster.topics(), 30, "the topic to go")
    finally:
        await admin.close()


def test_admin_client_creates_describes_alters_and_deletes(kafka_lab: ServedCluster) -> None:
    asyncio.run(administer(kafka_lab))
