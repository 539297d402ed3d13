"""A follower's replica fetcher: one per leader broker, pulling every partition it follows there.

A partition added here first settles where its log should end (KIP-101: ask
the leader where our latest leader epoch ended, then truncate to that), then
fetches from its log end offset, appends what comes back, and learns the
leader's high watermark, one round late as in Kafka. In fast mode the next
fetch leaves at once and waits at the leader for data (long poll); the lab's
``lab.replica.fetch.pace.ms`` spaces fetches out so a class can watch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lab.engine.errors import KafkaError
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.protocol import (
    EpochEndOffset,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from lab.engine.scheduler import Scheduler, Timer

if TYPE_CHECKING:
    from lab.engine.broker import Broker


@dataclass(slots=True)
class FetchState:
    leader_epoch: int
    truncating: bool
    failed_until_ms: int = 0


class ReplicaFetcher:
    def __init__(self, broker: Broker, leader: BrokerId) -> None:
        self.broker = broker
        self.leader = leader
        self.partitions: dict[TopicPartition, FetchState] = {}
        self._in_flight = False
        self._timer: Timer | None = None
        self._stopped = False
        self.last_error = ""

    # Membership.

    def add(self, tp: TopicPartition, *, leader_epoch: int, truncate: bool) -> None:
        self.partitions[tp] = FetchState(leader_epoch=leader_epoch, truncating=truncate)
        self._kick(0)

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    def stop(self) -> None:
        self._stopped = True
        self.partitions.clear()
        Scheduler.cancel(self._timer)

    # The loop.

    def _kick(self, delay_ms: int) -> None:
        if self._stopped or self._in_flight or self._timer is not None:
            return
        self._timer = self.broker.later(delay_ms, self._run, label=f"fetcher {self.broker.id}<-{self.leader}")

    def _run(self) -> None:
        self._timer = None
        if self._stopped or self._in_flight or not self.partitions or not self.broker.alive:
            return
        for state in self.partitions.values():
            if state.truncating:  # rare (after a leader change): no dict built on every round
                self._send_epoch_query({tp: s for tp, s in self.partitions.items() if s.truncating})
                return
        self._send_fetch()

    def _timeout_ms(self) -> int:
        return self.broker.config.int("replica.socket.timeout.ms")

    def _send_epoch_query(self, truncating: dict[TopicPartition, FetchState]) -> None:
        asks: dict[TopicPartition, tuple[int, int]] = {}
        for tp, state in truncating.items():
            partition = self.broker.partitions.get(tp)
            if partition is None:
                continue
            latest = partition.log.leader_epoch_cache.latest_epoch
            if latest is None:
                # Nothing ever written here: nothing to truncate.
                state.truncating = False
                continue
            asks[tp] = (state.leader_epoch, latest)
        if not asks:
            self._kick(0)
            return
        self._in_flight = True
        self.broker.endpoint.request(
            self.leader,
            OffsetsForLeaderEpochRequest(replica_id=self.broker.id, partitions=asks),
            lambda r: self._on_epochs(asks, r),
            timeout_ms=self._timeout_ms(),
        )

    def _on_epochs(self, asks: dict[TopicPartition, tuple[int, int]], response: object) -> None:
        self._in_flight = False
        if self._stopped:
            return
        if isinstance(response, KafkaError):
            self._backoff(f"OffsetsForLeaderEpoch to broker {self.leader} failed: {response}")
            return
        assert isinstance(response, OffsetsForLeaderEpochResponse)
        failed = False
        for tp, answer in response.partitions.items():
            state = self.partitions.get(tp)
            partition = self.broker.partitions.get(tp)
            if state is None or partition is None or not state.truncating:
                continue
            if answer.error is not None:
                failed = True  # asked again after the backoff, unless the controller moves us first
                continue
            self._truncate_to_epoch_end(tp, asks[tp][1], answer)
            state.truncating = False
        self._kick(self.broker.config.int("replica.fetch.backoff.ms") if failed else 0)

    def _truncate_to_epoch_end(self, tp: TopicPartition, asked_epoch: int, answer: EpochEndOffset) -> None:
        partition = self.broker.partitions[tp]
        log = partition.log
        if answer.end_offset < 0:
            # The leader knows no epoch this old: fall back to our high watermark.
            self.broker.truncate(
                partition, partition.high_watermark, f"leader {self.leader} knows no epoch <= {asked_epoch}"
            )
            return
        target = min(answer.end_offset, log.log_end_offset)
        why = f"leader {self.leader} says epoch {answer.leader_epoch} ends at offset {answer.end_offset}"
        if answer.leader_epoch < asked_epoch:
            # The leader never had our latest epoch: end where that older epoch ends here too.
            _, ours = log.leader_epoch_cache.end_offset_for(answer.leader_epoch, log.log_end_offset)
            if ours >= 0:
                target = min(target, ours)
        self.broker.truncate(partition, target, f"KIP-101: {why}")

    def _send_fetch(self) -> None:
        broker = self.broker
        now = broker.now_ms
        hosted = broker.partitions
        wanted: dict[TopicPartition, FetchPartition] = {}
        max_bytes = broker.config.int("replica.fetch.max.bytes")
        for tp, state in self.partitions.items():
            partition = hosted.get(tp)
            if partition is None or state.failed_until_ms > now:
                continue
            log = partition.log
            wanted[tp] = FetchPartition(
                fetch_offset=log.log_end_offset,
                current_leader_epoch=state.leader_epoch,
                log_start_offset=log.log_start_offset,
                max_bytes=max_bytes,
            )
        if not wanted:
            self._kick(self.broker.config.int("replica.fetch.backoff.ms"))
            return
        self._in_flight = True
        request = FetchRequest(
            replica_id=self.broker.id,
            max_wait_ms=self.broker.config.int("replica.fetch.wait.max.ms"),
            min_bytes=1,
            partitions=wanted,
        )
        self.broker.endpoint.request(
            self.leader, request, lambda r: self._on_fetch(wanted, r), timeout_ms=self._timeout_ms()
        )

    def _on_fetch(self, asked: dict[TopicPartition, FetchPartition], response: object) -> None:
        self._in_flight = False
        if self._stopped:
            return
        if isinstance(response, KafkaError):
            self._backoff(f"fetch from broker {self.leader} failed: {response}")
            return
        assert isinstance(response, FetchResponse)
        now = self.broker.now_ms
        states, hosted = self.partitions, self.broker.partitions
        for tp, data in response.partitions.items():
            state = states.get(tp)
            partition = hosted.get(tp)
            if state is None or partition is None:
                continue  # removed while the fetch travelled
            log_end = partition.log.log_end_offset
            if log_end != asked[tp].fetch_offset:
                continue  # moved on (truncated) while the fetch travelled
            if data.error is not None:
                self._on_partition_error(tp, state, data)
                continue
            if (
                not data.records
                and data.high_watermark == partition.high_watermark <= log_end
                and data.log_start_offset <= partition.log.log_start_offset <= data.high_watermark
            ):
                continue  # nothing new (the other partitions of a fetch woken by one): nothing to do
            try:
                partition.append_as_follower(
                    data.records,
                    leader_high_watermark=data.high_watermark,
                    leader_log_start_offset=data.log_start_offset,
                    now_ms=now,
                )
            except KafkaError as exc:
                self.broker.journal(
                    "fetch_error",
                    f"broker {self.broker.id} could not append {tp} from broker {self.leader}: {exc}",
                )
                state.failed_until_ms = now + self.broker.config.int("replica.fetch.backoff.ms")
        pace = self.broker.config.int("lab.replica.fetch.pace.ms")
        if pace == 0 and self._timer is None:
            self._run()  # as Kafka's fetcher thread loops: the next fetch leaves with this answer
        else:
            self._kick(pace)

    def _on_partition_error(self, tp: TopicPartition, state: FetchState, data: FetchPartitionData) -> None:
        partition = self.broker.partitions[tp]
        now = self.broker.now_ms
        if data.error == "OFFSET_OUT_OF_RANGE" and data.log_end_offset >= 0:
            if partition.log_end_offset > data.log_end_offset:
                # The leader has less than we do (an unclean election, or no epochs to compare).
                self.broker.truncate(
                    partition,
                    data.log_end_offset,
                    f"leader {self.leader} ends at {data.log_end_offset}, before us",
                )
                return
            if partition.log_end_offset < data.log_start_offset:
                before = partition.log_end_offset
                partition.log.truncate_fully_and_start_at(data.log_start_offset)
                partition.high_watermark = data.log_start_offset
                self.broker.journal(
                    "truncated",
                    f"broker {self.broker.id} restarts {tp} at the leader's log start offset {data.log_start_offset} "
                    f"(it was at {before}; retention already removed what it lacked)",
                    topic=tp.topic,
                    partition=tp.partition,
                )
                return
        # NOT_LEADER, FENCED or UNKNOWN epoch: the controller's LeaderAndIsr will sort us out.
        state.failed_until_ms = now + self.broker.config.int("replica.fetch.backoff.ms")

    def _backoff(self, why: str) -> None:
        self.last_error = why
        self._kick(self.broker.config.int("replica.fetch.backoff.ms"))
