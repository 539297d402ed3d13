"""The group coordinator and ``__consumer_offsets``, as Kafka's classic protocol runs them.

Every broker runs a coordinator; it serves the groups whose offsets partition
(``abs(Java hashCode(group)) % offsets.topic.num.partitions``) it leads. A
group moves Empty -> PreparingRebalance -> CompletingRebalance -> Stable:
members join (JoinGroup), the coordinator waits for everyone it knows (or the
rebalance timeout), picks a leader member, the leader computes the assignment
and hands it in (SyncGroup), and everyone gets their share. Heartbeats keep a
member in; silence for session.timeout.ms takes it out and starts a rebalance.

Commits and group metadata are records in ``__consumer_offsets`` (compacted,
replicated, written with acks=all); a broker that becomes leader of one of its
partitions loads the groups from that log. Keys and values are JSON here
(Kafka uses a binary schema) so a student can read them in the log.
"""

from __future__ import annotations

import base64
import enum
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.engine import consumer_protocol
from lab.engine.assignment import EAGER
from lab.engine.control_records import marker_of
from lab.engine.errors import KafkaError
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.internal_topics import maybe_create_internal_topic
from lab.engine.network import Envelope
from lab.engine.protocol import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorResult,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ProducePartitionResult,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from lab.engine.records import NO_SEQUENCE, build_batch, decode_records, iter_batches
from lab.engine.scheduler import Scheduler, Timer

if TYPE_CHECKING:
    from lab.engine.broker import Broker

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "1048576"}
OFFSET_COMMIT_TIMEOUT_MS = 5000  # offsets.commit.timeout.ms


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, in 32-bit two's complement."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_group(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


Reply = Callable[[Any], None]


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    client_host: str = ""
    join_reply: Reply | None = None
    sync_reply: Reply | None = None
    session_timer: Timer | None = None
    session_deadline_ms: int = 0  # the last request from it plus session.timeout.ms

    @property
    def name(self) -> str:
        """How the journal names it: the member id, which starts with the client id (Kafka's "<client.id>-<uuid>")."""
        return self.member_id

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""


@dataclass(slots=True, eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str = ""
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending: set[str] = field(default_factory=set)  # ids handed out with MEMBER_ID_REQUIRED
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    join_timer: Timer | None = None
    join_deadline_ms: int = 0
    new_member_added: bool = False
    reason: str = ""
    previous: dict[str, list[TopicPartition]] = field(
        default_factory=dict
    )  # assignment of the last generation
    # Generations abandoned here, not yet in the history: they go in just before the next generation
    # this coordinator stores, so a coordinator that lost the group meanwhile records none.
    abandoned: list[Abandoned] = field(default_factory=list)
    joined: dict[str, str] = field(default_factory=dict)  # the generation's members (id -> client id)
    # Offsets committed in open transactions, by producer id: they become the group's when the
    # transaction's commit marker reaches __consumer_offsets, and are dropped on its abort.
    pending_txn_offsets: dict[int, dict[TopicPartition, int]] = field(default_factory=dict)

    def all_joined(self) -> bool:
        return all(m.join_reply is not None for m in self.members.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class Abandoned:
    """A generation whose members never took their partitions: a new rebalance began first."""

    generation: int
    protocol: str
    reason: str  # why the generation began
    why: str  # why it was abandoned
    clients: Mapping[str, str]  # its members: member id -> client id
    at_ms: int


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """A member's partitions, from the consumer protocol's assignment bytes (the lab's consumers and
    real Kafka clients write the same format); nothing for bytes that are not one."""
    try:
        return list(consumer_protocol.decode_assignment(data).partitions)
    except consumer_protocol.MalformedProtocolData:
        return []


class GroupCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.groups: dict[str, Group] = {}
        self.partitions: set[int] = set()  # offsets partitions this broker leads and has loaded
        self._creating_topic = False

    # ------------------------------------------------------------------ plumbing

    @property
    def now_ms(self) -> int:
        return self.broker.now_ms

    @property
    def num_partitions(self) -> int:
        return self.broker.config.int("offsets.topic.num.partitions")

    def journal(self, kind: str, text: str, group: str, **data: Any) -> None:
        self.broker.ctx.journal.record(kind, text, broker=self.broker.id, group=group, **data)

    def handler(self, body: Any) -> Callable[[Envelope], None] | None:
        handlers: dict[type, Callable[[Envelope], None]] = {
            FindCoordinatorRequest: self._on_find_coordinator,
            JoinGroupRequest: self._on_join,
            SyncGroupRequest: self._on_sync,
            HeartbeatRequest: self._on_heartbeat,
            LeaveGroupRequest: self._on_leave,
            OffsetCommitRequest: self._on_commit,
            OffsetFetchRequest: self._on_fetch_offsets,
            ListGroupsRequest: self._on_list_groups,
            DescribeGroupsRequest: self._on_describe_groups,
            DeleteGroupsRequest: self._on_delete_groups,
            TxnOffsetCommitRequest: self._on_txn_offset_commit,
        }
        return handlers.get(type(body))

    def _reply(self, env: Envelope) -> Reply:
        return lambda body: self.broker.endpoint.respond(env, body)

    def _member(self, group_id: str, member_id: str, generation: int) -> tuple[Group, Member] | KafkaError:
        """The group and member a request names, or the error that fences it (Kafka's checks, in Kafka's order)."""
        from lab.engine import errors

        not_here = self._not_here(group_id)
        if not_here is not None:
            return not_here
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return errors.UnknownMemberId(f"group {group_id} does not know member {member_id}")
        if generation != group.generation:
            return errors.IllegalGeneration(
                f"generation {generation} is not group {group_id}'s {group.generation}"
            )
        return group, member

    def _not_here(self, group_id: str) -> KafkaError | None:
        from lab.engine.errors import InvalidGroupId, NotCoordinator

        if not group_id:
            return InvalidGroupId("the group id is empty")
        if partition_for_group(group_id, self.num_partitions) not in self.partitions:
            return NotCoordinator(f"broker {self.broker.id} is not the coordinator of group {group_id}")
        return None

    # ------------------------------------------------------------------ leadership of __consumer_offsets

    def on_leadership(self, tp: TopicPartition, *, leader: bool) -> None:
        if tp.topic != OFFSETS_TOPIC:
            return
        if leader and tp.partition not in self.partitions:
            self._load(tp)
        elif not leader and tp.partition in self.partitions:
            self.partitions.discard(tp.partition)
            gone = [g for g in self.groups if partition_for_group(g, self.num_partitions) == tp.partition]
            for group_id in gone:
                self._unload(self.groups.pop(group_id))
            if gone:
                self.journal(
                    "coordinator_moved",
                    f"broker {self.broker.id} no longer coordinates {', '.join(sorted(gone))}: it stopped leading {tp}",
                    gone[0],
                )

    def _load(self, tp: TopicPartition) -> None:
        """Rebuild this partition's groups from its log: the newest record per key wins."""
        partition = self.broker.partitions[tp]
        log = partition.log
        offsets: dict[str, dict[TopicPartition, int]] = {}
        metadata: dict[str, dict[str, Any]] = {}
        # Transactional offset commits whose marker is not read yet: producer id -> group -> offsets.
        pending: dict[int, dict[str, dict[TopicPartition, int]]] = {}
        position = log.log_start_offset
        while position < log.log_end_offset:
            data = log.read(position, 1 << 20)
            if not data.records:
                break
            for pos, header in iter_batches(data.records):
                batch = data.records[pos : pos + header.size_in_bytes]
                if header.is_control:
                    marker = marker_of(header, batch)
                    done = pending.pop(header.producer_id, {})
                    if marker is not None and marker.commit:
                        for group_id, committed in done.items():
                            offsets.setdefault(group_id, {}).update(committed)
                    continue
                for record in decode_records(batch):
                    if record.offset < position or record.key is None:
                        continue
                    key = json.loads(record.key)
                    value = None if record.value is None else json.loads(record.value)
                    group_id = key["group"]
                    if "topic" in key:
                        ktp = TopicPartition(key["topic"], int(key["partition"]))
                        if header.is_transactional:
                            if value is not None:
                                by_group = pending.setdefault(header.producer_id, {})
                                by_group.setdefault(group_id, {})[ktp] = int(value["offset"])
                            continue
                        group_offsets = offsets.setdefault(group_id, {})
                        if value is None:
                            group_offsets.pop(ktp, None)
                        else:
                            group_offsets[ktp] = int(value["offset"])
                    elif value is None:
                        metadata.pop(group_id, None)
                    else:
                        metadata[group_id] = value
            position = data.next_offset
        for by_group in pending.values():
            for group_id in by_group:
                offsets.setdefault(group_id, {})
        loaded: list[str] = []
        for group_id in sorted(set(offsets) | set(metadata)):
            if partition_for_group(group_id, self.num_partitions) != tp.partition:
                continue
            group = Group(group_id, offsets=offsets.get(group_id, {}))
            for producer_id, by_group in pending.items():
                if group_id in by_group:
                    group.pending_txn_offsets[producer_id] = by_group[group_id]
            meta = metadata.get(group_id)
            if meta is not None:
                group.generation = int(meta["generation"])
                group.protocol_type = meta.get("protocol_type", "")
                group.protocol = meta.get("protocol")
                group.leader = meta.get("leader")
                for m in meta.get("members", []):
                    member = Member(
                        member_id=m["member_id"],
                        group_instance_id=m.get("group_instance_id"),
                        client_id=m.get("client_id", ""),
                        session_timeout_ms=int(m["session_timeout_ms"]),
                        rebalance_timeout_ms=int(m["rebalance_timeout_ms"]),
                        protocols=((group.protocol or "", _unb64(m.get("subscription", ""))),),
                        assignment=_unb64(m.get("assignment", "")),
                    )
                    group.members[member.member_id] = member
                    if member.group_instance_id:
                        group.static[member.group_instance_id] = member.member_id
                    self._schedule_session(group, member)
                group.state = GroupState.STABLE if group.members else GroupState.EMPTY
                group.previous = {mid: decode_assignment(m.assignment) for mid, m in group.members.items()}
            self.groups[group_id] = group
            loaded.append(group_id)
        self.partitions.add(tp.partition)
        if loaded:
            self.journal(
                "coordinator_loaded",
                f"broker {self.broker.id} became coordinator of {', '.join(loaded)}: it read their offsets and "
                f"membership back from {tp} ({log.log_end_offset - log.log_start_offset} records)",
                loaded[0],
            )

    # ------------------------------------------------------------------ FindCoordinator (any broker)

    def _on_find_coordinator(self, env: Envelope) -> None:
        req: FindCoordinatorRequest = env.body
        reply = self._reply(env)
        from lab.engine.errors import CoordinatorNotAvailable, InvalidGroupId

        if not req.key:
            err: KafkaError = InvalidGroupId("the group id is empty")
            reply(FindCoordinatorResponse(error=err.name, message=err.message))
            return
        partition = partition_for_group(req.key, self.num_partitions)
        info = self.broker.metadata.partitions.get(TopicPartition(OFFSETS_TOPIC, partition))
        if info is None:
            self._maybe_create_offsets_topic()
            err = CoordinatorNotAvailable(f"{OFFSETS_TOPIC} is being created")
            reply(FindCoordinatorResponse(error=err.name, message=err.message))
            return
        if info.leader < 0 or info.leader not in self.broker.metadata.live_brokers:
            err = CoordinatorNotAvailable(f"{OFFSETS_TOPIC}-{partition} has no leader")
            reply(FindCoordinatorResponse(error=err.name, message=err.message))
            return
        reply(FindCoordinatorResponse(node_id=info.leader))

    def _maybe_create_offsets_topic(self) -> None:
        if self._creating_topic or self.broker.session is None:
            return
        self._creating_topic = True
        self.broker.spawn(self._create_offsets_topic(), f"create {OFFSETS_TOPIC}")

    async def _create_offsets_topic(self) -> None:
        try:
            await maybe_create_internal_topic(
                self.broker,
                OFFSETS_TOPIC,
                self.num_partitions,
                self.broker.config.int("offsets.topic.replication.factor"),
                lambda rf: OFFSETS_TOPIC_CONFIG,
                lambda rf: (
                    f"{self.num_partitions} partitions (offsets.topic.num.partitions; Kafka's default is 50), "
                    f"replication factor {rf}, compacted"
                ),
            )
        finally:
            self._creating_topic = False

    # ------------------------------------------------------------------ JoinGroup

    def _on_join(self, env: Envelope) -> None:
        from lab.engine import errors

        req: JoinGroupRequest = env.body
        reply = self._reply(env)

        def fail(error: KafkaError, member_id: str = "") -> None:
            reply(JoinGroupResponse(error=error.name, message=error.message, member_id=member_id))

        not_here = self._not_here(req.group_id)
        if not_here is not None:
            fail(not_here)
            return
        low = self.broker.config.int("group.min.session.timeout.ms")
        high = self.broker.config.int("group.max.session.timeout.ms")
        if not low <= req.session_timeout_ms <= high:
            fail(
                errors.InvalidSessionTimeout(
                    f"session.timeout.ms={req.session_timeout_ms} is outside the broker's range [{low}, {high}] "
                    "(group.min.session.timeout.ms, group.max.session.timeout.ms)"
                )
            )
            return
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_id:
                fail(errors.UnknownMemberId(f"group {req.group_id} does not know member {req.member_id}"))
                return
            group = Group(req.group_id)
            self.groups[req.group_id] = group
        if group.members and not self._protocols_compatible(group, req):
            fail(
                errors.InconsistentGroupProtocol(
                    f"{req.client_id} offers {[n for n, _ in req.protocols]}, which no assignor of group "
                    f"{req.group_id}'s members matches"
                )
            )
            return
        if not req.member_id:
            member_id = f"{req.client_id}-{self.broker.ctx.scheduler.rng.getrandbits(48):012x}"
            if req.group_instance_id:
                old_id = group.static.get(req.group_instance_id)
                if old_id is not None and old_id in group.members:
                    self._static_rejoin(group, old_id, member_id, req, reply)
                    return
                self._add_member(
                    group,
                    member_id,
                    req,
                    reply,
                    reason=f"static member {req.group_instance_id} joined as {member_id}",
                )
                return
            # KIP-394: a new member first learns its id, then joins with it.
            group.pending.add(member_id)
            reply(
                JoinGroupResponse(
                    error=errors.MemberIdRequired.name,
                    message="join again with this member id",
                    member_id=member_id,
                )
            )
            return
        if req.member_id in group.pending:
            group.pending.discard(req.member_id)
            self._add_member(group, req.member_id, req, reply, reason=f"{req.member_id} joined")
            return
        member = group.members.get(req.member_id)
        if member is None:
            fail(
                errors.UnknownMemberId(f"group {req.group_id} does not know member {req.member_id}"),
                req.member_id,
            )
            return
        if req.group_instance_id and group.static.get(req.group_instance_id) != req.member_id:
            fail(
                errors.FencedInstanceId(f"instance {req.group_instance_id} has a newer member id"),
                req.member_id,
            )
            return
        changed = member.protocols != req.protocols
        member.protocols = req.protocols
        member.join_reply = reply
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self._schedule_session(group, member)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        elif group.state is GroupState.STABLE and not changed and member.member_id != group.leader:
            # A follower rejoining with nothing new: give it the current generation.
            member.join_reply = None
            reply(self._join_response(group, member))
        else:
            why = req.reason or (
                f"{member.name}'s subscription changed" if changed else f"{member.name} rejoined"
            )
            self._prepare_rebalance(group, why)

    def _protocols_compatible(self, group: Group, req: JoinGroupRequest) -> bool:
        offered = {name for name, _ in req.protocols}
        common = set.intersection(*({n for n, _ in m.protocols} for m in group.members.values()))
        return bool(offered & common) and (
            not group.protocol_type or group.protocol_type == req.protocol_type
        )

    def _add_member(
        self, group: Group, member_id: str, req: JoinGroupRequest, reply: Reply, *, reason: str
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            protocols=req.protocols,
            client_host=req.client_host,
            join_reply=reply,
        )
        group.members[member_id] = member
        group.protocol_type = req.protocol_type
        if req.group_instance_id:
            group.static[req.group_instance_id] = member_id
        group.new_member_added = True
        self._schedule_session(group, member)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, reason)

    def _static_rejoin(
        self, group: Group, old_id: str, new_id: str, req: JoinGroupRequest, reply: Reply
    ) -> None:
        """KIP-345: a static member back within its session timeout takes its old place, without a rebalance."""
        member = group.members.pop(old_id)
        Scheduler.cancel(member.session_timer)
        if member.join_reply is not None or member.sync_reply is not None:
            from lab.engine.errors import FencedInstanceId

            fenced = FencedInstanceId(f"a newer instance of {req.group_instance_id} joined")
            if member.join_reply is not None:
                member.join_reply(JoinGroupResponse(error=fenced.name, message=fenced.message))
            if member.sync_reply is not None:
                member.sync_reply(SyncGroupResponse(error=fenced.name, message=fenced.message))
            member.join_reply = member.sync_reply = None
        member.member_id = new_id
        changed = member.protocols != req.protocols
        member.protocols = req.protocols
        group.members[new_id] = member
        group.static[req.group_instance_id or ""] = new_id
        if group.leader == old_id:
            group.leader = new_id
        if group.previous.get(old_id) is not None:
            group.previous[new_id] = group.previous.pop(old_id)
        self._schedule_session(group, member)
        if group.state is GroupState.STABLE and not changed:
            self.journal(
                "static_rejoin",
                f"static member {req.group_instance_id} of group {group.group_id} came back within its session timeout: "
                f"it keeps its partitions {_tps(decode_assignment(member.assignment))}, no rebalance",
                group.group_id,
            )
            reply(self._join_response(group, member))
            return
        member.join_reply = reply
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined as {new_id}")

    def _join_response(self, group: Group, member: Member) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
        if member.member_id == group.leader:
            members = tuple(
                JoinGroupMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata(group.protocol or ""),
                )
                for m in group.members.values()
            )
        return JoinGroupResponse(
            generation_id=group.generation,
            protocol_name=group.protocol or "",
            leader=group.leader or "",
            member_id=member.member_id,
            members=members,
        )

    # ------------------------------------------------------------------ rebalancing

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        from lab.engine.errors import RebalanceInProgress

        if group.state is GroupState.COMPLETING_REBALANCE:
            group.abandoned.append(
                Abandoned(
                    generation=group.generation,
                    protocol=group.protocol or "",
                    reason=group.reason,
                    why=reason,
                    clients=dict(group.joined),
                    at_ms=self.now_ms,
                )
            )
            for member in group.members.values():
                if member.sync_reply is not None:
                    err = RebalanceInProgress(f"group {group.group_id} is rebalancing again")
                    member.sync_reply(SyncGroupResponse(error=err.name, message=err.message))
                    member.sync_reply = None
        initial = group.state is GroupState.EMPTY
        group.state = GroupState.PREPARING_REBALANCE
        group.reason = reason
        Scheduler.cancel(group.join_timer)
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        self.journal(
            "rebalance_started",
            f"group {group.group_id} rebalances (generation {group.generation} -> {group.generation + 1}): {reason}",
            group.group_id,
            generation=group.generation,
        )
        if initial:
            delay = self.broker.config.int("group.initial.rebalance.delay.ms")
            group.new_member_added = False
            group.join_deadline_ms = self.now_ms + timeout
            group.join_timer = self.broker.later(
                delay, self._initial_join_due, group, delay, label="initial rebalance delay"
            )
        else:
            group.join_deadline_ms = self.now_ms + timeout
            group.join_timer = self.broker.later(
                timeout, self._complete_join, group, label="rebalance timeout"
            )
            self._maybe_complete_join(group)

    def _initial_join_due(self, group: Group, delay: int) -> None:
        """group.initial.rebalance.delay.ms: wait again while new members keep arriving (up to the rebalance timeout)."""
        if group.state is not GroupState.PREPARING_REBALANCE or not self._is_current(group):
            return
        if group.new_member_added and self.now_ms + delay <= group.join_deadline_ms:
            group.new_member_added = False
            group.join_timer = self.broker.later(
                delay, self._initial_join_due, group, delay, label="initial rebalance delay"
            )
            return
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.all_joined()
            and not _initial_wait(group, self.now_ms)
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE or self.groups.get(group.group_id) is not group:
            return
        Scheduler.cancel(group.join_timer)
        group.join_timer = None
        for member in [m for m in group.members.values() if m.join_reply is None]:
            self._remove(group, member, f"{member.name} did not rejoin within the rebalance timeout")
        group.generation += 1
        if not group.members:
            group.state = GroupState.EMPTY
            group.protocol = None
            group.leader = None
            before, group.previous = group.previous, {}
            generation = group.generation
            self._store_group(group, then=lambda error: self._empty_stored(group, generation, before, error))
            return
        group.protocol = self._select_protocol(group)
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.joined = {mid: m.client_id for mid, m in group.members.items()}
        group.state = GroupState.COMPLETING_REBALANCE
        for member in group.members.values():
            reply, member.join_reply = member.join_reply, None
            if reply is not None:
                reply(self._join_response(group, member))
            self._schedule_session(group, member)

    def _select_protocol(self, group: Group) -> str:
        members = list(group.members.values())
        common = set.intersection(*({n for n, _ in m.protocols} for m in members))
        votes: dict[str, int] = {}
        for member in members:
            choice = next(n for n, _ in member.protocols if n in common)
            votes[choice] = votes.get(choice, 0) + 1
        leader = group.members.get(group.leader or "") or members[0]
        order = [n for n, _ in leader.protocols if n in common]
        return max(order, key=lambda n: (votes.get(n, 0), -order.index(n)))

    # ------------------------------------------------------------------ SyncGroup

    def _on_sync(self, env: Envelope) -> None:
        from lab.engine import errors

        req: SyncGroupRequest = env.body
        reply = self._reply(env)

        def fail(error: KafkaError) -> None:
            reply(SyncGroupResponse(error=error.name, message=error.message))

        found = self._member(req.group_id, req.member_id, req.generation_id)
        if isinstance(found, KafkaError):
            fail(found)
            return
        group, member = found
        if group.state is GroupState.PREPARING_REBALANCE:
            fail(errors.RebalanceInProgress(f"group {group.group_id} is rebalancing"))
            return
        if group.state is GroupState.STABLE:
            reply(SyncGroupResponse(assignment=member.assignment))
            return
        member.sync_reply = reply
        self._schedule_session(group, member)
        if req.member_id == group.leader:
            assignments = dict(req.assignments)
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            generation = group.generation
            self._store_group(group, then=lambda error: self._sync_stored(group, generation, error))

    def _empty_stored(
        self, group: Group, generation: int, before: dict[str, list[TopicPartition]], error: KafkaError | None
    ) -> None:
        # The history holds the generations the group reached in __consumer_offsets: a coordinator
        # that lost its partition meanwhile (a paused one, say) stored nothing, and its generation
        # is not the group's.
        if error is not None or not self._is_current(group):
            return
        self._journal_abandoned(group)
        self.journal(
            "rebalance",
            f"group {group.group_id} is empty (generation {generation}): no members left; "
            + "; ".join(
                f"{mid} left with nothing (gave up {_tps(tps)})" for mid, tps in sorted(before.items())
            ),
            group.group_id,
            generation=generation,
            revoked={m: [[tp.topic, tp.partition] for tp in tps] for m, tps in before.items()},
            assigned={},
            members=[],
            clients={},
            reason=group.reason,
        )

    def _sync_stored(self, group: Group, generation: int, error: KafkaError | None) -> None:
        if (
            not self._is_current(group)
            or group.generation != generation
            or group.state is not GroupState.COMPLETING_REBALANCE
        ):
            return
        if error is not None:
            for member in group.members.values():
                if member.sync_reply is not None:
                    member.sync_reply(SyncGroupResponse(error=error.name, message=error.message))
                    member.sync_reply = None
            self._prepare_rebalance(group, f"storing the assignment failed: {error.name}")
            return
        group.state = GroupState.STABLE
        assigned = {mid: decode_assignment(m.assignment) for mid, m in group.members.items()}
        self._journal_rebalance(group, assigned)
        group.previous = assigned
        for member in group.members.values():
            if member.sync_reply is not None:
                member.sync_reply(SyncGroupResponse(assignment=member.assignment))
                member.sync_reply = None

    def _journal_abandoned(self, group: Group) -> None:
        for gen in group.abandoned:
            members = sorted(gen.clients)
            self.journal(
                "rebalance",
                f"group {group.group_id} generation {gen.generation} ({gen.protocol}; {gen.reason}) was abandoned at "
                f"{gen.at_ms} ms before its members took their partitions ({gen.why}); members: "
                + ", ".join(members),
                group.group_id,
                generation=gen.generation,
                protocol=gen.protocol,
                revoked={},
                assigned={},
                members=members,
                clients=dict(gen.clients),
                reason=gen.reason,
                abandoned=gen.why,
            )
        group.abandoned.clear()

    def _journal_rebalance(self, group: Group, assigned: dict[str, list[TopicPartition]]) -> None:
        self._journal_abandoned(group)
        before = group.previous
        parts = []
        revoked: dict[str, list[list[Any]]] = {}
        received: dict[str, list[list[Any]]] = {}
        # Eager assignors make every member give up everything before it rejoins; cooperative
        # ones give up only what moves.
        eager = group.protocol in EAGER
        for mid in sorted(set(before) | set(assigned)):
            old = set(before.get(mid, []))
            new = set(assigned.get(mid, []))
            gave = sorted(old) if eager else sorted(old - new)
            got = sorted(new) if eager else sorted(new - old)
            revoked[mid] = [[tp.topic, tp.partition] for tp in gave]
            received[mid] = [[tp.topic, tp.partition] for tp in got]
            if mid not in assigned:
                parts.append(f"{mid} left with nothing (gave up {_tps(gave)})")
                continue
            bits = [f"owns {_tps(sorted(new))}"]
            if got:
                bits.append(f"received {_tps(got)}")
            if gave:
                bits.append(f"gave up {_tps(gave)}")
            parts.append(f"{mid} " + ", ".join(bits))
        how = (
            "eager: everyone gave up everything first"
            if eager
            else "cooperative: only what moves was given up"
        )
        self.journal(
            "rebalance",
            f"group {group.group_id} generation {group.generation} ({group.protocol}, {how}; {group.reason}): "
            + "; ".join(parts),
            group.group_id,
            generation=group.generation,
            protocol=group.protocol,
            revoked=revoked,
            assigned=received,
            members=sorted(assigned),
            clients={mid: group.members[mid].client_id for mid in sorted(assigned) if mid in group.members},
            reason=group.reason,
        )

    # ------------------------------------------------------------------ Heartbeat, LeaveGroup, session expiry

    def _on_heartbeat(self, env: Envelope) -> None:
        from lab.engine import errors

        req: HeartbeatRequest = env.body
        reply = self._reply(env)

        def answer(error: KafkaError | None = None) -> None:
            reply(
                HeartbeatResponse()
                if error is None
                else HeartbeatResponse(error=error.name, message=error.message)
            )

        found = self._member(req.group_id, req.member_id, req.generation_id)
        if isinstance(found, KafkaError):
            answer(found)
            return
        group, member = found
        self._schedule_session(group, member)
        if group.state is GroupState.PREPARING_REBALANCE:
            answer(errors.RebalanceInProgress(f"group {group.group_id} is rebalancing: join again"))
            return
        answer()

    def _on_leave(self, env: Envelope) -> None:
        from lab.engine import errors

        req: LeaveGroupRequest = env.body
        reply = self._reply(env)
        not_here = self._not_here(req.group_id)
        if not_here is not None:
            reply(LeaveGroupResponse(error=not_here.name, message=not_here.message))
            return
        group = self.groups.get(req.group_id)
        member_id = req.member_id
        if group is not None and not member_id and req.group_instance_id:
            member_id = group.static.get(req.group_instance_id, "")
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            err = errors.UnknownMemberId(f"group {req.group_id} does not know member {req.member_id}")
            reply(LeaveGroupResponse(error=err.name, message=err.message))
            return
        reason = f"{member.name} left the group" + (f" ({req.reason})" if req.reason else "")
        self._remove(group, member, reason)
        self._rebalance_after_removal(group, reason)
        reply(LeaveGroupResponse())

    def _schedule_session(self, group: Group, member: Member) -> None:
        member.session_deadline_ms = self.now_ms + member.session_timeout_ms
        Scheduler.cancel(member.session_timer)
        member.session_timer = self.broker.later(
            member.session_timeout_ms, self._maybe_expire_session, group, member, label="session timeout"
        )

    def _maybe_expire_session(self, group: Group, member: Member) -> None:
        # A paused coordinator runs, when it resumes, what it held in the order it came: a heartbeat
        # that arrived before this timer fired has already renewed the session.
        if not self._is_current(group) or group.members.get(member.member_id) is not member:
            return
        if self.now_ms < member.session_deadline_ms:
            return
        if member.join_reply is not None or member.sync_reply is not None:
            # Kafka keeps a member alive while the coordinator holds its JoinGroup or SyncGroup:
            # it is waiting on the group, and the rebalance timeout bounds that wait.
            self._schedule_session(group, member)
            return
        reason = (
            f"{member.name} sent no heartbeat for session.timeout.ms={member.session_timeout_ms}: "
            "the coordinator removed it"
        )
        self._remove(group, member, reason)
        self._rebalance_after_removal(group, reason)

    def _remove(self, group: Group, member: Member, reason: str) -> None:
        Scheduler.cancel(member.session_timer)
        group.members.pop(member.member_id, None)
        if member.group_instance_id and group.static.get(member.group_instance_id) == member.member_id:
            del group.static[member.group_instance_id]
        if group.leader == member.member_id:
            group.leader = next(iter(group.members), None)
        self.journal(
            "member_removed", f"group {group.group_id}: {reason}", group.group_id, member=member.member_id
        )

    def _rebalance_after_removal(self, group: Group, reason: str) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    def _unload(self, group: Group) -> None:
        """Kafka's onGroupUnloaded: the group is Dead here, and members waiting on a JoinGroup or a
        SyncGroup hear NOT_COORDINATOR at once, so they look for the new coordinator."""
        from lab.engine.errors import NotCoordinator

        group.state = GroupState.DEAD
        Scheduler.cancel(group.join_timer)
        err = NotCoordinator(f"broker {self.broker.id} no longer coordinates group {group.group_id}")
        for member in group.members.values():
            Scheduler.cancel(member.session_timer)
            join, sync = member.join_reply, member.sync_reply
            member.join_reply = member.sync_reply = None
            if join is not None:
                join(JoinGroupResponse(error=err.name, message=err.message, member_id=member.member_id))
            if sync is not None:
                sync(SyncGroupResponse(error=err.name, message=err.message))

    def _is_current(self, group: Group) -> bool:
        """False for a group this broker unloaded: a timer or an answer held while it was paused
        may still arrive for it, and must change nothing."""
        return self.groups.get(group.group_id) is group

    # ------------------------------------------------------------------ offsets

    def _on_commit(self, env: Envelope) -> None:
        from lab.engine import errors

        req: OffsetCommitRequest = env.body
        reply = self._reply(env)

        def fail(error: KafkaError) -> None:
            reply(
                OffsetCommitResponse(
                    error=error.name, message=error.message, partitions=dict.fromkeys(req.offsets, error.name)
                )
            )

        not_here = self._not_here(req.group_id)
        if not_here is not None:
            fail(not_here)
            return
        group = self.groups.get(req.group_id)
        if req.generation_id < 0 and not req.member_id:
            if group is not None and group.members:
                fail(
                    errors.UnknownMemberId(
                        f"group {req.group_id} has active members; a consumer outside it may not commit for it"
                    )
                )
                return
            if group is None:
                group = Group(req.group_id)
                self.groups[req.group_id] = group
        else:
            found = self._member(req.group_id, req.member_id, req.generation_id)
            if isinstance(found, KafkaError):
                fail(found)
                return
            group, member = found
            if group.state is GroupState.COMPLETING_REBALANCE:
                fail(errors.RebalanceInProgress(f"group {group.group_id} is completing a rebalance"))
                return
            self._schedule_session(group, member)
        bad = [tp for tp, offset in req.offsets.items() if offset < 0]
        if bad:
            fail(errors.InvalidRequest(f"offsets must be >= 0 ({', '.join(map(str, bad))})"))
            return
        now = self.now_ms
        records: list[tuple[bytes | None, bytes | None]] = [
            (_offset_key(req.group_id, tp), _offset_value(offset, now))
            for tp, offset in sorted(req.offsets.items())
        ]
        target = group

        def stored(error: KafkaError | None) -> None:
            if error is not None:
                fail(error)
                return
            target.offsets.update(req.offsets)
            reply(OffsetCommitResponse(partitions=dict.fromkeys(req.offsets)))

        self._append(req.group_id, records, stored)

    def _on_txn_offset_commit(self, env: Envelope) -> None:
        """Offsets a transaction commits (KIP-98): written to __consumer_offsets as a transactional
        batch of the producer, held apart until the transaction's marker says commit or abort."""
        from lab.engine import errors

        req: TxnOffsetCommitRequest = env.body
        reply = self._reply(env)

        def fail(error: KafkaError) -> None:
            reply(
                TxnOffsetCommitResponse(
                    error=error.name, message=error.message, partitions=dict.fromkeys(req.offsets, error.name)
                )
            )

        not_here = self._not_here(req.group_id)
        if not_here is not None:
            fail(not_here)
            return
        group = self.groups.get(req.group_id)
        if req.generation_id >= 0 or req.member_id:
            # KIP-447: a member of the group commits for its generation only.
            found = self._member(req.group_id, req.member_id, req.generation_id)
            if isinstance(found, KafkaError):
                fail(found)
                return
            group = found[0]
        if group is None:
            group = self.groups[req.group_id] = Group(req.group_id)
        bad = [tp for tp, offset in req.offsets.items() if offset < 0]
        if bad:
            fail(errors.InvalidRequest(f"offsets must be >= 0 ({', '.join(map(str, bad))})"))
            return
        now = self.now_ms
        records: list[tuple[bytes | None, bytes | None]] = [
            (_offset_key(req.group_id, tp), _offset_value(offset, now))
            for tp, offset in sorted(req.offsets.items())
        ]
        target = group

        def stored(error: KafkaError | None) -> None:
            if error is not None:
                fail(error)
                return
            target.pending_txn_offsets.setdefault(req.producer_id, {}).update(req.offsets)
            self.journal(
                "txn_offsets_pending",
                f"{req.transactional_id} commits offsets of group {req.group_id} in its transaction "
                f"({', '.join(f'{tp}={o}' for tp, o in sorted(req.offsets.items()))}): they count once it commits",
                req.group_id,
            )
            reply(TxnOffsetCommitResponse(partitions=dict.fromkeys(req.offsets)))

        self._append(
            req.group_id,
            records,
            stored,
            producer_id=req.producer_id,
            producer_epoch=req.producer_epoch,
        )

    def on_txn_marker(self, tp: TopicPartition, producer_id: int, *, commit: bool) -> None:
        """A transaction's marker reached ``tp`` of __consumer_offsets: its offsets count, or go."""
        if tp.partition not in self.partitions:
            return
        for group in self.groups.values():
            if partition_for_group(group.group_id, self.num_partitions) != tp.partition:
                continue
            committed = group.pending_txn_offsets.pop(producer_id, None)
            if committed and commit:
                group.offsets.update(committed)

    def _on_fetch_offsets(self, env: Envelope) -> None:
        req: OffsetFetchRequest = env.body
        reply = self._reply(env)
        not_here = self._not_here(req.group_id)
        if not_here is not None:
            reply(OffsetFetchResponse(error=not_here.name, message=not_here.message))
            return
        group = self.groups.get(req.group_id)
        known = {} if group is None else group.offsets
        wanted = sorted(known) if req.partitions is None else req.partitions
        reply(OffsetFetchResponse(offsets={tp: known.get(tp, -1) for tp in wanted}))

    # ------------------------------------------------------------------ group admin

    def _on_list_groups(self, env: Envelope) -> None:
        """The groups this broker coordinates (Kafka's admin asks every broker and merges the lists)."""
        req: ListGroupsRequest = env.body
        listed = tuple(
            ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, state=g.state.value)
            for g in sorted(self.groups.values(), key=lambda g: g.group_id)
            if partition_for_group(g.group_id, self.num_partitions) in self.partitions
            and g.state is not GroupState.DEAD
            and (not req.states or g.state.value in req.states)
        )
        self._reply(env)(ListGroupsResponse(groups=listed))

    def _on_describe_groups(self, env: Envelope) -> None:
        req: DescribeGroupsRequest = env.body
        out: list[DescribedGroup] = []
        for group_id in req.group_ids:
            refused = self._not_here(group_id)
            if refused is not None:
                out.append(DescribedGroup(group_id=group_id, error=refused.name, message=refused.message))
                continue
            group = self.groups.get(group_id)
            if group is None or group.state is GroupState.DEAD:
                out.append(
                    DescribedGroup(group_id=group_id)
                )  # Kafka: an unknown group is Dead, with no error
                continue
            stable = group.state is GroupState.STABLE
            out.append(
                DescribedGroup(
                    group_id=group_id,
                    state=group.state.value,
                    protocol_type=group.protocol_type,
                    protocol=group.protocol or "",
                    members=tuple(
                        DescribedMember(
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            # Kafka shows a member's metadata and assignment only in a Stable group.
                            metadata=m.metadata(group.protocol or "") if stable else b"",
                            assignment=m.assignment if stable else b"",
                        )
                        for m in group.members.values()
                    ),
                )
            )
        self._reply(env)(DescribeGroupsResponse(groups=tuple(out)))

    def _on_delete_groups(self, env: Envelope) -> None:
        """Delete empty groups: their offsets and metadata get tombstones in __consumer_offsets."""
        from lab.engine import errors

        req: DeleteGroupsRequest = env.body
        results: dict[str, ErrorResult] = {}
        pending = 0
        reply = self._reply(env)

        def answered(group_id: str) -> Callable[[KafkaError | None], None]:
            def then(error: KafkaError | None) -> None:
                nonlocal pending
                if error is not None:
                    results[group_id] = ErrorResult(error=error.name, message=error.message)
                pending -= 1
                if pending == 0:
                    reply(DeleteGroupsResponse(groups=dict(results)))

            return then

        for group_id in req.group_ids:
            refused = self._not_here(group_id)
            group = self.groups.get(group_id)
            if refused is None and (group is None or group.state is GroupState.DEAD):
                refused = errors.GroupIdNotFound(f"group {group_id} does not exist")
            elif refused is None and group is not None and group.members:
                refused = errors.NonEmptyGroup(f"group {group_id} has {len(group.members)} member(s)")
            if refused is not None:
                results[group_id] = ErrorResult(error=refused.name, message=refused.message)
                continue
            assert group is not None
            group.state = GroupState.DEAD
            self.groups.pop(group_id, None)
            results[group_id] = ErrorResult()
            self.journal(
                "group_deleted",
                f"group {group_id} deleted: its {len(group.offsets)} committed offset(s) and its metadata get "
                "tombstones in __consumer_offsets",
                group=group_id,
            )
            tombstones: list[tuple[bytes | None, bytes | None]] = [
                (_offset_key(group_id, tp), None) for tp in group.offsets
            ]
            tombstones.append((_group_key(group_id), None))
            pending += 1
            self._append(group_id, tombstones, answered(group_id))
        if pending == 0:
            reply(DeleteGroupsResponse(groups=results))

    # ------------------------------------------------------------------ writing __consumer_offsets

    def _store_group(self, group: Group, then: Callable[[KafkaError | None], None] | None = None) -> None:
        value = {
            "version": 3,
            "protocol_type": group.protocol_type,
            "generation": group.generation,
            "protocol": group.protocol,
            "leader": group.leader,
            "current_state_timestamp": self.now_ms,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "session_timeout_ms": m.session_timeout_ms,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    # The consumer protocol's bytes (Kafka keeps them as bytes; JSON carries them in base64).
                    "subscription": _b64(m.metadata(group.protocol or "")),
                    "assignment": _b64(m.assignment),
                }
                for m in group.members.values()
            ],
        }
        key = _group_key(group.group_id)
        self._append(
            group.group_id,
            [(key, json.dumps(value, separators=(",", ":")).encode())],
            then or (lambda e: None),
        )

    def _append(
        self,
        group_id: str,
        records: list[tuple[bytes | None, bytes | None]],
        then: Callable[[KafkaError | None], None],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        from lab.engine import errors

        tp = TopicPartition(OFFSETS_TOPIC, partition_for_group(group_id, self.num_partitions))
        batch = build_batch(
            records,
            timestamp_ms=self.now_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=NO_SEQUENCE,
            is_transactional=producer_id >= 0,
        )

        def done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
            result = results[tp]
            if result.error is None:
                then(None)
            elif result.error in ("NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION"):
                then(errors.NotCoordinator(f"broker {self.broker.id} lost {tp}: {result.message}"))
            elif result.error == "REQUEST_TIMED_OUT":
                then(errors.RequestTimedOut(result.message))
            elif result.error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
                then(errors.ProducerFenced(result.message))
            else:
                then(errors.CoordinatorNotAvailable(f"{tp}: {result.error} {result.message}"))

        self.broker.append_records({tp: batch}, acks=-1, timeout_ms=OFFSET_COMMIT_TIMEOUT_MS, respond=done)

    # ------------------------------------------------------------------ for snapshots

    def describe(
        self, group: Group, high_watermark: Callable[[TopicPartition], int | None]
    ) -> dict[str, Any]:
        lag: dict[str, int] = {}
        assigned = {tp for m in group.members.values() for tp in decode_assignment(m.assignment)}
        for tp in sorted(assigned | set(group.offsets)):
            hw = high_watermark(tp)
            if hw is None:
                continue
            committed = group.offsets.get(tp)
            lag[tp.key] = max(0, hw - (committed if committed is not None else 0))
        return {
            "state": group.state.value,
            "generation": group.generation,
            "assignor": group.protocol,
            "protocol_type": group.protocol_type,
            "leader": group.leader,
            "coordinator": self.broker.id,
            "members": [
                {
                    "member_id": m.member_id,
                    "client_id": m.client_id,
                    "instance_id": m.group_instance_id,
                    "client_host": m.client_host,  # a real client's address; the lab's own: ""
                    "assignment": [[tp.topic, tp.partition] for tp in decode_assignment(m.assignment)],
                }
                for m in group.members.values()
            ],
            "committed": {tp.key: offset for tp, offset in sorted(group.offsets.items())},
            "lag": lag,
            "total_lag": sum(lag.values()),
        }


def _initial_wait(group: Group, now_ms: int) -> bool:
    """True while an initial rebalance delay is still running (it completes on its own timer)."""
    return (
        group.generation == 0
        and group.join_timer is not None
        and group.join_timer.time_ms > now_ms
        and group.join_timer.label == "initial rebalance delay"
    )


def _group_key(group: str) -> bytes:
    return json.dumps({"version": 2, "group": group}, separators=(",", ":")).encode()


def _offset_key(group: str, tp: TopicPartition) -> bytes:
    return json.dumps(
        {"version": 1, "group": group, "topic": tp.topic, "partition": tp.partition}, separators=(",", ":")
    ).encode()


def _offset_value(offset: int, now_ms: int) -> bytes:
    return json.dumps(
        {"version": 3, "offset": offset, "leader_epoch": -1, "metadata": "", "commit_timestamp": now_ms},
        separators=(",", ":"),
    ).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:  # written before the lab kept these bytes in base64: the member joins again
        return b""


def _tps(tps: list[TopicPartition]) -> str:
    return "[" + ", ".join(str(tp) for tp in tps) + "]"


def coordinator_of(brokers: Mapping[BrokerId, Broker], group_id: str) -> tuple[Broker, Group] | None:
    """The live broker that coordinates ``group_id`` now, with the group (for snapshots and tests)."""
    for broker in brokers.values():
        coordinator = broker.groups
        if broker.alive and coordinator is not None and group_id in coordinator.groups:
            partition = partition_for_group(group_id, coordinator.num_partitions)
            if partition in coordinator.partitions:
                return broker, coordinator.groups[group_id]
    return None
