"""Consumer groups: reset a group's committed offsets (``kafka-consumer-groups.sh --reset-offsets``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lab.engine import limits
from lab.engine.errors import IllegalArgument
from lab.runtime.actions import (
    RETRY_WAIT_S,
    Act,
    Waiting,
    _choice,
    _optional_int,
    _text,
    _whole_list,
    group_retriable,
    register,
    retrying,
)
from lab.runtime.commands.reads import OFFSET, TIMESTAMP

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

COORDINATOR_WAIT_S = RETRY_WAIT_S  # how long a reset waits for the group's coordinator


def _reset(p: Mapping[str, Any]) -> Act:
    """To the earliest or latest offset, an offset, or the first offset at or after a time (ms of the lab's
    time); only for an inactive group (NON_EMPTY_GROUP while it has members)."""
    group = _text(p, "group", limits.GROUP_ID)
    topic = _text(p, "topic", limits.TOPIC_NAME)
    to = _choice(p, "to", ("earliest", "latest", "offset", "timestamp"))
    offset = _optional_int(p, "offset", OFFSET)
    timestamp = _optional_int(p, "timestamp", TIMESTAMP)
    if (to == "offset") != (offset is not None) or (to == "timestamp") != (timestamp is not None):
        raise IllegalArgument("offset goes with to=offset, timestamp with to=timestamp, and only then")
    chosen = _whole_list(p, "partitions", limits.PARTITION)
    partitions = None if chosen is None else sorted(set(chosen))
    target: str | int | dict[str, int] = to
    how = f"the {to} offset"
    if offset is not None:
        target, how = offset, f"offset {offset}"
    elif timestamp is not None:
        target, how = {"timestamp": timestamp}, f"the time {timestamp} ms"

    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster

        def said(done: dict[str, int]) -> dict[str, Any]:
            moved = ", ".join(f"{k.replace('/', '-')} → {v}" for k, v in done.items())
            message = f"Group {group}'s offsets of {topic} reset to {how}: {moved}."
            return {"group": group, "offsets": done, "message": message}

        # As Kafka's tool does, wait for the coordinator (the lab's first group creates
        # __consumer_offsets, and a new coordinator loads its groups first); the commit is a request
        # in flight, answered between the driver's ticks, so it holds up no other call on the lab.
        return retrying(
            lambda: cluster.begin_reset_group_offsets(group, topic, target, partitions=partitions),  # type: ignore[arg-type]
            then=said,
            wait_s=COORDINATOR_WAIT_S,
            retry=group_retriable,
        )

    return run


register("group-reset", _reset)
