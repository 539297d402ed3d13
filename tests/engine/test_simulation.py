"""Randomised fault schedules: Kafka's promises hold after every event, on 200 seeded runs.

With acks=all, min.insync.replicas=2 and unclean election off, every acknowledged
record is read back at its offset at the end, and the invariants (HW within the
ISR, one leader per epoch, acknowledged records below the leader's end) hold after
every step. With unclean election on, a known schedule loses records and the
checker names exactly which.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from lab.engine.broker import BrokerState
from lab.engine.cluster import Cluster
from lab.engine.ids import TopicPartition
from lab.engine.invariants import InvariantChecker
from tests.engine.helpers import part

BROKERS = (1, 2, 3)
FAULTS = ("kill", "restart", "pause", "resume", "isolate_zk", "isolate_brokers", "heal", "slow")


@dataclass(frozen=True)
class Fault:
    at_ms: int
    action: str
    broker: int


def schedule(seed: int, *, faults: int = 6, span_ms: int = 30_000) -> list[Fault]:
    rng = random.Random(seed)
    times = sorted(rng.randrange(1000, span_ms) for _ in range(faults))
    return [Fault(t, rng.choice(FAULTS), rng.choice(BROKERS)) for t in times]


def apply(c: Cluster, fault: Fault) -> None:
    """Apply a fault where it makes sense (a restart needs a dead broker, and so on)."""
    b = c.brokers[fault.broker]
    if fault.action == "kill" and b.alive:
        c.kill_broker(fault.broker)
    elif fault.action == "restart" and not b.alive:
        c.restart_broker(fault.broker)
    elif fault.action == "pause" and b.alive and b.state is not BrokerState.PAUSED:
        c.pause_broker(fault.broker)
    elif fault.action == "resume" and b.state is BrokerState.PAUSED:
        c.resume_broker(fault.broker)
    elif fault.action == "isolate_zk" and "zookeeper" not in c.isolation.get(fault.broker, set()):
        c.isolate_broker(fault.broker, from_="zookeeper")
    elif fault.action == "isolate_brokers" and "brokers" not in c.isolation.get(fault.broker, set()):
        c.isolate_broker(fault.broker, from_="brokers")
    elif fault.action == "heal" and (c.isolation.get(fault.broker) or fault.broker in c.slow):
        c.heal(fault.broker)
    elif fault.action == "slow" and fault.broker not in c.slow:
        c.slow_broker(fault.broker, delay_ms=3000)


def recover(c: Cluster) -> None:
    for broker_id in BROKERS:
        b = c.brokers[broker_id]
        if b.state is BrokerState.PAUSED:
            c.resume_broker(broker_id)
        if c.isolation.get(broker_id) or broker_id in c.slow:
            c.heal(broker_id)
    for broker_id in BROKERS:
        if not c.brokers[broker_id].alive:
            c.restart_broker(broker_id)


def run(seed: int, *, unclean: bool, faults: list[Fault] | None = None) -> tuple[Cluster, int]:
    c = Cluster.create(brokers=3, seed=seed)
    InvariantChecker.attach(c, check_durability=not unclean)
    c.create_topic(
        "t",
        partitions=2,
        replication_factor=3,
        config={"min.insync.replicas": "2", "unclean.leader.election.enable": "true" if unclean else "false"},
    )
    p = c.producer(acks="all", delivery_timeout_ms=15_000, request_timeout_ms=5_000)
    plan = schedule(seed) if faults is None else faults
    sent = 0
    for fault in plan:
        while c.now_ms < fault.at_ms:
            p.send("t", f"{seed}-{sent}", key=str(sent))
            sent += 1
            c.run_for(200)
        apply(c, fault)
    recover(c)
    c.run_for(1000)
    p.flush(timeout_ms=60_000)
    c.wait_for(
        lambda: settled(c), 120_000, "every broker registered and every partition led with its full ISR"
    )
    return c, sent


def settled(c: Cluster) -> bool:
    """Really settled: every broker registered, and each partition's leader knows it leads, with all three in sync."""
    controller = c.controller()
    if controller is None or not controller.loaded:
        return False
    if any(
        b.state is not BrokerState.RUNNING or b.broker_epoch != controller.ctx.live_brokers.get(b.id)
        for b in c.brokers.values()
    ):
        return False
    for i in (0, 1):
        state = part(c, "t", i)
        leader = c.leader_of("t", i)
        if leader is None or leader != state["leader"] or len(state["isr"]) != 3:
            return False
        replica = c.brokers[leader].partitions[TopicPartition("t", i)]
        if replica.leader_epoch != state["leader_epoch"]:
            return False
        # The followers follow this leader: its HW reached its log end (an ISR member that has not
        # heard of the new epoch yet holds the HW back, and a reader below it misses records).
        if replica.high_watermark != replica.log_end_offset:
            return False
    return True


def read_back(c: Cluster) -> dict[tuple[int, int], bytes | None]:
    consumer = c.consumer()
    consumer.assign([("t", 0), ("t", 1)])
    consumer.seek("t", 0, 0)
    consumer.seek("t", 1, 0)
    got: dict[tuple[int, int], bytes | None] = {}
    while True:
        records = consumer.poll(timeout_ms=1000)
        if not records:
            return got
        for r in records:
            got[(r.partition, r.offset)] = r.value


@pytest.mark.parametrize("seed", range(200))
def test_acknowledged_writes_survive_any_schedule(seed: int) -> None:
    c, _sent = run(seed, unclean=False)
    try:
        acked = {
            (tp.partition, offset): rec.value
            for tp, recs in c.ledger.acked.items()
            for offset, rec in recs.items()
        }
        assert acked, "the schedule acknowledged nothing: it tests nothing"
        got = read_back(c)
        missing = {k: v for k, v in acked.items() if got.get(k) != v}
        assert not missing, f"acknowledged records not read back at their offsets: {sorted(missing)[:10]}"
        assert c.lost_records() == {}
    finally:
        c.close()


KNOWN_LOSS = [
    Fault(2_000, "isolate_brokers", 2),
    Fault(2_000, "isolate_brokers", 3),
    Fault(16_000, "kill", 1),
    Fault(16_000, "heal", 2),
    Fault(16_000, "heal", 3),
    Fault(30_000, "restart", 1),
]


def test_with_unclean_election_a_known_schedule_loses_records_and_the_checker_names_them() -> None:
    c = Cluster.create(brokers=3, seed=11)
    try:
        c.create_topic("t", replication_factor=3, config={"unclean.leader.election.enable": "true"})
        p = c.producer(acks="all", retries=0)
        futures = []
        for fault in KNOWN_LOSS:
            while c.now_ms < fault.at_ms:
                futures.append(p.send("t", f"r{len(futures)}"))
                c.run_for(500)
            apply(c, fault)
        c.run_for(10_000)
        acked = sorted(f.result().offset for f in futures if f.done() and f.exception() is None)
        leader = c.leader_of("t", 0)
        assert leader in (2, 3)
        new_leader_end = c.brokers[leader].partitions[next(iter(c.brokers[leader].partitions))].log_end_offset
        expected = [o for o in acked if o >= new_leader_end]
        assert expected, "the schedule should lose the writes acknowledged by the lone leader"
        assert c.lost_records() == {"t-0": expected}
        lost_events = [e for e in c.events() if e.kind == "records_lost"]
        assert lost_events
        assert lost_events[0].data["offsets"] == expected
    finally:
        c.close()
