"""Records: produce (the topic admin's form, the API's with each record's outcome), ask again what became
of a produce, and consume as a group (read from its committed offsets, commit past what was read)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lab.engine import errors, limits
from lab.engine.errors import IllegalArgument, NonEmptyGroup, UnknownTopicOrPartition
from lab.engine.ids import TopicPartition
from lab.runtime.actions import (
    Act,
    Waiting,
    _choice,
    _int,
    _optional_int,
    _text,
    acks_waiting,
    group_retriable,
    register,
    retrying,
)
from lab.runtime.commands import produced
from lab.runtime.commands.reads import partition_count

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

WAIT_S = 5.0  # how long a produce waits for its answers before saying what there is
SEND_WAIT_S = 3.0  # the topic admin's form


def _topic(p: Mapping[str, Any]) -> str:
    return _text(p, "topic", limits.TOPIC_NAME)


def _acks(p: Mapping[str, Any]) -> str:
    return _choice(p, "acks", ("0", "1", "all"), default="all")


def _nullable(p: Mapping[str, Any], key: str, limit: limits.Text) -> str | None:
    """A record's key or value: text kept as given (every character counts), or null."""
    if p.get(key) is None:
        return None
    return _text(p, key, limit, required=False, strip=False)


def _partition_checked(lab: LiveLab, topic: str, partitions: list[int | None]) -> None:
    count = partition_count(lab, topic)
    for partition in partitions:
        if partition is not None and partition >= count:
            raise UnknownTopicOrPartition(
                f"{topic} has {count} partition(s); there is no partition {partition}"
            )


def _send(p: Mapping[str, Any]) -> Act:
    """The topic admin's produce: ``count`` records; ``{i}`` in the key or value becomes the record's number."""
    topic = _topic(p)
    key = _nullable(p, "key", limits.KEY)
    value = _nullable(p, "value", limits.VALUE)
    partition = _optional_int(p, "partition", limits.PARTITION)
    acks = _acks(p)
    count = _int(p, "count", limits.RECORDS, default=1)

    def run(lab: LiveLab) -> Any:
        _partition_checked(lab, topic, [partition])
        producer = lab.producer(acks)

        def fill(text: str | None, i: int) -> str | None:
            return None if text is None else text.replace("{i}", str(i))

        futures = [
            producer.send(topic, fill(value, i), key=fill(key, i), partition=partition)
            for i in range(1, count + 1)
        ]
        if acks == "0":
            return f"{count} record(s) sent to {topic} with acks=0: no answer comes back, so no offsets."
        return acks_waiting(futures, topic=topic, acks=acks, deadline=time.monotonic() + SEND_WAIT_S)

    return run


def _records(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = p.get("records")
    if not isinstance(raw, list) or not limits.RECORDS.low <= len(raw) <= limits.RECORDS.high:
        raise IllegalArgument(
            f"records must be a list of {limits.RECORDS.low} to {limits.RECORDS.high} records"
        )
    out = []
    for record in raw:
        if not isinstance(record, Mapping):
            raise IllegalArgument("each record is an object with a key, a value and a partition")
        out.append(
            {
                "key": _nullable(record, "key", limits.KEY),
                "value": _nullable(record, "value", limits.VALUE),
                "partition": _optional_int(record, "partition", limits.PARTITION),
            }
        )
    return out


def _close_when_answered(lab: LiveLab, request: produced.ProduceRequest) -> None:
    """A producer made for one request (its own ``retries``) closes once every record has its answer."""
    cluster = lab.cluster

    def close() -> None:
        request.producer.close()
        cluster.clients.pop(request.producer.client_id, None)

    if request.answered():
        close()
        return
    name = f"api-produce-{request.id}"

    def hook(lab: LiveLab) -> None:
        if lab.cluster is not cluster:  # reset: that cluster, and the producer with it, is gone
            lab.remove_tick_hook(name)
        elif request.answered():
            close()
            lab.remove_tick_hook(name)

    lab.add_tick_hook(name, hook)


def _produce(p: Mapping[str, Any]) -> Act:
    """The API's produce: answers ``[status, body]`` (200 written, 409 some failed, 202 some unanswered),
    and keeps the request so ``records-produce-outcome`` can tell what became of it."""
    topic = _topic(p)
    records = _records(p)
    acks = _acks(p)
    retries = _optional_int(p, "retries", limits.RETRIES)
    # An id is the server's exact token: one of blanks is an unknown id (404), not a missing one.
    request_id = _text(p, "request_id", produced.REQUEST_ID, strip=False)
    poll = _text(p, "poll", produced.POLL)

    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        count = partition_count(lab, topic)
        for record in records:
            if record["partition"] is not None and record["partition"] >= count:
                raise UnknownTopicOrPartition(
                    f"{topic} has {count} partition(s); there is no partition {record['partition']}"
                )
        if retries is None:
            producer = lab.producer(acks)  # the dashboard's producer for these acks, kept by the lab
        else:
            producer = cluster.producer(acks=acks, retries=retries)
        since = cluster.journal.last_seq
        futures = [producer.send(topic, r["value"], key=r["key"], partition=r["partition"]) for r in records]
        sent = produced.ProduceRequest(
            id=request_id,
            slug=lab.slug,
            topic=topic,
            acks=acks,
            cluster=cluster,
            producer=producer,
            futures=futures,
            since_seq=since,
        )
        produced.requests.add(sent)

        def answer() -> list[Any]:
            if retries is not None:
                _close_when_answered(lab, sent)
            return list(produced.outcome(lab, sent, poll))

        return Waiting(
            ready=sent.answered, result=answer, on_timeout=answer, deadline=time.monotonic() + WAIT_S
        )

    return run


def _outcome(p: Mapping[str, Any]) -> Act:
    # An id is the server's exact token: one of blanks is an unknown id (404), not a missing one.
    request_id = _text(p, "request_id", produced.REQUEST_ID, strip=False)
    poll = _text(p, "poll", produced.POLL)

    def run(lab: LiveLab) -> list[Any]:
        return list(produced.outcome(lab, produced.requests.get(lab.slug, request_id), poll))

    return run


def _bounds(lab: LiveLab, topic: str, partition: int) -> tuple[int, int, int]:
    cluster = lab.cluster
    leader = cluster.leader_of(topic, partition)
    if leader is None:
        raise errors.LeaderNotAvailable(f"{topic}-{partition} has no leader right now")
    replica = cluster.brokers[leader].partitions[TopicPartition(topic, partition)]
    return replica.log_start_offset, replica.high_watermark, replica.log_end_offset


def _consume(p: Mapping[str, Any]) -> Act:
    """Read from the group's committed offsets and commit past what is returned; only for a group with
    no live members (NON_EMPTY_GROUP)."""
    topic = _topic(p)
    group = _text(p, "group", limits.GROUP_ID)
    only = _optional_int(p, "partition", limits.PARTITION)
    limit = _int(p, "limit", limits.RECORDS, default=100)
    reset = _choice(p, "auto_offset_reset", ("earliest", "latest"), default="latest")

    def run(lab: LiveLab) -> Any:
        cluster = lab.cluster
        count = partition_count(lab, topic)
        if only is not None and only >= count:
            raise UnknownTopicOrPartition(f"{topic} has {count} partition(s); there is no partition {only}")
        described = cluster.groups().get(group)
        if described is not None and described["members"]:
            raise NonEmptyGroup(
                f"group {group} has {len(described['members'])} member(s) ({described['state']}): Kafka "
                "takes offset commits from outside a group only while it is empty"
            )
        committed: dict[str, int] = dict(described["committed"]) if described else {}
        partitions = [only] if only is not None else list(range(count))
        records: list[dict[str, Any]] = []
        positions: dict[tuple[str, int], int] = {}
        for q in partitions:
            remaining = limit - len(records)
            if remaining <= 0:
                break
            start, high_watermark, end = _bounds(lab, topic, q)
            position = committed.get(TopicPartition(topic, q).key)
            if position is None or not start <= position <= end:
                # No committed offset, or one the log no longer holds: auto.offset.reset decides.
                position = start if reset == "earliest" else high_watermark
            got = (
                cluster.browse(topic, q, offset=position, limit=remaining)
                if position < high_watermark
                else []
            )
            records += got
            positions[(topic, q)] = got[-1]["offset"] + 1 if got else position
        answer = {
            "group": group,
            "records": records,
            "committed": {TopicPartition(t, q).key: o for (t, q), o in sorted(positions.items())},
        }
        if not positions:
            return answer
        # The commit is a request in flight: the driver runs the lab (and everyone else's calls) until
        # the coordinator answers, retrying as a client does while there is none yet.
        return retrying(
            lambda: cluster.commit_group_offsets(group, positions),
            then=lambda _: answer,
            retry=group_retriable,
        )

    return run


register("records-send", _send)
register("records-produce", _produce)
register("records-produce-outcome", _outcome)
register("records-consume", _consume)
