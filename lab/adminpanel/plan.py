"""Reassignment plans: which replicas a move adds and removes, and where each partition's leader goes.

Pure functions over plain data, so the page can show the plan before anything changes. The
rules are the controller's (``lab.engine.controller``): the new replicas join first and catch
up; then the leader stays where it is if it is in the new set and alive, and otherwise moves to
the first live replica of the new set; then the old replicas are removed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lab.engine.errors import IllegalArgument, InvalidReplicaAssignment, InvalidReplicationFactor

Replicas = tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Move:
    """One partition's part of a plan."""

    partition: int
    current: Replicas
    target: Replicas
    leader: int  # the leader now (-1: none)
    leader_after: int  # where the controller puts it once the move is done (-1: nobody live)

    @property
    def added(self) -> Replicas:
        return tuple(r for r in self.target if r not in self.current)

    @property
    def removed(self) -> Replicas:
        return tuple(r for r in self.current if r not in self.target)

    @property
    def changes(self) -> bool:
        return self.current != self.target

    @property
    def leader_moves(self) -> bool:
        return self.leader != self.leader_after


def leader_after(leader: int, target: Sequence[int], live: Iterable[int]) -> int:
    """The controller's choice when a reassignment completes."""
    alive = set(live)
    if leader in target and leader in alive:
        return leader
    return next((r for r in target if r in alive), -1)


def parse_replicas(text: str, brokers: Sequence[int], *, partition: int) -> Replicas:
    """``"1, 2, 3"`` as replicas, checked against the lab's brokers (INVALID_REPLICA_ASSIGNMENT)."""
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise InvalidReplicaAssignment(f"partition {partition} needs at least one replica")
    try:
        replicas = tuple(int(p) for p in parts)
    except ValueError:
        raise InvalidReplicaAssignment(
            f"partition {partition}: replicas are broker ids separated by commas, not {text.strip()!r}"
        ) from None
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignment(f"partition {partition} lists a broker twice: {list(replicas)}")
    unknown = [r for r in replicas if r not in brokers]
    if unknown:
        raise InvalidReplicaAssignment(
            f"partition {partition}: there is no broker {', '.join(map(str, unknown))} "
            f"(brokers: {', '.join(map(str, brokers))})"
        )
    return replicas


def for_replication_factor(
    current: Mapping[int, Sequence[int]], brokers: Sequence[int], rf: int
) -> dict[int, Replicas]:
    """Targets that give every partition ``rf`` replicas, moving as little as possible.

    Fewer replicas keep the first ones (the preferred leader stays first); more add brokers in
    the order the lab places replicas: replica j of partition i on broker (i + j) mod n.
    """
    if rf < 1:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    ordered = sorted(brokers)
    if rf > len(ordered):
        raise InvalidReplicationFactor(
            f"Replication factor: {rf} larger than available brokers: {len(ordered)}."
        )
    out: dict[int, Replicas] = {}
    for partition, replicas in sorted(current.items()):
        kept = tuple(replicas[:rf])
        if len(kept) < rf:
            n = len(ordered)
            extra = [ordered[(partition + j) % n] for j in range(n)]
            kept += tuple(b for b in extra if b not in kept)[: rf - len(kept)]
        out[partition] = kept
    return out


def moves(
    current: Mapping[int, Sequence[int]],
    targets: Mapping[int, Sequence[int]],
    leaders: Mapping[int, int],
    live: Iterable[int],
) -> list[Move]:
    """Every partition of ``targets``, with what changes; the caller decides whether any does."""
    alive = tuple(live)
    out = []
    for partition, target in sorted(targets.items()):
        if partition not in current:
            raise InvalidReplicaAssignment(f"there is no partition {partition}")
        leader = leaders.get(partition, -1)
        out.append(
            Move(
                partition=partition,
                current=tuple(current[partition]),
                target=tuple(target),
                leader=leader,
                leader_after=leader_after(leader, target, alive),
            )
        )
    return out


def encode(targets: Mapping[int, Sequence[int]]) -> str:
    """The plan as the page carries it between "show the plan" and "apply"."""
    return json.dumps({str(p): list(r) for p, r in sorted(targets.items())}, separators=(",", ":"))


def decode(text: str, brokers: Sequence[int]) -> dict[int, Replicas]:
    """A plan back from the page, checked as if typed (it came from a browser)."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise IllegalArgument("the plan is not valid JSON; show the plan again") from None
    if not isinstance(raw, dict) or not raw:
        raise IllegalArgument("the plan is empty; show the plan again")
    out: dict[int, Replicas] = {}
    for key, replicas in raw.items():
        if not str(key).isdigit() or not isinstance(replicas, list):
            raise IllegalArgument("the plan is malformed; show the plan again")
        partition = int(key)
        out[partition] = parse_replicas(",".join(str(r) for r in replicas), brokers, partition=partition)
    return out
