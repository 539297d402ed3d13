"""Randomised group schedules: members join, crash and leave while brokers die and return.

At-least-once: with commits after processing, every acknowledged record is
processed by the group. And within one generation no partition has two owners.
"""

from __future__ import annotations

import random

import pytest

from lab.engine.cluster import Cluster
from lab.engine.events import Event
from lab.engine.ids import TopicPartition
from lab.engine.invariants import InvariantChecker, InvariantViolation
from lab.engine.membership import GroupConsumer
from lab.engine.simclients import SimulatedConsumer

pytestmark = pytest.mark.long(130)


def check_single_owner(c: Cluster) -> None:
    owners: dict[tuple[str, int, object], str] = {}
    for client in c.clients.values():
        if not isinstance(client, GroupConsumer) or client.closed or client.state != "stable":
            continue
        for tp in client.assignment():
            key = (client.group_id, client.generation, tp)
            other = owners.setdefault(key, client.client_id)
            if other != client.client_id:
                raise InvariantViolation(
                    f"{tp} owned by {other} and {client.client_id} in generation {client.generation}"
                )


@pytest.mark.parametrize("seed", range(30))
def test_at_least_once_through_joins_crashes_and_broker_kills(seed: int) -> None:
    rng = random.Random(seed)
    c = Cluster.create(brokers=3, seed=seed)
    InvariantChecker.attach(c)
    c.after_step.append(lambda: check_single_owner(c))
    try:
        c.create_topic("orders", partitions=6, replication_factor=3, config={"min.insync.replicas": "2"})
        strategy = rng.choice(["range", "roundrobin", "sticky", "cooperative-sticky"])
        group_config = {
            "partition_assignment_strategy": strategy,
            "session_timeout_ms": 3000,
            "heartbeat_interval_ms": 500,
        }
        producer = c.simulated_producer("orders", rate_per_s=40, keys=20, acks="all")
        members: list[SimulatedConsumer] = [
            c.simulated_consumer("g", ["orders"], processing_ms=5, **group_config) for _ in range(2)
        ]
        for _ in range(8):
            c.run_for(rng.randrange(1000, 4000))
            action = rng.choice(["join", "crash", "stop", "kill", "restart"])
            alive = [m for m in members if m.state == "running"]
            if action == "join" or not alive:
                members.append(c.simulated_consumer("g", ["orders"], processing_ms=5, **group_config))
            elif action == "crash":
                rng.choice(alive).crash()
            elif action == "stop" and len(alive) > 1:
                rng.choice(alive).stop()
            elif action == "kill":
                running = [b for b in c.brokers.values() if b.alive]
                if len(running) == 3:
                    c.kill_broker(rng.choice(running).id)
            elif action == "restart":
                for b in c.brokers.values():
                    if not b.alive:
                        c.restart_broker(b.id)
        producer.stop()
        for b in c.brokers.values():
            if not b.alive:
                c.restart_broker(b.id)
        if not any(m.state == "running" for m in members):
            members.append(c.simulated_consumer("g", ["orders"], processing_ms=5, **group_config))
        acked = {(tp, o) for tp, recs in c.ledger.acked.items() for o in recs}
        assert acked

        def processed() -> set[tuple[object, int]]:
            return {(tp, o) for m in members for tp, o, _ in m.processed}

        c.wait_for(
            lambda: acked <= processed(),
            120_000,
            f"the group ({strategy}) to process every acknowledged record",
        )
        # The history: one record per generation, in order, through coordinator failovers.
        generations = [e.data["generation"] for e in _rebalances(c, "g")]
        assert generations == list(range(1, len(generations) + 1)), generations
    finally:
        c.close()


def _demo_lab(**config: str) -> Cluster:
    """The demo lab of ``make run`` (lab/runtime/spec.py's DEMO_*), on the memory store."""
    from lab.runtime.spec import DEMO_BROKERS, DEMO_CLIENTS, DEMO_CONFIG, DEMO_TOPICS

    c = Cluster.create(brokers=DEMO_BROKERS, seed=7, config={**DEMO_CONFIG, **config})
    InvariantChecker.attach(c)
    c.after_step.append(lambda: check_single_owner(c))
    for topic in DEMO_TOPICS:
        c.create_topic(topic.name, topic.partitions, topic.replication_factor, config=dict(topic.config))
    for client in DEMO_CLIENTS:
        client.start(c)
    return c


def _rebalances(c: Cluster, group: str) -> list[Event]:
    return [e for e in c.events() if e.kind == "rebalance" and e.group == group]


# The demo lab runs on a real ZooKeeper, whose answers take a few ms more than the memory
# store's (lab.zookeeper.latency.ms, 1 ms in the lab): with 20 ms, the paused coordinator takes
# longer to learn it lost its partition, and members rejoin it meanwhile.
@pytest.mark.parametrize("zookeeper_latency_ms", ["1", "20"])
@pytest.mark.parametrize("pause_ms", [6_000, 8_000, 10_000])
def test_the_demo_group_recovers_after_its_coordinator_pauses(
    zookeeper_latency_ms: str, pause_ms: int
) -> None:
    c = _demo_lab(**{"lab.zookeeper.latency.ms": zookeeper_latency_ms})
    try:
        members = [sim for sim in c.simulated.values() if isinstance(sim, SimulatedConsumer)]
        c.run_for(20_000)
        assert all(len(m.consumer.assignment()) >= 1 for m in members)
        coordinator = c.snapshot()["groups"]["billing"]["coordinator"]
        c.pause_broker(coordinator)
        c.run_for(pause_ms)
        c.resume_broker(coordinator)

        def recovered() -> bool:
            group = c.snapshot()["groups"]["billing"]
            ids = sorted(m["member_id"] for m in group["members"])
            return (
                group["state"] == "Stable"
                and ids == sorted(m.consumer.member_id for m in members)
                and all(m.consumer.state == "stable" and m.consumer.assignment() for m in members)
            )

        # A member rejoins at its next poll: within a session timeout and a rebalance, not minutes.
        c.run_for(20_000)
        assert recovered(), [m.describe() for m in members]
        owned = sorted(tp for m in members for tp in m.consumer.assignment())
        assert owned == [TopicPartition("orders", p) for p in range(3)]
        # And they keep consuming (a stranded member's count would stay frozen).
        c.run_for(30_000)
        before = [len(m.processed) for m in members]
        c.run_for(30_000)
        assert all(len(m.processed) > b for m, b in zip(members, before, strict=True))
        assert recovered()
        assert all(m.errors == [] for m in members)
        # The history: one record per generation, in order, each naming its members by member id.
        history = _rebalances(c, "billing")
        generations = [e.data["generation"] for e in history]
        assert generations == sorted(set(generations)), generations
        assert generations == list(range(generations[0], generations[-1] + 1)), generations
        for event in history:
            for member_id in event.data["members"]:
                assert member_id in event.text
    finally:
        c.close()
