"""Kafka's internal topics (``__consumer_offsets``, ``__transaction_state``), made by the coordinator
that first needs one, as Kafka's brokers do: the topic's config and assignment znodes in one multi."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from lab.engine.assignment import place_replicas
from lab.engine.metadata import paths
from lab.engine.metadata.store import CreateOp, NodeExists

if TYPE_CHECKING:
    from lab.engine.broker import Broker


async def maybe_create_internal_topic(
    broker: Broker,
    name: str,
    num_partitions: int,
    replication_factor: int,
    config: Callable[[int], Mapping[str, str]],
    told: Callable[[int], str],
) -> None:
    """Create ``name`` unless it exists; ``config`` and ``told`` (the timeline's words after "on first
    use: ") take the replication factor it gets, at most the live brokers."""
    zk = broker._zk()
    try:
        if await zk.exists(paths.topic_path(name)) is not None:
            return
        live = sorted(int(c) for c in await zk.get_children(paths.BROKER_IDS) if c.isdigit())
        rf = min(replication_factor, len(live))
        placement = place_replicas(live, num_partitions, rf)
        assignment = paths.TopicAssignment(partitions=placement, topic_id=broker.ctx.new_topic_id())
        await zk.multi(
            [
                CreateOp(path=paths.topic_config_path(name), data=paths.encode_topic_config(config(rf))),
                CreateOp(path=paths.topic_path(name), data=paths.encode_topic_assignment(assignment)),
            ]
        )
        broker.journal(
            "topic_created", f"broker {broker.id} creates {name} on first use: {told(rf)}", topic=name
        )
    except NodeExists:
        pass  # another broker made it first
