"""Topics of a lab: list, create, describe (partitions, configs beside Kafka's defaults), delete, configs,
more partitions, reassignment, preferred leader election.

Changes are recorded in the lab's spec as the dashboard's are, so a lab rebuilt after a reset or a restart
(on the memory store) comes back with them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpRequest
from ninja import Path, Router, Status

from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import (
    MAX_NAME,
    TOPIC_PATTERN,
    ConfigOut,
    ConfigPatchIn,
    ElectIn,
    MessageOut,
    PartitionsIn,
    ReassignIn,
    TopicIn,
    TopicOut,
    TopicSummaryOut,
)
from lab.engine.config import TOPIC_KEYS
from lab.engine.errors import InvalidTopic, UnknownTopicOrPartition
from lab.runtime import actions
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec

router = Router(tags=["topics"])

TopicName = Path(..., min_length=1, max_length=MAX_NAME, pattern=TOPIC_PATTERN)


# ----------------------------------------------------------------------------- on the driver thread


def summaries(lab: LiveLab) -> list[dict[str, Any]]:
    out = []
    for name, topic in sorted(lab.cluster.snapshot()["topics"].items()):
        parts = topic["partitions"]
        out.append(
            {
                "name": name,
                "partitions": len(parts),
                "replication_factor": max((len(p["replicas"]) for p in parts), default=0),
                "under_replicated": sum(1 for p in parts if p["under_replicated"]),
                "offline": sum(1 for p in parts if p["offline"]),
                "internal": name.startswith("__"),
                "reassigning": bool(topic.get("reassigning")),
            }
        )
    return out


def configs(lab: LiveLab, name: str, *, overrides: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every config of topic ``name``: its ``overrides`` (default: as the controller reads them)."""
    cluster = lab.cluster
    if overrides is None:
        overrides = cluster.topic_config(name)
    return [
        {
            "name": key.name,
            "value": overrides.get(key.name, cluster.config.topic_default(key.name)),
            "source": "topic" if key.name in overrides else "default",
            "lab_default": cluster.config.topic_default(key.name),
            "kafka_default": key.kafka_default,
            "doc": key.doc,
        }
        for key in TOPIC_KEYS.values()
    ]


def describe(lab: LiveLab, name: str) -> dict[str, Any]:
    cluster = lab.cluster
    count = cluster.partition_count(name)  # UNKNOWN_TOPIC_OR_PARTITION when there is none
    moving = cluster.snapshot()["topics"].get(name, {}).get("reassigning", {})
    return {
        "name": name,
        "partitions": [cluster.partition_state(name, p) for p in range(count)],
        "reassigning": moving,
        "configs": configs(lab, name),
    }


def alter_configs(lab: LiveLab, topic: str, body: ConfigPatchIn) -> actions.Waiting:
    """The change, answered with every config once the controller has read it (or after ``SETTLE_S``)."""

    def written(merged: dict[str, str], taken_in: bool) -> list[dict[str, Any]]:
        _record(lab, topic, config=merged)
        return configs(lab, topic, overrides=merged)

    return actions.config_change(
        lab.cluster, topic, dict(body.set), list(body.remove), then=written, wait_s=driver.SETTLE_S
    )


def _has_leaders(lab: LiveLab, name: str, partitions: range) -> bool:
    return all(lab.cluster.leader_of(name, p) is not None for p in partitions)


def _record(lab: LiveLab, name: str, **changes: Any) -> None:
    """Remember a change to a topic in the lab's spec (a topic the spec does not hold yet is added)."""
    spec = lab.spec
    current = next((t for t in spec.topics if t.name == name), None)
    if current is None:
        cluster = lab.cluster
        count = cluster.partition_count(name)
        state = cluster.partition_state(name, 0)
        current = TopicSpec(
            name=name,
            partitions=count,
            replication_factor=len(state["replicas"]) or 1,
            config=cluster.topic_config(name),
        )
    lab.update_spec(spec.with_topic(replace(current, **changes)))


def _forget(lab: LiveLab, name: str) -> None:
    lab.update_spec(replace(lab.spec, topics=tuple(t for t in lab.spec.topics if t.name != name)))


# ----------------------------------------------------------------------------- operations


@router.get("/labs/{slug}/topics", response={200: list[TopicSummaryOut], **ERRORS}, summary="Topics")
async def list_topics(request: HttpRequest, slug: str) -> Any:
    """Every topic, with its partition count, replication factor, and under-replicated and offline counts."""
    return await driver.read(request, slug, summaries)


@router.post("/labs/{slug}/topics", response={201: TopicOut, **ERRORS}, summary="Create a topic")
async def create_topic(request: HttpRequest, slug: str, body: TopicIn) -> Any:
    """As kafka-topics.sh --create: Kafka's error and nothing created if the request is bad.
    Answers once every partition has a leader (or after a few seconds, with what there is)."""

    def run(lab: LiveLab) -> Any:
        lab.cluster.create_topic(
            body.name,
            partitions=body.partitions,
            replication_factor=body.replication_factor,
            config=dict(body.config),
            wait=False,
        )
        _record(lab, body.name)
        return driver.settle(
            lambda: _has_leaders(lab, body.name, range(body.partitions)), lambda: describe(lab, body.name)
        )

    return Status(201, await driver.act(request, slug, run, save=True))


@router.get("/labs/{slug}/topics/{topic}", response={200: TopicOut, **ERRORS}, summary="A topic")
async def get_topic(request: HttpRequest, slug: str, topic: str = TopicName) -> Any:
    """Its partitions (replicas, leader, leader epoch, ISR, each replica's offsets) and every config with its
    value, whether this topic overrides it, the lab's default and Kafka's."""
    return await driver.read(request, slug, lambda lab: describe(lab, topic))


@router.delete("/labs/{slug}/topics/{topic}", response={200: MessageOut, **ERRORS}, summary="Delete a topic")
async def delete_topic(request: HttpRequest, slug: str, topic: str = TopicName) -> Any:
    def run(lab: LiveLab) -> Any:
        if topic.startswith("__"):
            raise InvalidTopic(f"Topic {topic} is a Kafka internal topic and is not allowed to be deleted.")
        lab.cluster.delete_topic(topic, wait=False)
        _forget(lab, topic)

        def gone() -> bool:
            return topic not in lab.cluster.topics()

        return driver.settle(
            gone,
            lambda: {
                "message": f"Topic {topic} deleted."
                if gone()
                else f"Topic {topic} is marked for deletion; the controller deletes it when every replica can."
            },
        )

    return await driver.act(request, slug, run, save=True)


@router.get(
    "/labs/{slug}/topics/{topic}/configs", response={200: list[ConfigOut], **ERRORS}, summary="Configs"
)
async def get_configs(request: HttpRequest, slug: str, topic: str = TopicName) -> Any:
    return await driver.read(request, slug, lambda lab: configs(lab, topic))


@router.patch(
    "/labs/{slug}/topics/{topic}/configs", response={200: list[ConfigOut], **ERRORS}, summary="Change configs"
)
async def patch_configs(request: HttpRequest, slug: str, body: ConfigPatchIn, topic: str = TopicName) -> Any:
    """Set overrides and drop others (``kafka-configs.sh --alter``); INVALID_CONFIG and nothing changed if one is bad.
    Answers the configs as written to ZooKeeper, once the controller has read them (or after a few seconds:
    as in Kafka, the brokers apply a change when they read its notification)."""

    return await driver.act(request, slug, lambda lab: alter_configs(lab, topic, body), save=True)


@router.post(
    "/labs/{slug}/topics/{topic}/partitions", response={200: TopicOut, **ERRORS}, summary="Add partitions"
)
async def add_partitions(request: HttpRequest, slug: str, body: PartitionsIn, topic: str = TopicName) -> Any:
    """Grow the topic to ``total`` partitions (Kafka never shrinks one: INVALID_PARTITIONS)."""

    def run(lab: LiveLab) -> Any:
        before = lab.cluster.partition_count(topic)
        lab.cluster.create_partitions(topic, body.total, wait=False)
        _record(lab, topic, partitions=body.total)
        return driver.settle(
            lambda: _has_leaders(lab, topic, range(before, body.total)), lambda: describe(lab, topic)
        )

    return await driver.act(request, slug, run, save=True)


@router.post(
    "/labs/{slug}/topics/{topic}/reassign", response={200: MessageOut, **ERRORS}, summary="Reassign replicas"
)
async def reassign(request: HttpRequest, slug: str, body: ReassignIn, topic: str = TopicName) -> Any:
    """Move replicas, or change the replication factor: the plan names each partition's new replica list.
    The controller adds the new replicas, waits for them to join the ISR, then drops the old ones: follow it
    in the topic's ``reassigning`` and in the events."""

    plan = {int(key): replicas for key, replicas in body.plan.items()}  # the schema's keys are numbers

    def run(lab: LiveLab) -> Any:
        lab.cluster.reassign_partitions({(topic, p): r for p, r in plan.items()}, wait=False)
        sizes = {len(r) for r in plan.values()}
        if len(sizes) == 1 and len(plan) == lab.cluster.partition_count(topic):
            _record(lab, topic, replication_factor=sizes.pop())
        moves = ", ".join(f"{topic}-{p} -> {r}" for p, r in sorted(plan.items()))
        return {"message": f"Reassignment started: {moves}."}

    return await driver.act(request, slug, run, save=True)


@router.post(
    "/labs/{slug}/topics/{topic}/elect-preferred",
    response={200: MessageOut, **ERRORS},
    summary="Preferred leader election",
)
async def elect_preferred(
    request: HttpRequest, slug: str, body: ElectIn | None = None, topic: str = TopicName
) -> Any:
    """Move leadership back to each partition's first replica (the preferred one), where it is in the ISR."""

    def run(lab: LiveLab) -> Any:
        count = lab.cluster.partition_count(topic)
        named = None if body is None else body.partitions
        chosen = list(range(count)) if named is None else sorted(set(named))
        bad = [p for p in chosen if not 0 <= p < count]
        if bad:
            raise UnknownTopicOrPartition(f"{topic} has {count} partition(s); there is no partition {bad[0]}")
        lab.cluster.elect_preferred_leaders([(topic, p) for p in chosen], wait=False)
        return {
            "message": f"Preferred leader election started for {', '.join(f'{topic}-{p}' for p in chosen)}."
        }

    return await driver.act(request, slug, run)
