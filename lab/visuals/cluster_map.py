"""The cluster map: brokers as columns, partitions as rows, one cell per replica.

Each broker column carries its state, its ZooKeeper session, whether it is the
controller, and the fault controls that apply to it now (a control that does not
apply says why). Each cell says, in words and shape as well as colour, whether the
broker leads or follows the partition, whether it is in the ISR, and which replica
index it is, so the placement rule (replica j of partition i on broker (i + j) mod n)
can be read off the grid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lab.visuals.glossary import tip

# State -> (label, glyph). The glyph is a shape, so no state is told by colour alone.
BROKER_STATES: Mapping[str, tuple[str, str]] = {
    "alive": ("running", "●"),
    "killed": ("killed", "✕"),
    "stopped": ("stopped", "■"),
    "paused": ("paused", "❚❚"),
    "isolated": ("isolated", "⊘"),
    "slow": ("slow", "≋"),
    "starting": ("starting", "◌"),
}
SESSION_LABELS: Mapping[str, str] = {
    "connected": "session connected",
    "connecting": "session connecting",
    "suspended": "session suspended",
    "expired": "session expired",
    "closed": "no session",
}
_STATE_TIPS = {f"broker_{s}" for s in BROKER_STATES}
DOWN = ("killed", "stopped")


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """A control: enabled, or disabled with the reason as its title."""

    name: str
    label: str
    enabled: bool
    title: str
    params: tuple[tuple[str, str], ...] = ()
    confirm: str = ""

    @property
    def vals(self) -> str:
        """The parameters as JSON for hx-vals."""
        return json.dumps(dict(self.params))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerColumn:
    id: int
    state: str
    state_label: str
    glyph: str
    state_tip: str
    controller: bool
    session: str
    session_label: str
    broker_epoch: int | None
    isolated_from: tuple[str, ...]
    slow_ms: int
    actions: tuple[Action, ...]

    @property
    def running(self) -> bool:
        return self.state not in DOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaCell:
    broker: int
    replica_index: int | None  # j: this broker holds replica j of the partition; None: no replica here
    role: str  # "leader" | "follower" | "none"
    in_isr: bool
    online: bool  # the broker holding it runs
    label: str  # what the cell says in words
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRow:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    offline: bool
    under_replicated: bool
    cells: tuple[ReplicaCell, ...]
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicBlock:
    name: str
    internal: bool
    replication_factor: int
    partitions: tuple[PartitionRow, ...]
    offline: int
    under_replicated: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterMap:
    brokers: tuple[BrokerColumn, ...]
    topics: tuple[TopicBlock, ...]
    controller: int | None
    controller_epoch: int
    tips: tuple[tuple[str, str], ...]

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)

    @property
    def user_topics(self) -> tuple[TopicBlock, ...]:
        return tuple(t for t in self.topics if not t.internal)

    @property
    def internal_topics(self) -> tuple[TopicBlock, ...]:
        return tuple(t for t in self.topics if t.internal)


def broker_actions(broker: Mapping[str, Any]) -> tuple[Action, ...]:
    """The fault controls for one broker, each enabled or disabled with the reason."""
    bid = int(broker["id"])
    state = str(broker["state"])
    cut = set(broker.get("isolated_from") or ())
    slow = int(broker.get("slow_ms") or 0)
    down = state in DOWN
    paused = state == "paused"
    not_running = f"broker {bid} is not running ({state})"
    p = (("broker", str(bid)),)

    def act(name: str, label: str, ok: bool, does: str, why_not: str, confirm: str = "") -> Action:
        return Action(
            name=name, label=label, enabled=ok, title=does if ok else why_not, params=p, confirm=confirm
        )

    kill = act(
        "kill",
        "Kill",
        not down,
        f"Stop broker {bid} hard: no goodbye, ZooKeeper notices when its session times out",
        not_running,
    )
    restart = act(
        "restart",
        "Restart",
        down,
        f"Start broker {bid} again: it recovers its logs and registers",
        f"broker {bid} is running; kill it or shut it down first",
    )
    shutdown = act(
        "shutdown",
        "Shutdown",
        not down and not paused,
        f"Controlled shutdown of broker {bid}: it moves its leaderships away, then stops",
        not_running if down else f"broker {bid} is paused; resume it first",
    )
    pause = act(
        "pause",
        "Pause",
        not down and not paused,
        f"Freeze broker {bid}, like a long GC pause: no heartbeats, requests held",
        not_running if down else f"broker {bid} is already paused",
    )
    resume = act(
        "resume",
        "Resume",
        paused,
        f"Let broker {bid} run again with what it held",
        f"broker {bid} is not paused",
    )
    slow_ = act(
        "slow",
        "Slow",
        not down and slow == 0,
        f"Delay every message to and from broker {bid} by 2000 ms",
        not_running if down else f"broker {bid} is already slow (+{slow} ms); heal it first",
    )

    def isolate(side: str, label: str, what: str, effect: str) -> Action:
        if down:
            title = not_running
        elif side in cut:
            title = f"broker {bid} is already cut off from {what}"
        else:
            title = f"Cut broker {bid} off {what}: {effect}"
        return Action(
            name="isolate",
            label=label,
            enabled=not down and side not in cut,
            title=title,
            params=(*p, ("from", side)),
        )

    heal = act(
        "heal",
        "Heal",
        bool(cut) or slow > 0,
        f"Undo broker {bid}'s isolation and slowness",
        f"broker {bid} is neither isolated nor slow",
    )
    return (
        kill,
        restart,
        shutdown,
        pause,
        resume,
        slow_,
        isolate("zookeeper", "Cut ZK", "ZooKeeper", "its session will expire"),
        isolate("brokers", "Cut peers", "the other brokers", "replication to and from it stops"),
        isolate(
            "clients", "Cut clients", "its clients", "producers and consumers time out; replication goes on"
        ),
        heal,
    )


def _broker_column(broker: Mapping[str, Any], config: Mapping[str, str]) -> BrokerColumn:
    state = str(broker["state"])
    label, glyph = BROKER_STATES.get(state, (state, "?"))
    session = str(broker.get("session") or "closed")
    state_tip = tip(f"broker_{state}", config) if f"broker_{state}" in _STATE_TIPS else state
    return BrokerColumn(
        id=int(broker["id"]),
        state=state,
        state_label=label,
        glyph=glyph,
        state_tip=state_tip,
        controller=bool(broker.get("controller")),
        session=session,
        session_label=SESSION_LABELS.get(session, f"session {session}"),
        broker_epoch=broker.get("broker_epoch"),
        isolated_from=tuple(broker.get("isolated_from") or ()),
        slow_ms=int(broker.get("slow_ms") or 0),
        actions=broker_actions(broker),
    )


def _placement_note(partition: int, j: int, broker: int, ordered: list[int]) -> str:
    n = len(ordered)
    k = (partition + j) % n
    if ordered[k] == broker:
        return f"replica {j}: ({partition} + {j}) mod {n} = {k}, the {_ordinal(k)} broker, so broker {broker}"
    return f"replica {j}: placed on broker {broker} by a reassignment, not by the (i + j) mod n rule"


def _ordinal(k: int) -> str:
    return {0: "1st", 1: "2nd", 2: "3rd"}.get(k, f"{k + 1}th")


def _cell(
    topic: str,
    part: Mapping[str, Any],
    broker: BrokerColumn,
    ordered: list[int],
    config: Mapping[str, str],
) -> ReplicaCell:
    replicas = [int(r) for r in part["replicas"]]
    name = f"{topic}-{part['partition']}"
    if broker.id not in replicas:
        return ReplicaCell(
            broker=broker.id,
            replica_index=None,
            role="none",
            in_isr=False,
            online=broker.running,
            label="",
            title=f"{name} has no replica on broker {broker.id}",
        )
    j = replicas.index(broker.id)
    leader = int(part["leader"])
    isr = {int(b) for b in part["isr"]}
    log = (part.get("logs") or {}).get(str(broker.id)) or {}
    online = broker.running and bool(log.get("online", broker.running))
    role = "leader" if leader == broker.id else "follower"
    in_isr = broker.id in isr
    words = [role, "in ISR" if in_isr else "out of ISR"]
    if not online:
        words.append("offline")
    marks = [tip(role, config), tip("in_isr" if in_isr else "out_of_isr", config)]
    if not online:
        marks.append(f"Broker {broker.id} is {broker.state_label}: this replica is offline.")
    title = f"{name} {_placement_note(int(part['partition']), j, broker.id, ordered)}. " + " ".join(marks)
    return ReplicaCell(
        broker=broker.id,
        replica_index=j,
        role=role,
        in_isr=in_isr,
        online=online,
        label=", ".join(words),
        title=title,
    )


def cluster_map(snapshot: Mapping[str, Any], config: Mapping[str, str]) -> ClusterMap:
    """The map's view model from an engine snapshot and the lab's effective broker config."""
    brokers = tuple(_broker_column(b, config) for b in snapshot.get("brokers", ()))
    ordered = sorted(b.id for b in brokers)
    topics: list[TopicBlock] = []
    for name in sorted(snapshot.get("topics", {}), key=lambda t: (t.startswith("__"), t)):
        rows: list[PartitionRow] = []
        parts = snapshot["topics"][name]["partitions"]
        for part in sorted(parts, key=lambda p: p["partition"]):
            leader = int(part["leader"])
            offline = bool(part["offline"])
            summary = (
                f"{name}-{part['partition']}: "
                + (f"leader {leader}" if not offline else "offline, no live leader")
                + f", leader epoch {part['leader_epoch']}, ISR {list(part['isr'])}, replicas {list(part['replicas'])}"
            )
            rows.append(
                PartitionRow(
                    topic=name,
                    partition=int(part["partition"]),
                    replicas=tuple(int(r) for r in part["replicas"]),
                    leader=None if leader < 0 else leader,
                    leader_epoch=int(part["leader_epoch"]),
                    isr=tuple(int(r) for r in part["isr"]),
                    offline=offline,
                    under_replicated=bool(part["under_replicated"]),
                    cells=tuple(_cell(name, part, b, ordered, config) for b in brokers),
                    title=summary + (". " + tip("offline", config) if offline else ""),
                )
            )
        topics.append(
            TopicBlock(
                name=name,
                internal=name.startswith("__"),
                replication_factor=len(rows[0].replicas) if rows else 0,
                partitions=tuple(rows),
                offline=sum(r.offline for r in rows),
                under_replicated=sum(r.under_replicated for r in rows),
            )
        )
    controller = snapshot.get("controller")
    return ClusterMap(
        brokers=brokers,
        topics=tuple(topics),
        controller=None if controller is None else int(controller),
        controller_epoch=int(snapshot.get("controller_epoch") or 0),
        tips=tuple(
            (k, tip(k, config))
            for k in (
                "leader",
                "follower",
                "in_isr",
                "out_of_isr",
                "offline",
                "controller",
                "session",
                "not_hosted",
            )
        ),
    )
