"""A partition's producer state: Kafka's ProducerStateManager, for idempotent producers.

For every producer id that wrote to the partition the log keeps a ``ProducerStateEntry``: its
epoch and the metadata of its last five batches (first and last sequence, first and last offset).
The leader checks each idempotent batch against it before appending (Kafka's
``ProducerAppendInfo``): a retry of one of those five batches is a duplicate, answered with the
offset the original got and appended again never; a stale epoch is INVALID_PRODUCER_EPOCH; a gap
in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER. Followers rebuild the same state from the batches
they append, so a new leader knows what the old one knew.

The state survives restarts as Kafka keeps it: ``<offset>.snapshot`` files beside the segments,
written on every roll and on a clean shutdown, each holding every producer's last batch as of that
offset (Kafka's format: version int16, crc uint32 (CRC-32C of the rest), then an array of entries).
Opening a log loads the latest snapshot at or below the log end offset and replays the batches
after it; with none, the whole log. Truncation reloads the same way.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from lab.engine.control_records import Marker
from lab.engine.errors import InvalidProducerEpoch, OutOfOrderSequenceNumber, TransactionCoordinatorFenced
from lab.engine.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP, TRANSACTIONAL_MASK
from lab.engine.storage.txn_index import AbortedTxn

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN: why max.in.flight is at most 5
INT32_MAX = 2**31 - 1
_HEAD = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(
    ">qhiqiqiq"
)  # pid, epoch, last seq, last offset, offset delta, timestamp, coord. epoch, txn first
_CRC_FROM = 6  # the CRC covers everything after the version and itself


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap at Integer.MAX_VALUE to 0, as Kafka's DefaultRecordBatch.incrementSequence."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def _in_sequence(last: int, nxt: int) -> bool:
    return nxt == last + 1 or (nxt == 0 and last == INT32_MAX)


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchMetadata:
    """One batch a producer wrote (Kafka's BatchMetadata)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return increment_sequence(self.last_seq, -self.offset_delta) if self.last_seq >= 0 else NO_SEQUENCE

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True, kw_only=True)
class ProducerStateEntry:
    """What the partition knows of one producer id (Kafka's ProducerStateEntry)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=deque)
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    # The first offset of its open transaction (transactions will set it; the LSO stops there).
    current_txn_first_offset: int | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            batches=deque(self.batches),
            coordinator_epoch=self.coordinator_epoch,
            last_timestamp=self.last_timestamp,
            current_txn_first_offset=self.current_txn_first_offset,
        )

    def add_unsequenced(self, epoch: int, timestamp: int) -> None:
        """A batch without a sequence (a coordinator's transactional append): only its epoch counts."""
        if epoch != self.producer_epoch:
            self.producer_epoch = epoch
            self.batches.clear()
        self.last_timestamp = timestamp

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        if epoch != self.producer_epoch:
            # A new epoch starts a new history (Kafka's maybeUpdateProducerEpoch).
            self.producer_epoch = epoch
            self.batches.clear()
        self.batches.append(
            BatchMetadata(
                last_seq=last_seq, last_offset=last_offset, offset_delta=offset_delta, timestamp=timestamp
            )
        )
        if len(self.batches) > BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.last_timestamp = timestamp


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerView:
    """One producer as the snapshot and the partition detail show it."""

    producer_id: int
    producer_epoch: int
    first_sequence: int  # of the batches the leader remembers
    last_sequence: int
    last_offset: int
    batches: int
    current_txn_first_offset: int | None  # its open transaction's first offset here, if any


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the ``.snapshot`` files in a partition directory, ascending."""
    out = []
    for name in os.listdir(directory):
        if name.endswith(SNAPSHOT_SUFFIX):
            stem = name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                out.append(int(stem))
    return sorted(out)


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """Kafka's producer snapshot bytes (version 1): every producer's last batch."""
    body = bytearray()
    count = 0
    for entry in entries:
        last = entry.batches[-1] if entry.batches else None
        body += _ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            last.last_seq if last else NO_SEQUENCE,
            last.last_offset if last else -1,
            last.offset_delta if last else 0,
            entry.last_timestamp,
            entry.coordinator_epoch,
            -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
        )
        count += 1
    head = bytearray(_HEAD.pack(SNAPSHOT_VERSION, 0, count))
    crc = crc32c.crc32c(bytes(body), crc32c.crc32c(bytes(head[_CRC_FROM:])))
    struct.pack_into(">I", head, 2, crc)
    return bytes(head + body)


class CorruptSnapshot(Exception):
    """A snapshot file that is short, of another version, or fails its CRC."""


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    if len(data) < _HEAD.size:
        raise CorruptSnapshot(f"{len(data)} bytes, fewer than the {_HEAD.size} of the header")
    version, crc, count = _HEAD.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshot(f"version {version}, not {SNAPSHOT_VERSION}")
    if crc32c.crc32c(data[_CRC_FROM:]) != crc:
        raise CorruptSnapshot("the CRC does not match")
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptSnapshot(f"{count} entries do not fit {len(data)} bytes")
    entries = []
    for i in range(count):
        pid, epoch, seq, offset, delta, ts, coord, txn = _ENTRY.unpack_from(
            data, _HEAD.size + i * _ENTRY.size
        )
        entry = ProducerStateEntry(
            producer_id=pid,
            producer_epoch=epoch,
            coordinator_epoch=coord,
            last_timestamp=ts,
            current_txn_first_offset=None if txn < 0 else txn,
        )
        if offset >= 0:
            entry.batches.append(
                BatchMetadata(last_seq=seq, last_offset=offset, offset_delta=delta, timestamp=ts)
            )
        entries.append(entry)
    return entries


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedTxn:
    """A transaction whose marker is written (Kafka's CompletedTxn): first data offset to marker offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    """Every producer of one partition replica, its open transactions, and its snapshot files."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name  # <topic>-<partition>, for messages
        self.producers: dict[int, ProducerStateEntry] = {}
        # Open transactions: producer id -> the offset of its first record in the transaction.
        self.ongoing: dict[int, int] = {}
        # Completed transactions whose marker may still be above the high watermark: the LSO waits
        # for the marker to be replicated, as Kafka's unreplicatedTxns.
        self.unreplicated: list[CompletedTxn] = []

    # --- the leader's checks (Kafka's ProducerAppendInfo, origin client) ------------------------

    def check_append(
        self,
        pending: dict[int, ProducerStateEntry],
        producer_id: int,
        epoch: int,
        first_seq: int,
        offset_delta: int,
        offset: int,
    ) -> BatchMetadata | None:
        """Check one idempotent batch before the leader appends it; the original if it is a duplicate.

        ``pending`` holds the entries this append changes (the request's earlier batches count);
        InvalidProducerEpoch or OutOfOrderSequenceNumber, with Kafka's messages, refuse it.
        """
        entry = pending.get(producer_id)
        if entry is None:
            current = self.producers.get(producer_id)
            entry = current.copy() if current is not None else ProducerStateEntry(producer_id=producer_id)
            pending[producer_id] = entry
        if first_seq == NO_SEQUENCE:
            # A coordinator's transactional append (TxnOffsetCommit): its epoch is checked, never a
            # sequence (Kafka checks sequences of clients' appends only).
            if epoch < entry.producer_epoch:
                raise InvalidProducerEpoch(
                    f"Epoch of producer {producer_id} at offset {offset} in {self.name} is {epoch}, "
                    f"which is smaller than the last seen epoch {entry.producer_epoch}"
                )
            return None
        last_seq = increment_sequence(first_seq, offset_delta)
        duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
        if duplicate is not None:
            return duplicate
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpoch(
                f"Epoch of producer {producer_id} at offset {offset} in {self.name} is {epoch}, "
                f"which is smaller than the last seen epoch {entry.producer_epoch}"
            )
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceNumber(
                    f"Invalid sequence number for new epoch of producer {producer_id} at offset {offset} in "
                    f"partition {self.name}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{entry.producer_epoch} (current producer epoch)"
                )
            # A producer the partition has no state for may start at any sequence (Kafka 3.x, KIP-360:
            # its earlier records may have gone with retention); a new epoch starts at 0.
        elif not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceNumber(
                f"Out of order sequence number for producer {producer_id} at offset {offset} in partition "
                f"{self.name}: {first_seq} (incoming seq. number), {entry.last_seq} (current end sequence number)"
            )
        return None

    def commit(self, pending: dict[int, ProducerStateEntry]) -> None:
        self.producers.update(pending)
        for pid, entry in pending.items():
            if entry.current_txn_first_offset is not None:
                self.ongoing[pid] = entry.current_txn_first_offset

    # --- transactions (Kafka's ProducerStateManager: ongoing transactions, the LSO) ---------------

    def check_marker(self, marker: Marker) -> None:
        """The leader's checks before it writes a marker (Kafka's appendEndTxnMarker)."""
        entry = self.producers.get(marker.producer_id)
        if entry is None:
            return
        if marker.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpoch(
                f"{self.name}: the marker for producer {marker.producer_id} has epoch {marker.producer_epoch}, "
                f"older than the last seen epoch {entry.producer_epoch}"
            )
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"{self.name}: the marker for producer {marker.producer_id} comes from coordinator epoch "
                f"{marker.coordinator_epoch}, older than {entry.coordinator_epoch}"
            )

    def complete_txn(self, marker: Marker, offset: int) -> AbortedTxn | None:
        """A marker at ``offset`` ends the producer's open transaction; an aborted one's index entry."""
        pid = marker.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(producer_id=pid)
        if marker.producer_epoch != entry.producer_epoch:
            # A marker written after a fence carries the bumped epoch: the old one is refused from now on.
            entry.producer_epoch = marker.producer_epoch
            entry.batches.clear()
        entry.coordinator_epoch = marker.coordinator_epoch
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = None
        self.ongoing.pop(pid, None)
        if first is None:
            return None  # a marker for a transaction that wrote nothing here (or was aborted before)
        self.unreplicated.append(
            CompletedTxn(producer_id=pid, first_offset=first, last_offset=offset, aborted=not marker.commit)
        )
        if marker.commit:
            return None
        others = [o for o in self.ongoing.values() if o < offset]
        return AbortedTxn(
            producer_id=pid,
            first_offset=first,
            last_offset=offset,
            last_stable_offset=min(others) if others else offset + 1,
        )

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of a transaction not yet decided below ``high_watermark`` (None: none)."""
        first: int | None = min(self.ongoing.values()) if self.ongoing else None
        if self.unreplicated:
            # Markers at or above the HW: their transactions stay undecided until it passes them.
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]
            for txn in self.unreplicated:
                if first is None or txn.first_offset < first:
                    first = txn.first_offset
        return first

    # --- every replica: learning from appended batches --------------------------------------------

    def update(self, fields: tuple[int, ...]) -> None:
        """Learn from one appended batch's header fields (a follower's append, a replay)."""
        producer_id = fields[9]
        if producer_id < 0:
            return
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id=producer_id)
        delta = fields[6]
        if fields[11] == NO_SEQUENCE:
            entry.add_unsequenced(fields[10], fields[8])
        else:
            entry.add_batch(
                fields[10], increment_sequence(fields[11], delta), fields[0] + delta, delta, fields[8]
            )
        if fields[5] & TRANSACTIONAL_MASK and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = fields[0]
            self.ongoing[producer_id] = fields[0]

    # --- snapshots ------------------------------------------------------------------------------------

    def take_snapshot(self, offset: int) -> None:
        """Write ``<offset>.snapshot``: the state as of every offset below ``offset``."""
        path = snapshot_path(self.directory, offset)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(encode_snapshot(self.producers.values()))
        os.replace(tmp, path)

    def reload(self, log_start_offset: int, log_end_offset: int) -> int:
        """Drop snapshots past the log end, load the latest one left: the offset to replay from."""
        self.producers = {}
        offsets = snapshot_offsets(self.directory)
        for offset in offsets:
            if offset > log_end_offset:
                snapshot_path(self.directory, offset).unlink(missing_ok=True)
        for offset in reversed([o for o in offsets if o <= log_end_offset]):
            if offset < log_start_offset:
                break
            path = snapshot_path(self.directory, offset)
            try:
                entries = decode_snapshot(path.read_bytes())
            except (CorruptSnapshot, OSError):
                path.unlink(missing_ok=True)  # as Kafka: a bad snapshot is deleted and an older one tried
                continue
            self.producers = {e.producer_id: e for e in entries}
            self._reset_transactions()
            return offset
        self._reset_transactions()
        return log_start_offset

    def _reset_transactions(self) -> None:
        self.ongoing = {
            e.producer_id: e.current_txn_first_offset
            for e in self.producers.values()
            if e.current_txn_first_offset is not None
        }
        self.unreplicated = []

    def delete_snapshots_below(self, offset: int) -> None:
        for snap in snapshot_offsets(self.directory):
            if snap < offset:
                snapshot_path(self.directory, snap).unlink(missing_ok=True)

    def clear(self) -> None:
        """Start empty (the log was emptied): no producer, no snapshot."""
        self.producers = {}
        self._reset_transactions()
        self.delete_snapshots_below(2**63 - 1)

    def views(self) -> list[ProducerView]:
        return [
            ProducerView(
                producer_id=e.producer_id,
                producer_epoch=e.producer_epoch,
                first_sequence=e.first_seq,
                last_sequence=e.last_seq,
                last_offset=e.last_offset,
                batches=len(e.batches),
                current_txn_first_offset=e.current_txn_first_offset,
            )
            for e in sorted(self.producers.values(), key=lambda e: e.producer_id)
        ]
