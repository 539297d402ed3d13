"""One broker's replica of one partition: HW, ISR and leader epoch, as Kafka's Partition.scala keeps them.

On the leader this tracks every follower (its log end offset, when it was last
caught up) and moves the high watermark to the smallest log end offset in the
ISR. The ``maybe_`` transitions are safe to call at any time: each checks its
own guard. Changes to the ISR are proposed here and written to ZooKeeper by
the broker; until the write succeeds the HW is computed over the old and the
new ISR together (the "maximal ISR"), which is never less safe than either.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.engine.errors import (
    FencedLeaderEpoch,
    KafkaError,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.protocol import PartitionStateInfo
from lab.engine.storage.log import AppendInfo, PartitionLog

UNKNOWN = -1


@dataclass(slots=True)
class FollowerState:
    """The leader's view of one follower (Kafka's ``Replica``)."""

    broker_id: BrokerId
    log_end_offset: int = UNKNOWN
    log_start_offset: int = UNKNOWN
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN
    last_fetch_time_ms: int = 0

    def update_fetch_state(
        self, *, fetch_offset: int, log_start_offset: int, now_ms: int, leader_end_offset: int
    ) -> None:
        # Caught up means: this fetch reached the leader's end, or reached where the
        # leader's end was at the previous fetch (then it was caught up as of that one).
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = log_start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms

    def reset(self, *, leader_end_offset: int, now_ms: int, in_sync: bool) -> None:
        self.log_end_offset = UNKNOWN
        self.log_start_offset = UNKNOWN
        self.last_caught_up_time_ms = now_ms if in_sync else 0
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms

    def is_caught_up(self, *, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return self.log_end_offset == leader_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class IsrChange:
    """A proposed ISR, for the broker to write to the partition's state znode."""

    tp: TopicPartition
    old_isr: tuple[BrokerId, ...]
    new_isr: tuple[BrokerId, ...]
    leader: BrokerId
    leader_epoch: int
    controller_epoch: int
    zk_version: int
    reason: str


class Partition:
    def __init__(
        self, tp: TopicPartition, broker_id: BrokerId, log: PartitionLog, *, high_watermark: int = 0
    ) -> None:
        self.tp = tp
        self.broker_id = broker_id
        self.log = log
        self.replicas: tuple[BrokerId, ...] = ()
        self.isr: tuple[BrokerId, ...] = ()
        self.pending_isr: tuple[BrokerId, ...] | None = None
        self.leader: BrokerId = UNKNOWN
        self.leader_epoch = UNKNOWN
        self.leader_epoch_start_offset = UNKNOWN
        self.zk_version = UNKNOWN
        self.controller_epoch = UNKNOWN
        self.followers: dict[BrokerId, FollowerState] = {}
        self.high_watermark = min(max(high_watermark, log.log_start_offset), log.log_end_offset)
        self.min_insync_replicas = 1
        self.topic_id: str | None = None  # KIP-516: checked against partition.metadata once

    # Who am I for this partition?

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop (the LSO): the first offset of a transaction not yet
        decided (open, or its marker not yet replicated), else the HW."""
        first = self.log.first_unstable_offset(self.high_watermark)
        return (
            self.high_watermark
            if first is None
            else max(self.log.log_start_offset, min(first, self.high_watermark))
        )

    @property
    def maximal_isr(self) -> frozenset[BrokerId]:
        if self.pending_isr is None:
            return frozenset(self.isr)
        return frozenset(self.isr) | frozenset(self.pending_isr)

    def make_leader(self, info: PartitionStateInfo, *, now_ms: int) -> bool:
        """Become leader at the controller's epoch. True when this is a new leadership."""
        was_leader = self.is_leader and self.leader_epoch == info.leader_epoch
        self._apply_state(info)
        if was_leader:
            return False
        leo = self.log.log_end_offset
        # KIP-101: record where this epoch starts, so returning followers can ask.
        self.log.leader_epoch_cache.assign(info.leader_epoch, leo)
        self.leader_epoch_start_offset = leo
        self.followers = {r: FollowerState(r) for r in self.replicas if r != self.broker_id}
        for follower in self.followers.values():
            follower.reset(leader_end_offset=leo, now_ms=now_ms, in_sync=follower.broker_id in self.isr)
        self.maybe_increment_high_watermark()
        return True

    def make_follower(self, info: PartitionStateInfo) -> bool:
        """Follow ``info.leader``. True when the leader or its epoch changed."""
        changed = self.leader != info.leader or self.leader_epoch != info.leader_epoch
        self._apply_state(info)
        self.followers = {}
        self.pending_isr = None
        return changed

    def _apply_state(self, info: PartitionStateInfo) -> None:
        self.replicas = info.replicas
        self.isr = info.isr
        self.pending_isr = None
        self.leader = info.leader
        self.leader_epoch = info.leader_epoch
        self.zk_version = info.zk_version
        self.controller_epoch = info.controller_epoch

    # The leader's high watermark.

    def maybe_increment_high_watermark(self) -> bool:
        """HW = the smallest log end offset over the (maximal) ISR; it only moves forward."""
        if self.leader != self.broker_id:
            return False
        new_hw = self.log.log_end_offset
        if new_hw == self.high_watermark:
            return False  # at the log end already (every idle partition a follower fetches)
        # The maximal ISR, without building it: this runs on every append and follower fetch.
        isr, pending = self.isr, self.pending_isr
        for follower in self.followers.values():
            if follower.log_end_offset < new_hw and (
                follower.broker_id in isr or (pending is not None and follower.broker_id in pending)
            ):
                new_hw = follower.log_end_offset
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            return True
        return False

    def lowest_isr_log_end_offset(self) -> int:
        """What the invariant checks against: HW may never be above this."""
        leo = self.log.log_end_offset
        for follower in self.followers.values():
            if follower.broker_id in self.isr:
                leo = min(leo, follower.log_end_offset)
        return leo

    # The ISR.

    def maybe_shrink_isr(self, *, now_ms: int, max_lag_ms: int) -> IsrChange | None:
        if not self.is_leader or self.pending_isr is not None:
            return None
        leo = self.log.log_end_offset
        lagging = [
            f
            for f in self.followers.values()
            if f.broker_id in self.isr
            and not f.is_caught_up(leader_end_offset=leo, now_ms=now_ms, max_lag_ms=max_lag_ms)
        ]
        if not lagging:
            return None
        out = {f.broker_id for f in lagging}
        new_isr = tuple(r for r in self.isr if r not in out)
        details = ", ".join(
            f"broker {f.broker_id} not caught up for {now_ms - f.last_caught_up_time_ms} ms (LEO {f.log_end_offset} < {leo})"
            for f in lagging
        )
        return self._propose(new_isr, f"replica.lag.time.max.ms={max_lag_ms} passed: {details}")

    def maybe_expand_isr(self, follower_id: BrokerId) -> IsrChange | None:
        if follower_id in self.isr or self.pending_isr is not None or not self.is_leader:
            return None
        follower = self.followers.get(follower_id)
        if follower is None:
            return None
        # Back in sync: it reached the HW, and it has what this leader wrote in its epoch.
        if (
            follower.log_end_offset < self.high_watermark
            or follower.log_end_offset < self.leader_epoch_start_offset
        ):
            return None
        new_isr = tuple(r for r in self.replicas if r in self.isr or r == follower_id)
        new_isr += tuple(r for r in self.isr if r not in new_isr)
        return self._propose(
            new_isr,
            f"broker {follower_id} caught up (LEO {follower.log_end_offset} >= HW {self.high_watermark})",
        )

    def _propose(self, new_isr: tuple[BrokerId, ...], reason: str) -> IsrChange:
        self.pending_isr = new_isr
        return IsrChange(
            tp=self.tp,
            old_isr=self.isr,
            new_isr=new_isr,
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            controller_epoch=self.controller_epoch,
            zk_version=self.zk_version,
            reason=reason,
        )

    def complete_isr_change(self, change: IsrChange, *, zk_version: int | None) -> bool:
        """The state znode write finished: adopt the ISR (True), or drop it when the write failed."""
        if self.pending_isr != change.new_isr or self.leader_epoch != change.leader_epoch:
            return False
        self.pending_isr = None
        if zk_version is None:
            return False
        self.isr = change.new_isr
        self.zk_version = zk_version
        return True

    # Produce and fetch at the leader.

    def append_records_to_leader(self, batches: bytes, *, acks: int, now_ms: int) -> AppendInfo:
        if not self.is_leader:
            raise NotLeaderOrFollower(f"broker {self.broker_id} is not the leader of {self.tp}")
        if acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicas(
                f"the ISR {list(self.isr)} of {self.tp} is smaller than min.insync.replicas={self.min_insync_replicas}"
            )
        info = self.log.append_as_leader(batches, leader_epoch=self.leader_epoch, now_ms=now_ms)
        self.maybe_increment_high_watermark()
        return info

    def check_enough_replicas_reached(self, required_offset: int) -> tuple[bool, KafkaError | None]:
        """For acks=all: done once the HW passed the batch; an error if we lost leadership or the ISR shrank."""
        if not self.is_leader:
            return True, NotLeaderOrFollower(
                f"broker {self.broker_id} lost leadership of {self.tp} before the ISR had it"
            )
        if self.high_watermark >= required_offset:
            if len(self.isr) >= self.min_insync_replicas:
                return True, None
            return True, NotEnoughReplicasAfterAppend(
                f"{self.tp} was written but its ISR {list(self.isr)} shrank below "
                f"min.insync.replicas={self.min_insync_replicas} before it was replicated"
            )
        return False, None

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(
                f"{self.tp}: the request's leader epoch {current_leader_epoch} is older than {self.leader_epoch}"
            )
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpoch(
                f"{self.tp}: the request's leader epoch {current_leader_epoch} is newer than {self.leader_epoch}"
            )

    def update_follower_fetch_state(
        self, follower_id: BrokerId, *, fetch_offset: int, log_start_offset: int, now_ms: int
    ) -> None:
        follower = self.followers.get(follower_id)
        if follower is None:
            raise NotLeaderOrFollower(f"broker {follower_id} is not a replica of {self.tp}")
        log = self.log
        leo = log.log_end_offset
        if fetch_offset > leo or fetch_offset < log.log_start_offset:
            raise OffsetOutOfRange(
                f"{self.tp}: follower {follower_id} fetches offset {fetch_offset}, the leader has "
                f"[{self.log.log_start_offset}, {leo})"
            )
        follower.update_fetch_state(
            fetch_offset=fetch_offset, log_start_offset=log_start_offset, now_ms=now_ms, leader_end_offset=leo
        )

    # The follower side.

    def append_as_follower(
        self, records: bytes, *, leader_high_watermark: int, leader_log_start_offset: int, now_ms: int
    ) -> int:
        """Append what the leader sent; learn its HW (never above our own end). Returns records appended."""
        log = self.log
        appended = 0
        if records:
            appended = log.append_as_follower(records, now_ms=now_ms).record_count
        leo = log.log_end_offset
        if leader_log_start_offset > log.log_start_offset:
            log.maybe_increment_log_start_offset(min(leader_log_start_offset, leo))
        self.high_watermark = max(log.log_start_offset, min(leader_high_watermark, leo))
        return appended

    def truncate_to(self, offset: int) -> int:
        """Drop our log from ``offset``; returns how many offsets went."""
        leo = self.log.log_end_offset
        if offset >= leo:
            return 0
        self.log.truncate_to(offset)
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        return leo - self.log.log_end_offset
