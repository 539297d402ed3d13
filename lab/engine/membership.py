"""A consumer in a group: Kafka's ConsumerCoordinator, the member's side of the classic protocol.

FindCoordinator, then JoinGroup (with a MEMBER_ID_REQUIRED round trip for a
new member), then SyncGroup, where the member the coordinator chose as leader
hands in the assignment it computed with the group's assignor. Heartbeats
every heartbeat.interval.ms keep the member in; REBALANCE_IN_PROGRESS in an
answer sends it back to JoinGroup. Eager assignors give up everything before
joining; cooperative-sticky gives up only what moves, and joins once more.

The heartbeat "thread" runs as Kafka's does, from the JoinGroup answer on: it
wakes every retry.backoff.ms, looks the coordinator up when it is unknown,
gives up on a coordinator that answered no heartbeat for session.timeout.ms,
leaves the group once max.poll.interval.ms passed without a poll, and sends a
heartbeat every heartbeat.interval.ms. UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION
(from a heartbeat, SyncGroup or OffsetCommit) resets the member id and
generation, and the member joins again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lab.engine import consumer_protocol, errors
from lab.engine.assignment import ASSIGNORS, EAGER, Subscription, assign
from lab.engine.clients import ClientHost, Consumer, _int
from lab.engine.errors import IllegalArgument, IllegalState, KafkaError, NetworkException
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.protocol import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from lab.engine.scheduler import Scheduler, Timer
from lab.engine.tasks import Pending

COORDINATOR_ERRORS = frozenset(
    {
        "NOT_COORDINATOR",
        "COORDINATOR_NOT_AVAILABLE",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "NETWORK_EXCEPTION",
        "REQUEST_TIMED_OUT",
    }
)


def encode_subscription(sub: Subscription) -> bytes:
    """Kafka's ConsumerProtocolSubscription bytes, as every Kafka consumer writes them."""
    return consumer_protocol.encode_subscription(
        consumer_protocol.Subscription(topics=sub.topics, owned=sub.owned, generation=sub.generation)
    )


def decode_subscription(data: bytes) -> Subscription:
    """A member's subscription, from the lab's consumers or any Kafka client (an unreadable one subscribes
    to nothing, as Kafka's leader would fail to read it)."""
    try:
        sub = consumer_protocol.decode_subscription(data)
    except consumer_protocol.MalformedProtocolData:
        return Subscription(topics=())
    return Subscription(topics=sub.topics, owned=sub.owned, generation=sub.generation)


def encode_assignment(tps: Sequence[TopicPartition]) -> bytes:
    return consumer_protocol.encode_assignment(tps)


class GroupConsumer(Consumer):
    """``subscribe``, ``poll``, ``commit``, ``committed``, ``close``: a member of ``group.id``."""

    def __init__(self, host: ClientHost, client_id: str, config: Mapping[str, object] | None = None) -> None:
        super().__init__(host, client_id, config)
        cfg = self.config
        self.group_id = cfg["group.id"]
        if not self.group_id:
            raise IllegalArgument("a group consumer needs a group.id")
        self.instance_id = cfg["group.instance.id"] or None
        self.session_timeout_ms = _int(cfg, "session.timeout.ms", 1)
        self.heartbeat_interval_ms = _int(cfg, "heartbeat.interval.ms", 1)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise IllegalArgument("heartbeat.interval.ms must be lower than session.timeout.ms")
        self.max_poll_interval_ms = _int(cfg, "max.poll.interval.ms", 1)
        self.auto_commit = cfg["enable.auto.commit"] == "true"
        self.auto_commit_interval_ms = _int(cfg, "auto.commit.interval.ms", 1)
        self.metadata_max_age_ms = 5000
        self.assignors = [
            name.strip() for name in cfg["partition.assignment.strategy"].split(",") if name.strip()
        ]
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if unknown or not self.assignors:
            raise IllegalArgument(
                f"unknown partition.assignment.strategy {unknown}; Kafka's are {', '.join(ASSIGNORS)}"
            )
        self.subscription: tuple[str, ...] = ()
        self.coordinator: BrokerId | None = None
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader = ""
        self.state = "unjoined"  # finding, joining, syncing, stable, closed
        self.rebalances = 0
        self.revoked_count = 0
        self.on_revoked: Callable[[list[TopicPartition]], None] | None = None
        self.on_assigned: Callable[[list[TopicPartition]], None] | None = None
        # Kafka's onPartitionsLost: partitions taken away when the member was fenced (they may
        # already be someone else's, so nothing may be committed for them). Unset: on_revoked.
        self.on_lost: Callable[[list[TopicPartition]], None] | None = None
        self._rejoin_reason = ""
        self._busy = False
        self._heartbeat_timer: Timer | None = None
        self._auto_commit_timer: Timer | None = None
        self._refresh_timer: Timer | None = None
        self._in_flight: set[int] = set()  # requests to the coordinator, failed when we give it up
        # The heartbeat thread's timers (Kafka's Heartbeat): when to send the next heartbeat, when
        # the coordinator's silence ends the session, and the poll timer; the thread wakes on a
        # retry.backoff.ms beat counted from its last turn that sent something.
        self._last_poll_ms = self.scheduler.now_ms
        self._next_heartbeat_ms = 0
        self._session_deadline_ms = 0
        self._beat_anchor_ms = 0
        self._counts: dict[str, int] = {}
        self._fetching_committed = False
        self._looking = False
        self.fatal: KafkaError | None = None

    # ------------------------------------------------------------------ API

    def subscribe(self, topics: Sequence[str]) -> None:
        if isinstance(topics, str):
            raise IllegalArgument("subscribe takes a list of topics, e.g. subscribe(['orders'])")
        if not topics or any(not t for t in topics):
            raise IllegalArgument("subscribe needs at least one topic name")
        if self._assigned and not self.subscription:
            raise IllegalState(
                "subscribe() and assign() cannot be mixed: this consumer has a manual assignment"
            )
        new = tuple(sorted(set(topics)))
        changed = new != self.subscription
        self.subscription = new
        self.metadata.need(new)
        self._schedule_refresh()
        if changed:
            self._request_rejoin(f"{self.client_id} subscribed to {', '.join(new)}")

    def assign(self, partitions: Sequence[tuple[str, int]] | Sequence[TopicPartition]) -> None:
        if self.subscription:
            raise IllegalState("subscribe() and assign() cannot be mixed: this consumer is subscribed")
        super().assign(partitions)

    def unsubscribe(self) -> None:
        self._leave("unsubscribe")
        self.subscription = ()
        self._set_assignment([])

    def _has_partitions_to_read(self) -> bool:
        return bool(self.subscription) or bool(self._assigned)

    def take(self, max_records: int | None = None) -> list[Any]:
        self._last_poll_ms = self.scheduler.now_ms
        if self.fatal is not None:
            raise self.fatal
        if self.subscription and self.state == "unjoined" and not self._busy:
            self._request_rejoin(self._rejoin_reason or "poll() after leaving")
        return super().take(max_records)

    def commit(
        self, offsets: Mapping[tuple[str, int], int] | None = None, *, asynchronous: bool = False
    ) -> Pending[None]:
        """Commit ``offsets`` (default: the current positions); sync commits drive the clock until answered."""
        wanted = self._offsets_to_commit(offsets)
        done: Pending[None] = Pending()
        if not wanted:
            done.resolve(None)
            return done
        self._send_commit(wanted, done)
        if not asynchronous:
            self.host.run_until_true(done.done, self.request_timeout_ms + 1000)
            if not done.done():
                raise errors.KafkaTimeout(f"the commit of {self.group_id} got no answer in time")
            done.result()
        return done

    def commit_async(self, offsets: Mapping[tuple[str, int], int] | None = None) -> Pending[None]:
        return self.commit(offsets, asynchronous=True)

    def committed(self, topic: str, partition: int, timeout_ms: int = 10_000) -> int | None:
        """The group's committed offset for a partition (None when nothing is committed)."""
        answer: Pending[dict[TopicPartition, int]] = Pending()
        self._fetch_committed([TopicPartition(topic, partition)], answer)
        self.host.run_until_true(answer.done, timeout_ms)
        offset = answer.result().get(TopicPartition(topic, partition), -1)
        return None if offset < 0 else offset

    def close(self) -> None:
        if self.closed:
            return
        if self.auto_commit and self.state == "stable":
            with contextlib.suppress(KafkaError):
                self.commit()
        self._leave("the consumer is closing")
        self._stop_timers()
        self.state = "closed"
        super().close()

    def crash(self) -> None:
        """Die without a word: no commit, no LeaveGroup. The coordinator notices after session.timeout.ms."""
        if self.closed:
            return
        self._stop_timers()
        self.state = "closed"
        super().close()

    # ------------------------------------------------------------------ joining

    def _request_rejoin(self, reason: str) -> None:
        self._rejoin_reason = reason
        if self.state == "stable":
            self.state = "unjoined"
        if self.state == "unjoined":
            self.scheduler.call_soon(self._ensure_group, label=f"{self.client_id} join")

    def _ensure_group(self) -> None:
        if self.closed or self._busy or not self.subscription or self.state not in ("unjoined", "finding"):
            return
        if self.coordinator is None:
            self._find_coordinator()
        else:
            self._prepare_join()

    def _rejoin_soon(self) -> None:
        self.state = "unjoined"
        self._backoff_and_retry()

    def _backoff_and_retry(self) -> None:
        self.scheduler.call_later(
            self.retry_backoff_ms, self._ensure_group, label=f"{self.client_id} rejoin backoff"
        )

    def _any_broker(self) -> BrokerId:
        """Kafka's leastLoadedNode: a broker with the fewest requests waiting on it (one that holds
        ours unanswered, paused or cut off, is the last choice)."""
        return self.endpoint.least_loaded(self.host.bootstrap_brokers(), self.scheduler.rng)

    def _find_coordinator(self) -> None:
        self._busy = True
        self.state = "finding"
        self.endpoint.request(
            self._any_broker(),
            FindCoordinatorRequest(key=self.group_id),
            self._on_coordinator,
            timeout_ms=self.request_timeout_ms,
        )

    def _on_coordinator(self, response: Any) -> None:
        self._busy = False
        if self.closed:
            return
        if isinstance(response, FindCoordinatorResponse) and response.error is None:
            self._coordinator_found(response.node_id)
            self.state = "unjoined"
            self._prepare_join()
            return
        self.state = "unjoined"
        self._backoff_and_retry()

    def _prepare_join(self) -> None:
        """Eager protocols give up everything before joining (committing first, with auto-commit)."""
        if self.closed or self._busy:
            return
        eager = self.protocol is None or self.protocol in EAGER
        if eager and self._assigned and self.subscription:
            if self.auto_commit:
                done: Pending[None] = Pending()
                self._busy = True
                self._send_commit(self._offsets_to_commit(None), done)
                done.add_done_callback(lambda _p: self._after_pre_join_commit())
                return
            self._revoke(list(self._assigned))
        self._join()

    def _after_pre_join_commit(self) -> None:
        self._busy = False
        if self.closed:
            return
        self._revoke(list(self._assigned))
        self._join()

    def _join(self) -> None:
        if self.closed:
            return
        if self.coordinator is None:
            self._coordinator_lost()
            return
        self._busy = True
        self.state = "joining"
        owned = tuple(self._assigned) if self.protocol not in EAGER else ()
        sub = Subscription(topics=self.subscription, owned=owned, generation=self.generation)
        request = JoinGroupRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            client_id=self.client_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.max_poll_interval_ms,
            protocol_type="consumer",
            protocols=tuple((name, encode_subscription(sub)) for name in self.assignors),
            reason=self._rejoin_reason,
        )
        # The coordinator may hold a JoinGroup for up to the rebalance timeout.
        self._call_coordinator(
            request, self._on_join, timeout_ms=self.max_poll_interval_ms + self.request_timeout_ms
        )

    def _on_join(self, response: Any) -> None:
        self._busy = False
        if self.closed:
            return
        if isinstance(response, KafkaError):
            self._coordinator_lost()
            return
        assert isinstance(response, JoinGroupResponse)
        error = response.error
        if error == "MEMBER_ID_REQUIRED":
            self.member_id = response.member_id
            self._join()
            return
        if error is not None:
            self._on_group_error(error, response.message)
            return
        self.generation = response.generation_id
        self.member_id = response.member_id
        self.protocol = response.protocol_name
        self.leader = response.leader
        self.state = "syncing"
        self._enable_heartbeats()
        if response.leader == self.member_id and response.members:
            self._lead(response)
        else:
            self._sync(())

    def _lead(self, response: JoinGroupResponse) -> None:
        """The leader computes everyone's assignment; it needs the partition count of every subscribed topic."""
        subs = {m.member_id: decode_subscription(m.metadata) for m in response.members}
        topics = sorted({t for s in subs.values() for t in s.topics})
        # Assign from fresh metadata: ask first, then compute.
        self.metadata.waiters.append(lambda: self._assign_as_leader(response, subs, topics))
        self.metadata.need(topics)

    def _assign_as_leader(
        self, response: JoinGroupResponse, subs: dict[str, Subscription], topics: list[str]
    ) -> None:
        if self.closed or self.state != "syncing" or self.generation != response.generation_id:
            return
        counts = {t: self.metadata.partition_count(t) for t in topics}
        known = {t: c for t, c in counts.items() if c is not None}
        self._counts = dict(known)
        plan = assign(response.protocol_name, subs, known)
        self._sync(tuple((member, encode_assignment(tps)) for member, tps in plan.items()))

    def _sync(self, assignments: tuple[tuple[str, bytes], ...]) -> None:
        if self.coordinator is None:
            # Lost meanwhile (a commit or a heartbeat heard NOT_COORDINATOR): find it, join again.
            self._coordinator_lost()
            return
        self._busy = True
        generation = self.generation
        request = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            assignments=assignments,
        )
        self._call_coordinator(request, lambda response: self._on_sync(response, generation))

    def _on_sync(self, response: Any, generation: int) -> None:
        self._busy = False
        if self.closed:
            return
        if isinstance(response, KafkaError):
            self._coordinator_lost()
            return
        assert isinstance(response, SyncGroupResponse)
        if response.error is not None:
            self._on_group_error(response.error, response.message)
            return
        if self.state != "syncing" or self.generation != generation:
            # A heartbeat or a commit answer reset the generation while SyncGroup was out: as Kafka,
            # do not take an assignment for a generation we no longer hold; join again.
            self._rejoin_soon()
            return
        new = _decode_tps(response.assignment)
        old = list(self._assigned)
        revoked = [tp for tp in old if tp not in new]
        added = [tp for tp in new if tp not in old]
        self.rebalances += 1
        # Stable first, as Kafka's SyncGroup answer does: a listener may commit in its callbacks.
        self.state = "stable"
        if revoked:
            self._revoke(revoked)
        self._set_assignment(new)
        if added and self.on_assigned is not None:
            self.on_assigned(added)
        if self.auto_commit and self._auto_commit_timer is None:
            self._auto_commit_timer = self.scheduler.call_later(
                self.auto_commit_interval_ms, self._auto_commit, label=f"{self.client_id} auto-commit"
            )
        self._fetch_missing_positions()
        if revoked and self.protocol not in EAGER:
            # Cooperative: what we gave up goes to its new owner in a second rebalance.
            self._request_rejoin(f"{self.client_id} gave up {', '.join(map(str, revoked))}")

    def _revoke(self, tps: list[TopicPartition]) -> None:
        if not tps:
            return
        self.revoked_count += len(tps)
        if self.on_revoked is not None:
            self.on_revoked(tps)
        keep = [tp for tp in self._assigned if tp not in tps]
        self._set_assignment(keep)

    def _lose_partitions(self) -> None:
        """Fenced out: what we held is no longer ours, and nothing may be committed for it."""
        lost = list(self._assigned)
        self._set_assignment([])
        listener = self.on_lost or self.on_revoked
        if lost and listener is not None:
            listener(lost)

    def _on_group_error(self, error: str, message: str, sent: tuple[str, int] | None = None) -> None:
        """``sent``: the member id and generation a heartbeat or commit went out with. An answer to
        an older identity than ours is stale (Kafka's generationUnchanged) and resets nothing."""
        stale = sent is not None and sent != (self.member_id, self.generation)
        if stale and error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"):
            return
        if error in COORDINATOR_ERRORS:
            self._coordinator_lost()
        elif error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
            # Kafka resets the whole generation (member id included) for both: the member joins as new.
            self.host.journal.record(
                "member_fenced",
                f"{self.member_id or self.client_id} heard {error} from the coordinator of group {self.group_id}: "
                f"it gives up its partitions and joins again ({message})",
                group=self.group_id,
                member=self.member_id,
                error=error,
            )
            self.member_id = ""
            self.generation = -1
            self._lose_partitions()
            self._rejoin_soon()
        elif error == "REBALANCE_IN_PROGRESS":
            self.state = "unjoined"
            self.scheduler.call_soon(self._ensure_group, label=f"{self.client_id} rejoin")
        else:
            # FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, ...: nothing to retry; tell the user.
            self.fatal = errors.from_wire(error, message)
            self.state = "unjoined"
            self._stop_timers()

    def _coordinator_lost(self) -> None:
        self._mark_coordinator_unknown()
        if self.state != "closed":
            self.state = "unjoined"
        self._backoff_and_retry()

    def _coordinator_found(self, node: BrokerId) -> None:
        self.coordinator = node
        # Kafka resets the session timer on discovery, so the new coordinator gets a full session.
        self._session_deadline_ms = self.scheduler.now_ms + self.session_timeout_ms

    def _mark_coordinator_unknown(self) -> None:
        """Give the coordinator up, as Kafka's markCoordinatorUnknown: it also drops the connection,
        so requests still out to it fail now rather than come back, late, from a coordinator that
        is no longer one (a paused broker answers what it held when it resumes)."""
        if self.coordinator is None:
            return
        old = self.coordinator
        self.coordinator = None
        for cid in sorted(self._in_flight):
            self.endpoint.abort(
                cid, NetworkException(f"{self.client_id} disconnected from coordinator {old}")
            )
        self._in_flight.clear()

    def _call_coordinator(
        self, body: Any, callback: Callable[[Any], None], *, timeout_ms: int | None = None
    ) -> None:
        """A request to the coordinator, on the connection that ``_mark_coordinator_unknown`` drops."""
        assert self.coordinator is not None
        cid = 0

        def answered(response: Any) -> None:
            self._in_flight.discard(cid)
            callback(response)

        cid = self.endpoint.request(
            self.coordinator, body, answered, timeout_ms=timeout_ms or self.request_timeout_ms
        )
        self._in_flight.add(cid)

    # ------------------------------------------------------------------ the heartbeat thread

    def _enable_heartbeats(self) -> None:
        """The JoinGroup answer starts the thread with fresh timers (Kafka's resetTimeouts)."""
        now = self.scheduler.now_ms
        self._last_poll_ms = now
        self._session_deadline_ms = now + self.session_timeout_ms
        self._next_heartbeat_ms = now + self.heartbeat_interval_ms
        self._beat_anchor_ms = now
        self._sleep_heartbeat_thread()

    def _sleep_heartbeat_thread(self, at: int | None = None) -> None:
        """Wake at ``at``, or at the first beat when something falls due. Kafka's thread wakes every
        retry.backoff.ms to check; waking only on the beat where it would act is the same."""
        if at is None:
            due = min(
                self._next_heartbeat_ms,
                self._session_deadline_ms,
                self._last_poll_ms + self.max_poll_interval_ms,
            )
            at = self._on_beat(due)
        Scheduler.cancel(self._heartbeat_timer)
        self._heartbeat_timer = self.scheduler.call_at(
            max(at, self.scheduler.now_ms), self._heartbeat_turn, label=f"{self.client_id} heartbeat"
        )

    def _on_beat(self, time_ms: int) -> int:
        """The first wake of the thread at or after ``time_ms``."""
        step = self.retry_backoff_ms
        start = self._beat_anchor_ms
        if step <= 0 or time_ms <= start:
            return time_ms
        return start + -(-(time_ms - start) // step) * step

    def _heartbeat_turn(self) -> None:
        """One turn of Kafka's heartbeat thread, in its order of checks."""
        self._heartbeat_timer = None
        if self.closed or self.state not in ("syncing", "stable"):
            return
        now = self.scheduler.now_ms
        if self.coordinator is None:
            self._lookup_coordinator()
            self._beat_anchor_ms = now
            self._sleep_heartbeat_thread(now + self.retry_backoff_ms)
            return
        if now >= self._session_deadline_ms:
            self.host.journal.record(
                "coordinator_unknown",
                f"{self.member_id or self.client_id} heard no heartbeat answer from coordinator {self.coordinator} "
                f"for session.timeout.ms={self.session_timeout_ms}: it looks for the coordinator again",
                group=self.group_id,
                member=self.member_id,
            )
            self._mark_coordinator_unknown()
            self._beat_anchor_ms = now
            self._sleep_heartbeat_thread(now)
            return
        if now >= self._last_poll_ms + self.max_poll_interval_ms:
            self.host.journal.record(
                "member_left",
                f"{self.member_id or self.client_id} did not poll for max.poll.interval.ms={self.max_poll_interval_ms}: "
                f"it leaves group {self.group_id} so its partitions can move; it rejoins on its next poll",
                group=self.group_id,
                member=self.member_id,
            )
            self._leave("consumer poll timeout has expired")
            self._rejoin_reason = f"{self.client_id} polled again after exceeding max.poll.interval.ms"
            return
        if now >= self._next_heartbeat_ms:
            self._send_heartbeat()
            self._next_heartbeat_ms = now + self.heartbeat_interval_ms
            self._beat_anchor_ms = now
        self._sleep_heartbeat_thread()

    def _send_heartbeat(self) -> None:
        sent = (self.member_id, self.generation)
        request = HeartbeatRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        self._call_coordinator(request, lambda response: self._on_heartbeat(response, sent))

    def _on_heartbeat(self, response: Any, sent: tuple[str, int]) -> None:
        if self.closed or self.state not in ("syncing", "stable"):
            return
        now = self.scheduler.now_ms
        if isinstance(response, KafkaError):
            # Kafka's failHeartbeat: try again after retry.backoff.ms (looking the coordinator up first).
            self._mark_coordinator_unknown()
            self._retry_heartbeat(now)
            return
        assert isinstance(response, HeartbeatResponse)
        if response.error is None:
            self._session_deadline_ms = now + self.session_timeout_ms
        elif response.error == "REBALANCE_IN_PROGRESS":
            self._session_deadline_ms = now + self.session_timeout_ms
            if self.state == "stable":  # while syncing, the SyncGroup answer says so
                self._on_group_error(response.error, response.message, sent)
        elif response.error in COORDINATOR_ERRORS:
            self._mark_coordinator_unknown()
            self._retry_heartbeat(now)
        else:
            self._on_group_error(response.error, response.message, sent)

    def _retry_heartbeat(self, now: int) -> None:
        self._next_heartbeat_ms = now + self.retry_backoff_ms
        if self._heartbeat_timer is not None:  # wake the sleeping thread for it (Kafka notifies it)
            self._sleep_heartbeat_thread()

    def _lookup_coordinator(self) -> None:
        if self._looking:
            return
        self._looking = True

        def found(response: Any) -> None:
            self._looking = False
            if isinstance(response, FindCoordinatorResponse) and response.error is None and not self.closed:
                self._coordinator_found(response.node_id)

        self.endpoint.request(
            self._any_broker(),
            FindCoordinatorRequest(key=self.group_id),
            found,
            timeout_ms=self.request_timeout_ms,
        )

    def _leave(self, reason: str) -> None:
        """Kafka's maybeLeaveGroup: a dynamic member says LeaveGroup; every member resets its
        generation (a static one keeps its group.instance.id, and the group waits out its session)."""
        if self.coordinator is not None and self.member_id and not self.instance_id:
            self.endpoint.send_oneway(
                self.coordinator,
                LeaveGroupRequest(
                    group_id=self.group_id, member_id=self.member_id, group_instance_id=None, reason=reason
                ),
            )
        if self._assigned:
            self._revoke(list(self._assigned))
        self.member_id = ""
        self.generation = -1
        self.state = "unjoined"
        Scheduler.cancel(self._heartbeat_timer)
        self._heartbeat_timer = None

    def _auto_commit(self) -> None:
        self._auto_commit_timer = None
        if self.closed:
            return
        if self.state == "stable":
            self._send_commit(self._offsets_to_commit(None), Pending())
        self._auto_commit_timer = self.scheduler.call_later(
            self.auto_commit_interval_ms, self._auto_commit, label=f"{self.client_id} auto-commit"
        )

    def _schedule_refresh(self) -> None:
        """metadata.max.age.ms: look again, and rejoin when a subscribed topic grew partitions."""
        if self._refresh_timer is not None or self.closed:
            return

        def refresh() -> None:
            self._refresh_timer = None
            if self.closed:
                return
            self.metadata.waiters.append(self._check_partition_counts)
            self.metadata.need(self.subscription)
            self._schedule_refresh()

        self._refresh_timer = self.scheduler.call_later(
            self.metadata_max_age_ms, refresh, label=f"{self.client_id} metadata refresh"
        )

    def _check_partition_counts(self) -> None:
        if self.closed or self.leader != self.member_id or self.state != "stable":
            return
        for topic in self.subscription:
            now = self.metadata.partition_count(topic)
            before = self._counts.get(topic)
            if now is not None and now != before:
                what = (
                    f"now has {now} partitions (was {before})"
                    if before is not None
                    else f"exists now ({now} partitions)"
                )
                self._request_rejoin(f"topic {topic} {what}")
                return

    def _stop_timers(self) -> None:
        for timer in (self._heartbeat_timer, self._auto_commit_timer, self._refresh_timer):
            Scheduler.cancel(timer)
        self._heartbeat_timer = self._auto_commit_timer = self._refresh_timer = None

    # ------------------------------------------------------------------ offsets

    def _offsets_to_commit(self, offsets: Mapping[tuple[str, int], int] | None) -> dict[TopicPartition, int]:
        if offsets is None:
            return {tp: pos for tp, pos in self._positions.items() if tp in self._assigned}
        out: dict[TopicPartition, int] = {}
        for (topic, partition), offset in offsets.items():
            tp = TopicPartition(topic, int(partition))
            if self.subscription and tp not in self._assigned:
                raise IllegalState(
                    f"{tp} is not assigned to {self.client_id} in group {self.group_id}: it cannot commit for it "
                    f"(assigned: {', '.join(map(str, self._assigned)) or 'none'})"
                )
            if offset < 0:
                raise IllegalArgument(f"a committed offset must be >= 0, not {offset}")
            out[tp] = offset
        return out

    def _send_commit(self, offsets: dict[TopicPartition, int], done: Pending[None]) -> None:
        if not offsets:
            done.resolve(None)
            return
        managed = bool(self.subscription)
        if managed and (self.generation < 0 or self.state in ("joining", "syncing")):
            # Kafka fails these without asking: a member between generations commits for nobody.
            done.fail(
                errors.RebalanceInProgress(
                    f"{self.client_id} cannot commit while group {self.group_id} rebalances"
                )
                if self.state in ("finding", "joining", "syncing")
                else errors.CommitFailed(
                    f"{self.client_id} is not in a generation of group {self.group_id} (it left or was removed): "
                    "its partitions may be someone else's now; poll() to join again"
                )
            )
            return
        sent = (self.member_id, self.generation)
        request = OffsetCommitRequest(
            group_id=self.group_id,
            generation_id=self.generation if managed else -1,
            member_id=self.member_id if managed else "",
            group_instance_id=self.instance_id if managed else None,
            offsets=offsets,
        )

        def send(coordinator: BrokerId) -> None:
            self._call_coordinator(request, answered)

        def answered(response: Any) -> None:
            if isinstance(response, KafkaError):
                self._mark_coordinator_unknown()
                done.fail(response)
                return
            assert isinstance(response, OffsetCommitResponse)
            if response.error is not None:
                if response.error in COORDINATOR_ERRORS:
                    self._mark_coordinator_unknown()
                elif (
                    response.error in ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS")
                    and managed
                ):
                    self._on_group_error(response.error, response.message, sent)
                done.fail(errors.from_wire(response.error, f"commit failed: {response.message}"))
                return
            done.resolve(None)

        self._with_coordinator(send, done)

    def _with_coordinator(self, then: Callable[[BrokerId], None], failure: Pending[Any]) -> None:
        if self.coordinator is not None:
            then(self.coordinator)
            return

        def found(response: Any) -> None:
            if isinstance(response, FindCoordinatorResponse) and response.error is None:
                if self.coordinator is None:
                    self._coordinator_found(response.node_id)
                then(response.node_id)
            else:
                failure.fail(errors.CoordinatorNotAvailable(f"no coordinator for group {self.group_id} yet"))

        self.endpoint.request(
            self._any_broker(),
            FindCoordinatorRequest(key=self.group_id),
            found,
            timeout_ms=self.request_timeout_ms,
        )

    def _fetch_committed(self, tps: list[TopicPartition], answer: Pending[dict[TopicPartition, int]]) -> None:
        request = OffsetFetchRequest(group_id=self.group_id, partitions=tuple(tps))

        def answered(response: Any) -> None:
            if isinstance(response, OffsetFetchResponse) and response.error is None:
                answer.resolve(dict(response.offsets))
                return
            if isinstance(response, OffsetFetchResponse) and response.error in COORDINATOR_ERRORS:
                self._mark_coordinator_unknown()
            answer.fail(
                response
                if isinstance(response, KafkaError)
                else errors.from_wire(response.error or "UNKNOWN_SERVER_ERROR", response.message)
            )

        def send(coordinator: BrokerId) -> None:
            self._call_coordinator(request, answered)

        self._with_coordinator(send, answer)

    def _before_first_fetch(self, tp: TopicPartition) -> None:
        self._fetch_missing_positions()

    def _fetch_missing_positions(self) -> None:
        """Start where the group left off: the committed offset, else auto.offset.reset."""
        if self._fetching_committed:
            return
        missing = [tp for tp in self._assigned if tp not in self._positions and tp not in self._resetting]
        if not missing:
            return
        self._fetching_committed = True
        answer: Pending[dict[TopicPartition, int]] = Pending()

        def done(p: Pending[dict[TopicPartition, int]]) -> None:
            self._fetching_committed = False
            if self.closed:
                return
            if p.failed_with() is not None:
                self.scheduler.call_later(
                    self.retry_backoff_ms,
                    self._fetch_missing_positions,
                    label=f"{self.client_id} offset fetch",
                )
                return
            for tp, offset in p.result().items():
                if tp in self._assigned and tp not in self._positions:
                    if offset >= 0:
                        self._positions[tp] = offset
                    else:
                        self._initial_position(tp)
            self._kick(0)

        answer.add_done_callback(done)
        self._fetch_committed(missing, answer)


def _decode_tps(data: bytes) -> list[TopicPartition]:
    return list(consumer_protocol.decode_assignment(data).partitions)
