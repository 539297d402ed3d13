"""aiokafka (asyncio), unmodified, against a served 3-broker lab over real sockets."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

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
