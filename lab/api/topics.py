"""Topics of a lab: list, create, describe (partitions, configs beside Kafka's defaults), delete, configs,
more partitions, reassignment, preferred leader election.

Changes are recorded in the lab's spec as the dashboard's are, so a lab rebuilt after a reset or a restart
(on the memory store) comes back with them.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from lab.api import driver
from lab.api.errors import ERRORS, LabTimeout
from lab.api.schemas import (
    ConfigOut,
    ConfigPatchIn,
    ElectIn,
    MessageOut,
    PartitionsIn,
    ReassignIn,
    TopicIn,
    TopicOut,
    TopicSummaryOut,
    path,
)
from lab.engine import limits

router = Router(tags=["topics"])

TopicName = path(limits.TOPIC_NAME)


# ----------------------------------------------------------------------------- operations


def _written(answer: dict[str, Any]) -> dict[str, Any]:
    """A topic as the command answered it, or a 504 when ZooKeeper had not answered (a paused clock)."""
    if "partitions" not in answer:
        raise LabTimeout(answer["message"])
    return answer


@router.get("/labs/{slug}/topics", response={200: list[TopicSummaryOut], **ERRORS}, summary="Topics")
async def list_topics(request: HttpRequest, slug: str) -> Any:
    """Every topic, with its partition count, replication factor, and under-replicated and offline counts."""
    return await driver.read(request, slug, "topics")


@router.post("/labs/{slug}/topics", response={201: TopicOut, **ERRORS}, summary="Create a topic")
async def create_topic(request: HttpRequest, slug: str, body: TopicIn) -> Any:
    """As kafka-topics.sh --create: Kafka's error and nothing created if the request is bad.
    Answers once every partition has a leader (or after a few seconds, with what there is)."""
    args = {
        "name": body.name,
        "partitions": body.partitions,
        "replication_factor": body.replication_factor,
        "config": dict(body.config),
    }
    answer = await driver.act(request, slug, "topic-create", args, save=True)
    return Status(201, _written(answer))


@router.get("/labs/{slug}/topics/{topic}", response={200: TopicOut, **ERRORS}, summary="A topic")
async def get_topic(request: HttpRequest, slug: str, topic: str = TopicName) -> Any:
    """Its partitions (replicas, leader, leader epoch, ISR, each replica's offsets) and every config with its
    value, whether this topic overrides it, the lab's default and Kafka's."""
    return await driver.read(request, slug, "topic-describe", {"topic": topic})


@router.delete("/labs/{slug}/topics/{topic}", response={200: MessageOut, **ERRORS}, summary="Delete a topic")
async def delete_topic(request: HttpRequest, slug: str, topic: str = TopicName) -> Any:
    return await driver.act(request, slug, "topic-delete", {"topic": topic}, save=True)


@router.get(
    "/labs/{slug}/topics/{topic}/configs", response={200: list[ConfigOut], **ERRORS}, summary="Configs"
)
async def get_configs(request: HttpRequest, slug: str, topic: str = TopicName) -> Any:
    return await driver.read(request, slug, "topic-configs", {"topic": topic})


@router.patch(
    "/labs/{slug}/topics/{topic}/configs", response={200: list[ConfigOut], **ERRORS}, summary="Change configs"
)
async def patch_configs(request: HttpRequest, slug: str, body: ConfigPatchIn, topic: str = TopicName) -> Any:
    """Set overrides and drop others (``kafka-configs.sh --alter``); INVALID_CONFIG and nothing changed if one is bad.
    Answers the configs as written to ZooKeeper, once the controller has read them (or after a few seconds:
    as in Kafka, the brokers apply a change when they read its notification)."""
    args = {"topic": topic, "set": dict(body.set), "remove": list(body.remove)}
    answer = await driver.act(request, slug, "topic-configs-alter", args, save=True)
    if "configs" not in answer:
        raise LabTimeout(answer["message"])
    return answer["configs"]


@router.post(
    "/labs/{slug}/topics/{topic}/partitions", response={200: TopicOut, **ERRORS}, summary="Add partitions"
)
async def add_partitions(request: HttpRequest, slug: str, body: PartitionsIn, topic: str = TopicName) -> Any:
    """Grow the topic to ``total`` partitions (Kafka never shrinks one: INVALID_PARTITIONS)."""
    answer = await driver.act(
        request, slug, "topic-partitions", {"topic": topic, "total": body.total}, save=True
    )
    return _written(answer)


@router.post(
    "/labs/{slug}/topics/{topic}/reassign", response={200: MessageOut, **ERRORS}, summary="Reassign replicas"
)
async def reassign(request: HttpRequest, slug: str, body: ReassignIn, topic: str = TopicName) -> Any:
    """Move replicas, or change the replication factor: the plan names each partition's new replica list.
    The controller adds the new replicas, waits for them to join the ISR, then drops the old ones: follow it
    in the topic's ``reassigning`` and in the events."""
    plan = {str(key): list(replicas) for key, replicas in body.plan.items()}
    return await driver.act(request, slug, "topic-reassign", {"topic": topic, "plan": plan}, save=True)


@router.post(
    "/labs/{slug}/topics/{topic}/elect-preferred",
    response={200: MessageOut, **ERRORS},
    summary="Preferred leader election",
)
async def elect_preferred(
    request: HttpRequest, slug: str, body: ElectIn | None = None, topic: str = TopicName
) -> Any:
    """Move leadership back to each partition's first replica (the preferred one), where it is in the ISR:
    ELECTION_NOT_NEEDED when each already leads, PREFERRED_LEADER_NOT_AVAILABLE when none is in its ISR."""
    named = None if body is None or body.partitions is None else sorted(set(body.partitions))
    return await driver.act(request, slug, "topic-elect-preferred", {"topic": topic, "partitions": named})
