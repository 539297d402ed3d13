"""The cluster map: brokers as columns, partitions as rows, one cell per replica.

Each broker column carries its state, its ZooKeeper session, whether it is the
controller, and the fault controls that apply to it now (a control that does not
apply says why). Each cell says, in words and shape as well as colour, whether the
broker leads or follows the partition, whether it is in the ISR, and which replica
index it is, so the placement rule can be read off the grid: replica j of partition i
goes to the broker at index (i + j) mod n of the brokers in id order (index 0 is the
lowest id, so with brokers 1, 2, 3 index 0 is broker 1). The legend works one example
through with the lab's own brokers and topic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lab.visuals.glossary import effective_value, governed_by, tip

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
    session: str  # the broker's own view of its session; lab.visuals.sessions says ZooKeeper's
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
    under_min_isr: bool  # online, with fewer in sync than min.insync.replicas: acks=all writes fail
    min_isr_title: str
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
    min_insync_replicas: int  # the topic's override, else the broker's
    min_isr_override: bool
    min_isr_tip: str

    @property
    def under_min_isr(self) -> int:
        return sum(p.under_min_isr for p in self.partitions)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementExample:
    """One replica worked through the rule: ``topic``-``partition``'s replica ``replica`` is at
    index (partition + replica) mod n = ``index`` of the brokers in id order, so on ``broker``."""

    topic: str  # "" when the lab has no topic placed by the rule: an example with its brokers only
    partition: int
    replica: int
    brokers: int  # n
    index: int
    broker: int

    @property
    def text(self) -> str:
        what = (
            f"{self.topic}-{self.partition}'s replica {self.replica}"
            if self.topic
            else f"replica {self.replica} of partition {self.partition}"
        )
        return f"{what}: ({self.partition} + {self.replica}) mod {self.brokers} = {self.index}, so broker {self.broker}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterMap:
    brokers: tuple[BrokerColumn, ...]
    topics: tuple[TopicBlock, ...]
    controller: int | None
    controller_epoch: int
    tips: tuple[tuple[str, str], ...]
    broker_order: tuple[int, ...]  # broker ids in id order: the placement rule's indexes
    placement_example: PlacementExample | None
    placement_tip: str

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)

    @property
    def user_topics(self) -> tuple[TopicBlock, ...]:
        return tuple(t for t in self.topics if not t.internal)

    @property
    def internal_topics(self) -> tuple[TopicBlock, ...]:
        return tuple(t for t in self.topics if t.internal)


def under_min_isr(part: Mapping[str, Any], min_isr: int) -> bool:
    """An online partition whose ISR is smaller than min.insync.replicas: acks=all writes fail."""
    return not part.get("offline") and int(part["leader"]) >= 0 and len(part["isr"]) < min_isr


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
        broker_epoch=broker.get("broker_epoch"),
        isolated_from=tuple(broker.get("isolated_from") or ()),
        slow_ms=int(broker.get("slow_ms") or 0),
        actions=broker_actions(broker),
    )


def _placement_note(partition: int, j: int, broker: int, ordered: list[int]) -> str:
    n = len(ordered)
    k = (partition + j) % n
    if ordered[k] == broker:
        return (
            f"replica {j}: ({partition} + {j}) mod {n} = {k}, index {k} of the brokers in id order "
            f"{ordered}, so broker {broker}"
        )
    return f"replica {j}: placed on broker {broker} by a reassignment, not by the (i + j) mod n rule"


PLACEMENT_TIP = (
    "How a topic's replicas were placed when it was created: replica j of partition i goes to the broker "
    "at index (i + j) mod n, n brokers counted from index 0 in id order; replica 0 is the preferred leader. "
    "Kafka itself starts at a random index and puts the followers a random shift away (the shift grows every "
    "n partitions), to spread replicas evenly; the lab starts at index 0 with no shift so the rule reads off "
    "the grid. A reassignment may move replicas elsewhere."
)


def placement_example(topics: list[TopicBlock], ordered: list[int]) -> PlacementExample | None:
    """A replica of one of the lab's own topics that the rule placed, preferring one where the index
    wraps around (i + j >= n: where "mod n" and counting from 0 matter), then one with i and j above 0."""
    n = len(ordered)
    if n == 0:
        return None
    found: list[PlacementExample] = []
    for topic in topics:
        if topic.internal:
            continue
        for row in topic.partitions:
            for j, broker in enumerate(row.replicas):
                k = (row.partition + j) % n
                if ordered[k] == broker:
                    found.append(
                        PlacementExample(
                            topic=topic.name,
                            partition=row.partition,
                            replica=j,
                            brokers=n,
                            index=k,
                            broker=broker,
                        )
                    )
    if found:
        return max(found, key=lambda e: (e.partition + e.replica >= n, e.partition > 0 and e.replica > 0))
    # No topic placed by the rule yet: the lab's own brokers, partition n - 1's replica 1.
    i, j = n - 1, min(1, n - 1)
    k = (i + j) % n
    return PlacementExample(topic="", partition=i, replica=j, brokers=n, index=k, broker=ordered[k])


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
        overrides: Mapping[str, str] = snapshot["topics"][name].get("config") or {}
        min_isr = int(effective_value("min.insync.replicas", config, overrides))
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
                    under_min_isr=under_min_isr(part, min_isr),
                    min_isr_title=f"ISR {list(part['isr'])}: {len(part['isr'])} in sync, "
                    f"min.insync.replicas {min_isr}. " + tip("under_min_isr", config, overrides),
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
                min_insync_replicas=min_isr,
                min_isr_override="min.insync.replicas" in overrides,
                min_isr_tip=governed_by("min.insync.replicas", config, overrides),
            )
        )
    controller = snapshot.get("controller")
    return ClusterMap(
        brokers=brokers,
        topics=tuple(topics),
        controller=None if controller is None else int(controller),
        controller_epoch=int(snapshot.get("controller_epoch") or 0),
        broker_order=tuple(ordered),
        placement_example=placement_example(topics, ordered),
        placement_tip=PLACEMENT_TIP,
        tips=tuple(
            (k, tip(k, config))
            for k in (
                "leader",
                "follower",
                "in_isr",
                "out_of_isr",
                "offline",
                "under_min_isr",
                "controller",
                "session",
                "not_hosted",
            )
        ),
    )
