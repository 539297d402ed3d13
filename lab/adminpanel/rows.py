"""What the panel's tables show, from a cluster snapshot (pure: no Django, no engine calls).

Under-replicated, offline and the reassignment under way come from the snapshot as the
controller and the leaders see them; a replica's progress is its log end offset against
the leader's. Under min ISR compares a partition's ISR with its topic's effective
min.insync.replicas (the topic's override, else the broker's): acks=all writes fail there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lab.engine.config import TOPIC_KEYS, BrokerConfig
from lab.visuals.clock import clock_label

INTERNAL_PREFIX = "__"


def is_internal(topic: str) -> bool:
    return topic.startswith(INTERNAL_PREFIX)


def time_label(ms: int | None) -> str:
    """Virtual time as the lab's clock shows it (minutes:seconds.milliseconds), "—" for none."""
    if ms is None or ms < 0:
        return "—"
    return clock_label(ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRow:
    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    reassigning: int
    overrides: int
    internal: bool
    min_insync_replicas: int  # the topic's override, else the broker's
    min_isr_override: bool
    under_min_isr: int  # partitions whose ISR is smaller: acks=all writes to them fail


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaRow:
    broker: int
    leader: bool
    in_isr: bool
    online: bool
    log_end_offset: int | None
    behind: int | None  # records behind the leader's log end
    adding: bool  # a reassignment is bringing it in
    removing: bool  # a reassignment will remove it

    @property
    def progress(self) -> int:
        """Percent of the leader's log this replica holds (100 when it has caught up)."""
        if self.log_end_offset is None or self.behind is None:
            return 0
        total = self.log_end_offset + self.behind
        return 100 if total <= 0 else int(100 * self.log_end_offset / total)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRow:
    partition: int
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    offline: bool
    under_replicated: bool
    log_start_offset: int | None
    high_watermark: int | None
    log_end_offset: int | None
    replica_rows: tuple[ReplicaRow, ...]
    target: tuple[int, ...] | None  # a reassignment under way: the replicas it moves to
    min_insync_replicas: int = 1  # the topic's effective value

    @property
    def under_min_isr(self) -> bool:
        """Online, with fewer replicas in sync than min.insync.replicas: acks=all writes fail."""
        return not self.offline and self.leader >= 0 and len(self.isr) < self.min_insync_replicas

    @property
    def preferred(self) -> int:
        return self.replicas[0] if self.replicas else -1

    @property
    def preferred_leads(self) -> bool:
        return self.leader == self.preferred

    @property
    def election_block(self) -> str:
        """Why a preferred-leader election would not change this partition ("" if it would)."""
        if self.preferred_leads:
            return f"Broker {self.preferred}, the preferred replica, already leads."
        if self.preferred not in self.isr:
            return f"Broker {self.preferred}, the preferred replica, is not in the ISR."
        return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRow:
    name: str
    doc: str
    kind: str
    choices: tuple[str, ...]
    override: str  # "" when the topic has none
    lab_default: str  # what the topic gets without an override in this lab (the broker's value)
    kafka_default: str

    @property
    def effective(self) -> str:
        return self.override or self.lab_default

    @property
    def lab_differs(self) -> bool:
        return self.lab_default != self.kafka_default

    @property
    def options(self) -> tuple[str, ...]:
        """The values a select offers (empty: a free text input)."""
        if self.kind == "bool":
            return ("true", "false")
        if self.kind == "list" and self.choices:
            return (*self.choices, ",".join(sorted(self.choices)))
        return self.choices


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicDetail:
    name: str
    partitions: tuple[PartitionRow, ...]
    overrides: Mapping[str, str]
    brokers: tuple[int, ...]
    live_brokers: tuple[int, ...]
    min_insync_replicas: int = 1  # the topic's override, else the broker's

    @property
    def internal(self) -> bool:
        return is_internal(self.name)

    @property
    def min_isr_override(self) -> bool:
        return "min.insync.replicas" in self.overrides

    @property
    def under_min_isr(self) -> int:
        return sum(p.under_min_isr for p in self.partitions)

    @property
    def replication_factor(self) -> int:
        settled = [len(p.target or p.replicas) for p in self.partitions]
        return max(settled, default=0)

    @property
    def reassigning(self) -> tuple[PartitionRow, ...]:
        return tuple(p for p in self.partitions if p.target is not None)

    @property
    def under_replicated(self) -> int:
        return sum(p.under_replicated for p in self.partitions)

    @property
    def offline(self) -> int:
        return sum(p.offline for p in self.partitions)

    @property
    def current(self) -> dict[int, tuple[int, ...]]:
        """Each partition's replicas as a plan starts from (a move under way counts as done)."""
        return {p.partition: p.target or p.replicas for p in self.partitions}

    @property
    def leaders(self) -> dict[int, int]:
        return {p.partition: p.leader for p in self.partitions}


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def min_insync_replicas(overrides: Mapping[str, str], broker_config: Mapping[str, str]) -> int:
    """The topic's effective min.insync.replicas: its override, else the broker's value."""
    if "min.insync.replicas" in overrides:
        return int(overrides["min.insync.replicas"])
    return int(BrokerConfig.of(broker_config).topic_default("min.insync.replicas"))


def partition_row(part: Mapping[str, Any], target: list[int] | None, min_isr: int = 1) -> PartitionRow:
    replicas = tuple(int(r) for r in part["replicas"])
    leader = int(part["leader"])
    isr = tuple(int(r) for r in part["isr"])
    logs: Mapping[str, Any] = part.get("logs", {})
    lead = logs.get(str(leader)) if leader >= 0 else None
    lead_leo = _int(lead["log_end_offset"]) if lead else None
    rows = []
    for r in replicas:
        log = logs.get(str(r))
        leo = _int(log["log_end_offset"]) if log else None
        rows.append(
            ReplicaRow(
                broker=r,
                leader=r == leader,
                in_isr=r in isr,
                online=bool(log and log.get("online")),
                log_end_offset=leo,
                behind=None if leo is None or lead_leo is None else max(0, lead_leo - leo),
                adding=target is not None and r in target and r not in isr,
                removing=target is not None and r not in target,
            )
        )
    return PartitionRow(
        partition=int(part["partition"]),
        replicas=replicas,
        leader=leader,
        leader_epoch=int(part["leader_epoch"]),
        isr=isr,
        offline=bool(part["offline"]),
        under_replicated=bool(part["under_replicated"]),
        log_start_offset=_int(lead["log_start_offset"]) if lead else None,
        high_watermark=_int(lead["high_watermark"]) if lead else None,
        log_end_offset=lead_leo,
        replica_rows=tuple(rows),
        target=None if target is None else tuple(int(r) for r in target),
        min_insync_replicas=min_isr,
    )


def _live(snapshot: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(
        int(b["id"]) for b in snapshot.get("brokers", ()) if b["state"] not in ("killed", "stopped", "paused")
    )


def topic_rows(
    snapshot: Mapping[str, Any], *, internal: bool = False, broker_config: Mapping[str, str] | None = None
) -> list[TopicRow]:
    """One row a topic; ``broker_config`` (the lab's) gives min.insync.replicas where a topic sets none."""
    rows = []
    for name, topic in sorted(snapshot.get("topics", {}).items()):
        if is_internal(name) and not internal:
            continue
        parts = topic["partitions"]
        moving: Mapping[str, list[int]] = topic.get("reassigning", {})
        sizes = [len(moving.get(str(p["partition"]), p["replicas"])) for p in parts]
        overrides: Mapping[str, str] = topic.get("config", {})
        min_isr = min_insync_replicas(overrides, broker_config or {})
        rows.append(
            TopicRow(
                name=name,
                partitions=len(parts),
                replication_factor=max(sizes, default=0),
                under_replicated=sum(bool(p["under_replicated"]) for p in parts),
                offline=sum(bool(p["offline"]) for p in parts),
                reassigning=len(moving),
                overrides=len(overrides),
                internal=is_internal(name),
                min_insync_replicas=min_isr,
                min_isr_override="min.insync.replicas" in overrides,
                under_min_isr=sum(partition_row(p, None, min_isr).under_min_isr for p in parts),
            )
        )
    return rows


def hidden_internal(snapshot: Mapping[str, Any]) -> int:
    return sum(is_internal(name) for name in snapshot.get("topics", {}))


def topic_detail(
    snapshot: Mapping[str, Any],
    name: str,
    overrides: Mapping[str, str] | None = None,
    broker_config: Mapping[str, str] | None = None,
) -> TopicDetail | None:
    """One topic's partitions; its config ``overrides`` as given (ZooKeeper's, fresher) or the snapshot's;
    ``broker_config`` (the lab's) gives min.insync.replicas where the topic sets none."""
    topic = snapshot.get("topics", {}).get(name)
    if topic is None:
        return None
    moving: Mapping[str, list[int]] = topic.get("reassigning", {})
    configs = dict(topic.get("config", {}) if overrides is None else overrides)
    min_isr = min_insync_replicas(configs, broker_config or {})
    return TopicDetail(
        name=name,
        partitions=tuple(
            partition_row(p, moving.get(str(p["partition"])), min_isr) for p in topic["partitions"]
        ),
        overrides=configs,
        brokers=tuple(int(b["id"]) for b in snapshot.get("brokers", ())),
        live_brokers=_live(snapshot),
        min_insync_replicas=min_isr,
    )


def config_rows(overrides: Mapping[str, str], broker_config: Mapping[str, str]) -> list[ConfigRow]:
    """Every topic config the engine honours: the override, the lab's value without one, Kafka's default."""
    broker = BrokerConfig.of(broker_config)
    return [
        ConfigRow(
            name=key.name,
            doc=key.doc,
            kind=key.kind,
            choices=key.choices,
            override=overrides.get(key.name, ""),
            lab_default=broker.topic_default(key.name),
            kafka_default=key.kafka_default,
        )
        for key in TOPIC_KEYS.values()
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    end: int | None  # the partition's high watermark: what a consumer can read up to
    lag: int | None
    owner: str  # the member's client id, "" if none


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberRow:
    client_id: str
    member_id: str
    assignment: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupRow:
    group_id: str
    state: str
    generation: int
    assignor: str
    coordinator: int | None
    members: tuple[MemberRow, ...]
    partitions: tuple[LagRow, ...]
    total_lag: int

    @property
    def active(self) -> bool:
        return bool(self.members)

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions}))


def _high_watermarks(snapshot: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, topic in snapshot.get("topics", {}).items():
        for part in topic["partitions"]:
            lead = part.get("logs", {}).get(str(part["leader"]))
            if lead is not None:
                out[f"{name}/{part['partition']}"] = int(lead["high_watermark"])
    return out


def group_rows(snapshot: Mapping[str, Any]) -> list[GroupRow]:
    hws = _high_watermarks(snapshot)
    rows = []
    for group_id, group in sorted(snapshot.get("groups", {}).items()):
        owners: dict[str, str] = {}
        members = []
        for m in group.get("members", ()):
            assigned = tuple(f"{t}-{p}" for t, p in m.get("assignment", ()))
            for t, p in m.get("assignment", ()):
                owners[f"{t}/{p}"] = str(m.get("client_id") or m["member_id"])
            members.append(
                MemberRow(
                    client_id=str(m.get("client_id") or ""),
                    member_id=str(m["member_id"]),
                    assignment=assigned,
                )
            )
        committed: Mapping[str, int] = group.get("committed", {})
        lag: Mapping[str, int] = group.get("lag", {})
        keys = sorted(set(committed) | set(owners) | set(lag), key=_tp_order)
        partitions = []
        for key in keys:
            topic, _, part = key.rpartition("/")
            partitions.append(
                LagRow(
                    topic=topic,
                    partition=int(part),
                    committed=committed.get(key),
                    end=hws.get(key),
                    lag=lag.get(key),
                    owner=owners.get(key, ""),
                )
            )
        rows.append(
            GroupRow(
                group_id=group_id,
                state=str(group["state"]),
                generation=int(group["generation"]),
                assignor=str(group.get("assignor") or ""),
                coordinator=group.get("coordinator"),
                members=tuple(members),
                partitions=tuple(partitions),
                total_lag=int(group.get("total_lag", sum(lag.values()))),
            )
        )
    return rows


def _tp_order(key: str) -> tuple[str, int]:
    topic, _, part = key.rpartition("/")
    return topic, int(part)
