"""The rules that must hold after every step, and the checker that finds records lost.

Simulation tests call ``InvariantChecker.attach(cluster)`` so these run after
every event:

* a leader's high watermark is never above the log end offset of any replica
  in its ISR (what consumers can read, every ISR member has);
* one leader per leader epoch: no two brokers ever lead one partition in the
  same epoch;
* no acknowledged acks=all record is lost while unclean election is off and no
  broker lost its unflushed tail (Kafka's promise); where Kafka would lose
  data, ``lost_acknowledged`` says exactly which offsets went.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.ledger import AckedRecord, LostRecord
from lab.engine.records import iter_records

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster


class InvariantViolation(AssertionError):
    pass


def check_high_watermarks(cluster: Cluster) -> None:
    for broker in cluster.brokers.values():
        if not broker.alive:
            continue
        for tp, partition in broker.partitions.items():
            if not partition.is_leader:
                continue
            hw = partition.high_watermark
            if hw > partition.log_end_offset:
                raise InvalidHw(
                    f"{tp}: leader {broker.id}'s HW {hw} is above its own LEO {partition.log_end_offset}"
                )
            for replica in partition.isr:
                other = cluster.brokers.get(replica)
                if other is None or replica == broker.id:
                    continue
                op = other.partitions.get(tp)
                if op is None:
                    continue
                if op.log_end_offset < hw:
                    raise InvalidHw(
                        f"{tp}: leader {broker.id}'s HW {hw} is above ISR member {replica}'s LEO {op.log_end_offset}"
                    )


class InvalidHw(InvariantViolation):
    pass


class InvariantChecker:
    """Checks every invariant after each step; remembers who led which epoch."""

    def __init__(self, cluster: Cluster, *, check_durability: bool = True) -> None:
        self.cluster = cluster
        self.leaders: dict[tuple[TopicPartition, int], BrokerId] = {}
        self.check_durability = check_durability
        self.steps = 0

    @classmethod
    def attach(cls, cluster: Cluster, *, check_durability: bool = True) -> InvariantChecker:
        checker = cls(cluster, check_durability=check_durability)
        cluster.after_step.append(checker.check)
        return checker

    def check(self) -> None:
        self.steps += 1
        check_high_watermarks(self.cluster)
        self.check_one_leader_per_epoch()
        if self.check_durability:
            check_acked_below_leader_end(self.cluster)

    def check_one_leader_per_epoch(self) -> None:
        for broker in self.cluster.brokers.values():
            if not broker.alive:
                continue
            for tp, partition in broker.partitions.items():
                if not partition.is_leader:
                    continue
                key = (tp, partition.leader_epoch)
                seen = self.leaders.setdefault(key, broker.id)
                if seen != broker.id:
                    raise InvariantViolation(
                        f"{tp}: brokers {seen} and {broker.id} both led leader epoch {partition.leader_epoch}"
                    )


def check_acked_below_leader_end(cluster: Cluster) -> None:
    """Cheap, every step: each acks=all record is below its partition's current leader's log end."""
    for tp, highest in cluster.ledger.highest_acks_all.items():
        leader = cluster.leader_of(tp.topic, tp.partition)
        if leader is None:
            continue
        partition = cluster.brokers[leader].partitions[tp]
        if highest >= partition.log_end_offset:
            raise InvariantViolation(
                f"{tp}: acknowledged (acks=all) offset {highest} is not in leader {leader}'s log "
                f"(LEO {partition.log_end_offset})"
            )


def lost_acknowledged(
    cluster: Cluster, *, acks_all_only: bool = False, only: set[TopicPartition] | None = None
) -> dict[TopicPartition, list[int]]:
    """Acknowledged offsets the current leader no longer has, or holds a different record at.

    Offsets below the log start offset (removed by retention on purpose) are not lost, nor, on a
    compacted topic, records missing below the log end offset (the cleaner removed them). Partitions
    without a leader are skipped: their data may come back with their last ISR member. A query of
    the present only: ``detect_losses`` notes what it finds in the ledger for good.
    """
    return {tp: [r.offset for r in records] for tp, records in _missing(cluster, acks_all_only, only).items()}


def _missing(
    cluster: Cluster, acks_all_only: bool, only: set[TopicPartition] | None
) -> dict[TopicPartition, list[AckedRecord]]:
    lost: dict[TopicPartition, list[AckedRecord]] = {}
    for tp, acked in sorted(cluster.ledger.acked.items()):
        if only is not None and tp not in only:
            continue
        leader = cluster.leader_of(tp.topic, tp.partition)
        if leader is None:
            continue
        log = cluster.brokers[leader].partitions[tp].log
        wanted = {r.offset: r for r in acked.records() if not acks_all_only or r.acks == -1}
        if not wanted:
            continue
        start = max(min(wanted), log.log_start_offset)
        present: dict[int, tuple[bytes | None, bytes | None]] = {}
        offset = start
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20)
            if not data.records:
                break
            for record in iter_records(data.records):
                present[record.offset] = (record.key, record.value)
            if data.next_offset <= offset:
                break
            offset = data.next_offset
        end = log.log_end_offset
        gone = [
            r
            for o, r in sorted(wanted.items())
            if o >= log.log_start_offset
            and present.get(o) != (r.key, r.value)
            and not (log.config.compact and o not in present and o < end)
        ]
        if gone:
            lost[tp] = gone
    return lost


def detect_losses(cluster: Cluster, *, only: set[TopicPartition] | None = None) -> int:
    """Note in the ledger, for good, every acknowledged record the leaders no longer hold; how many are new."""
    ledger = cluster.ledger
    found = 0
    for tp, records in _missing(cluster, False, only).items():
        leader = cluster.leader_of(tp.topic, tp.partition)
        for rec in records:
            if ledger.is_noted(rec):
                continue
            ledger.lose(rec, detected_ms=cluster.now_ms, why=f"not in the log of the leader, broker {leader}")
            found += 1
    return found


def ranges(offsets: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``3..5, 9``."""
    out: list[str] = []
    start = prev = None
    for o in sorted(offsets):
        if start is None:
            start = prev = o
        elif prev is not None and o == prev + 1:
            prev = o
        else:
            out.append(f"{start}..{prev}" if start != prev else f"{start}")
            start = prev = o
    if start is not None:
        out.append(f"{start}..{prev}" if start != prev else f"{start}")
    return ", ".join(out)


class LossWatcher:
    """After each change of leader, finds the acknowledged records the new leader does not have; after
    every step, says in the journal which records were found lost (by it, or by the ledger when an
    offset that held an acknowledged record was acknowledged again with another)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.seq = 0

    def check(self) -> None:
        journal = self.cluster.journal
        if journal.last_seq != self.seq:
            events = journal.since(self.seq)
            self.seq = journal.last_seq
            if self.cluster.ledger.count:
                tps = {
                    TopicPartition(e.topic, e.partition)
                    for e in events
                    if e.kind == "became_leader" and e.topic is not None and e.partition is not None
                }
                if tps:
                    detect_losses(self.cluster, only=tps)
        if self.cluster.ledger.unannounced:
            self.announce()

    def announce(self) -> None:
        groups: dict[tuple[TopicPartition, str], list[LostRecord]] = {}
        for lost in self.cluster.ledger.take_unannounced():
            groups.setdefault((lost.record.tp, lost.why), []).append(lost)
        for (tp, why), found in groups.items():
            offsets = sorted(lost.record.offset for lost in found)
            kinds = sorted({"all" if lost.record.acks == -1 else str(lost.record.acks) for lost in found})
            leader = self.cluster.leader_of(tp.topic, tp.partition)
            self.cluster.journal.record(
                "records_lost",
                f"{len(found)} acknowledged record(s) of {tp} lost: offsets {ranges(offsets)} "
                f"(acks={'/'.join(kinds)}): {why}",
                topic=tp.topic,
                partition=tp.partition,
                broker=leader,
                offsets=offsets,
            )
        self.seq = self.cluster.journal.last_seq
