"""Topic admin: create, delete, add partitions, reassign, preferred election, alter configs.

The API and the topic admin pages ask for these same commands. Each writes to ZooKeeper as a request
in flight (the cluster's ``begin_*`` calls) and answers through ``actions.in_flight``: the lab, and
everyone else's calls on it, run while ZooKeeper answers and the controller acts on the change; no
command holds the driver for a round trip. Their reads come from the controller's view of the
topics, which costs no round trip. What a change does to the lab's topics is recorded in its spec
once ZooKeeper has it, so a lab rebuilt from the spec (memory store, reset) has it too: by
``LiveLab._topic_changed``, which hears every topic ``TopicAdmin`` writes, whoever asked (these commands,
a scenario, a Kafka client's CreateTopics, auto-creation, CreatePartitions, AlterConfigs, DeleteTopics,
and the controller's write of a finished reassignment's replicas, whoever asked for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lab.engine import limits
from lab.engine.config import TOPIC_KEYS
from lab.engine.errors import (
    ElectionNotNeeded,
    IllegalArgument,
    InvalidPartitions,
    InvalidTopic,
    PreferredLeaderNotAvailable,
    UnknownTopicOrPartition,
)
from lab.engine.ids import TopicPartition
from lab.runtime.actions import (
    Act,
    _int,
    _names,
    _optional_int,
    _strings,
    _text,
    _whole_list,
    in_flight,
    register,
)
from lab.runtime.commands.reads import configs, describe, is_internal, partition_count

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

WAIT_S = 5.0  # how long an answer waits for the controller to act on a change before saying what there is
OFFSETS_TOPIC = "__consumer_offsets"
PAUSED = (
    "the lab's clock is paused, so ZooKeeper answers when it runs again (resume or step it); "
    "the page shows the change then"
)


# ---------------------------------------------------------------------------- the controller's view


def _assignments(lab: LiveLab) -> Mapping[TopicPartition, Sequence[int]]:
    ctx = lab.cluster.ctx.controller_context
    return {} if ctx is None else ctx.assignments


def _replicas(lab: LiveLab, topic: str, partition: int) -> list[int]:
    return list(_assignments(lab).get(TopicPartition(topic, partition), ()))


def _moving(lab: LiveLab) -> set[tuple[str, int]]:
    """The partitions the controller is reassigning now (the snapshot's "reassigning")."""
    ctx = lab.cluster.ctx.controller_context
    return set() if ctx is None else {(tp.topic, tp.partition) for tp in ctx.reassignments}


def _led(lab: LiveLab, topic: str, partitions: Sequence[int]) -> bool:
    return all(lab.cluster.leader_of(topic, p) is not None for p in partitions)


def _why_unsettled(lab: LiveLab) -> str:
    if lab.clock.paused:
        return "the lab's clock is paused: the controller acts on it when the clock runs again"
    return "is the controller paused or cut off?"


# ---------------------------------------------------------------------------- arguments


def _topic(p: Mapping[str, Any]) -> str:
    return _text(p, "topic", limits.TOPIC_NAME)


def _config(p: Mapping[str, Any], key: str) -> dict[str, str]:
    """Topic configs, each checked as Kafka checks it (INVALID_CONFIG, named)."""
    given = _strings(p, key)
    for name, value in given.items():
        if name in TOPIC_KEYS:
            TOPIC_KEYS[name].parse(
                value
            )  # INVALID_CONFIG; an unknown name is refused by the engine, in Kafka's words
    return given


# ---------------------------------------------------------------------------- commands


def _create(p: Mapping[str, Any]) -> Act:
    name = str(p.get("name", "")).strip()  # the engine checks it at once, in Kafka's words
    partitions = _int(p, "partitions", limits.PARTITIONS, default=3)
    rf = _int(p, "replication_factor", limits.REPLICATION_FACTOR, default=1)
    config = _config(p, "config")
    raw_isr = str(p.get("min_insync_replicas", "")).strip()  # the dashboard's shortcut
    if raw_isr:
        config["min.insync.replicas"] = str(TOPIC_KEYS["min.insync.replicas"].parse(raw_isr))
    said = f"Topic {name} created: {partitions} partition(s), replication factor {rf}"
    if config:
        said += ", " + ", ".join(f"{k}={v}" for k, v in sorted(config.items()))

    def run(lab: LiveLab) -> Any:
        written = lab.cluster.begin_create_topic(name, partitions, rf, config)  # kept: LiveLab._topic_changed

        def answer(placement: object, settled: bool) -> dict[str, Any]:
            if placement is None:
                return {"message": f"Topic {name} asked for: {PAUSED}."}
            if settled:
                return {"message": said + ".", **describe(lab, name)}
            why = _why_unsettled(lab)
            return {
                "message": f"{said}; its partitions have no leader yet ({why}).",
                **describe(lab, name, count=partitions, overrides=config),
            }

        return in_flight(
            lab,
            written,
            settled=lambda _: _led(lab, name, range(partitions)),
            answer=answer,
            what=f"the creation of {name}",
            wait_s=WAIT_S,
        )

    return run


def _delete(p: Mapping[str, Any]) -> Act:
    name = _topic(p)

    def run(lab: LiveLab) -> Any:
        if is_internal(name):  # kafka-topics.sh's words; Kafka's error for a reserved name
            raise InvalidTopic(
                f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion."
            )
        asked = lab.cluster.begin_delete_topic(name)  # UNKNOWN_TOPIC_OR_PARTITION for no such topic

        def gone(_: object) -> bool:
            return not any(tp.topic == name for tp in _assignments(lab))

        def answer(value: object, settled: bool) -> dict[str, Any]:
            if not asked.done():
                return {"message": f"Topic {name}'s deletion asked for: {PAUSED}."}
            if settled:
                return {"message": f"Topic {name} deleted: its replicas removed their logs."}
            return {"message": f"Topic {name} is marked for deletion; the controller deletes it next."}

        return in_flight(
            lab, asked, settled=gone, answer=answer, what=f"the deletion of {name}", wait_s=WAIT_S
        )

    return run


def _grow(p: Mapping[str, Any]) -> Act:
    topic = _topic(p)
    total = _int(p, "total", limits.PARTITIONS)
    if topic == OFFSETS_TOPIC:
        raise InvalidPartitions("The number of partitions for the offsets topic cannot be changed.")

    def run(lab: LiveLab) -> Any:
        # INVALID_PARTITIONS (fewer than now, or as many) comes back from ZooKeeper's side, nothing written.
        grown = lab.cluster.begin_create_partitions(topic, total)
        note = " (keys now map to other partitions: murmur2(key) mod the new count)"

        def answer(new: list[int] | None, settled: bool) -> dict[str, Any]:
            if new is None:
                return {"message": f"Topic {topic} asked to grow to {total} partitions: {PAUSED}."}
            before = min(new, default=total)
            said = f"Topic {topic} grows from {before} to {total} partitions"
            if settled:
                return {"message": said + note + ".", **describe(lab, topic)}
            return {
                "message": f"{said}; the new partitions have no leader yet ({_why_unsettled(lab)}).",
                **describe(lab, topic, count=total),
            }

        return in_flight(
            lab,
            grown,
            settled=lambda new: _led(lab, topic, new),
            answer=answer,
            what=f"the partitions of {topic}",
            wait_s=WAIT_S,
        )

    return run


def _plan(p: Mapping[str, Any]) -> dict[int, list[int]]:
    """Each partition's new replica list: a JSON object of partition numbers (as text) to broker ids."""
    raw = p.get("plan")
    if not isinstance(raw, Mapping) or not raw:
        raise IllegalArgument("plan must name at least one partition and its new replicas")
    out: dict[int, list[int]] = {}
    for key, replicas in raw.items():
        partition = _int({"partition": key}, "partition", limits.PARTITION)
        chosen = _whole_list({"replicas": replicas}, "replicas", limits.BROKER_ID) or []
        if not chosen:
            raise IllegalArgument(f"partition {partition} needs at least one replica")
        if len(set(chosen)) != len(chosen):
            raise IllegalArgument(f"partition {partition} names a broker twice: {chosen}")
        out[partition] = chosen
    return out


def _reassign(p: Mapping[str, Any]) -> Act:
    topic = _topic(p)
    targets = _plan(p)

    def run(lab: LiveLab) -> Any:
        count = partition_count(lab, topic)
        bad = [q for q in targets if not 0 <= q < count]
        if bad:
            raise UnknownTopicOrPartition(f"{topic} has {count} partition(s); there is no partition {bad[0]}")
        changed = {
            (topic, q): list(r) for q, r in sorted(targets.items()) if list(r) != _replicas(lab, topic, q)
        }
        if not changed:
            raise IllegalArgument("the plan changes nothing: every partition already has those replicas")
        asked = lab.cluster.begin_reassign_partitions(changed)
        said = (
            f"Reassignment of {len(changed)} partition(s) of {topic} started: the new replicas catch up, "
            "then the leader moves if it must, then the old replicas are removed."
        )

        def started(_: object) -> bool:
            # The controller has taken the plan: each partition is moving, or already moved.
            moving = _moving(lab)
            return all((t, q) in moving or _replicas(lab, t, q) == r for (t, q), r in changed.items())

        def answer(value: object, settled: bool) -> dict[str, Any]:
            if not asked.done():
                return {"message": f"Reassignment of {topic} asked for: {PAUSED}."}
            return {"message": said}

        return in_flight(lab, asked, settled=started, answer=answer, what="the reassignment", wait_s=WAIT_S)

    return run


def _elect(p: Mapping[str, Any]) -> Act:
    """A preferred-leader election: some partitions of ``topic``, all of them, or every partition of
    every topic (no ``topic``)."""
    topic = _text(p, "topic", limits.TOPIC_NAME, required=False) or None
    chosen = _whole_list(p, "partitions", limits.PARTITION)
    one = _optional_int(p, "partition", limits.PARTITION)  # the page's: one partition
    if one is not None:
        chosen = [one] if chosen is None else sorted({*chosen, one})
    if topic is None and chosen is not None:
        raise IllegalArgument("partitions are named with their topic")

    def run(lab: LiveLab) -> Any:
        cluster = lab.cluster
        topics = [topic] if topic is not None else sorted({tp.topic for tp in _assignments(lab)})
        wanted: list[tuple[str, int, int]] = []
        blocked: list[str] = []
        for name in topics:
            count = partition_count(lab, name)
            parts = range(count) if chosen is None else sorted(set(chosen))
            for q in parts:
                if not 0 <= q < count:
                    raise UnknownTopicOrPartition(
                        f"{name} has {count} partition(s); there is no partition {q}"
                    )
                state = cluster.partition_state(name, q)
                replicas, leader, isr = state["replicas"], state["leader"], state["isr"]
                preferred = replicas[0] if replicas else -1
                if preferred == leader:
                    continue
                if preferred not in isr:
                    blocked.append(f"{name}-{q} (broker {preferred} is not in the ISR {list(isr)})")
                    continue
                wanted.append((name, q, preferred))
        if not wanted:
            if blocked:
                raise PreferredLeaderNotAvailable(
                    f"The preferred leader is not available for {', '.join(blocked)}."
                )
            where = (
                f"{topic}-{chosen[0]}"
                if topic and chosen and len(chosen) == 1
                else (topic or "any partition")
            )
            raise ElectionNotNeeded(
                f"Leader election not needed for {where}: the preferred replica already leads."
            )
        asked = cluster.begin_elect_preferred_leaders([(t, q) for t, q, _ in wanted])

        def answer(value: object, settled: bool) -> dict[str, Any]:
            if not asked.done():
                return {"message": f"Preferred leader election asked for: {PAUSED}."}
            moved = [f"{t}-{q} → broker {b}" for t, q, b in wanted if cluster.leader_of(t, q) == b]
            text = f"Preferred leaders elected: {', '.join(moved) or 'none yet'}."
            if blocked:
                text += f" Not elected: {', '.join(blocked)}."
            if not settled:
                text += f" The controller is still at it ({_why_unsettled(lab)})."
            return {"message": text}

        return in_flight(
            lab,
            asked,
            settled=lambda _: all(cluster.leader_of(t, q) == b for t, q, b in wanted),
            answer=answer,
            what="the preferred leader election",
            wait_s=WAIT_S,
        )

    return run


def _alter_configs(p: Mapping[str, Any]) -> Act:
    topic = _topic(p)
    updates = _config(p, "set")
    remove = _names(p, "remove")
    parts = [f"{k}={v}" for k, v in sorted(updates.items())] + [f"{k} back to the default" for k in remove]

    def run(lab: LiveLab) -> Any:
        cluster = lab.cluster
        written = cluster.begin_alter_topic_config(topic, updates, remove=remove)  # INVALID_CONFIG: nothing

        def answer(merged: dict[str, str] | None, taken_in: bool) -> dict[str, Any]:
            if merged is None:
                return {"message": f"Topic {topic} config change asked for: {PAUSED}."}
            if taken_in:
                text = f"Topic {topic} config: {', '.join(parts)}."
            else:
                text = (
                    f"Topic {topic} config: {', '.join(parts)}, written to ZooKeeper; the brokers apply it when "
                    "the controller reads the change (is it paused?): the page shows it then."
                )
            return {"message": text, "configs": configs(lab, topic, overrides=merged)}

        # Kafka's AlterConfigs answers on the write; the brokers apply the change when they read its
        # notification (a paused controller reads it when it is resumed).
        return in_flight(
            lab,
            written,
            settled=lambda merged: cluster.config_taken_in(topic, merged),
            answer=answer,
            what=f"the config change of {topic}",
            wait_s=WAIT_S,
        )

    return run


register("topic-create", _create)
register("topic-delete", _delete)
register("topic-partitions", _grow)
register("topic-reassign", _reassign)
register("topic-elect-preferred", _elect)
register("topic-configs-alter", _alter_configs)
