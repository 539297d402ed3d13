"""Randomised group schedules: members join, crash and leave while brokers die and return.

At-least-once: with commits after processing, every acknowledged record is
processed by the group. And within one generation no partition has two owners.
"""

from __future__ import annotations

import random

import pytest

from lab.engine.cluster import Cluster
from lab.engine.invariants import InvariantChecker, InvariantViolation
from lab.engine.membership import GroupConsumer
from lab.engine.simclients import SimulatedConsumer


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
    finally:
        c.close()
