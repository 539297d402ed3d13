"""The leader epoch cache (KIP-101): which leader epoch wrote which range of offsets.

Each entry is ``(epoch, start_offset)``: the first offset written in that epoch. A follower
that becomes a follower asks the leader "where does my latest epoch end on your log?"
(OffsetsForLeaderEpoch) and truncates there, instead of to its high watermark; this closes
KIP-101's two data-loss cases. The cache is persisted to the partition directory's
``leader-epoch-checkpoint`` on every change, as Kafka's LeaderEpochFileCache does.
"""

from __future__ import annotations

from pathlib import Path

from lab.engine.errors import IllegalArgument
from lab.engine.storage.checkpoints import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochEntry", "LeaderEpochCache"]


class LeaderEpochCache:
    """Entries in increasing epoch and start offset, loaded from and saved to the checkpoint file."""

    def __init__(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        self._checkpoint = checkpoint
        self._entries: list[EpochEntry] = []
        for entry in checkpoint.read():
            # Tolerate a hand-edited or old file the way assign would: keep epochs and offsets monotonic.
            self._assign(entry.epoch, entry.start_offset)

    @classmethod
    def for_partition_dir(cls, partition_dir: Path) -> LeaderEpochCache:
        return cls(LeaderEpochCheckpointFile(Path(partition_dir) / LEADER_EPOCH_CHECKPOINT))

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def _flush(self) -> None:
        self._checkpoint.write(self._entries)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` started at ``start_offset``; True when the cache changed.

        As Kafka: a repeat of the latest epoch at the same or a later offset changes nothing;
        otherwise every entry with an epoch >= ``epoch`` or a start offset >= ``start_offset``
        is dropped first, so epochs and start offsets both keep increasing.
        """
        if epoch < 0 or start_offset < 0:
            raise IllegalArgument(
                f"leader epoch {epoch} and start offset {start_offset} must be non-negative"
            )
        latest = self._entries[-1] if self._entries else None
        if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
            return False
        self._assign(epoch, start_offset)
        self._flush()
        return True

    def _assign(self, epoch: int, start_offset: int) -> None:
        entries = self._entries
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch=epoch, start_offset=start_offset))

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch, with Kafka's semantics.

        - the latest epoch ends at the log end offset;
        - an older epoch ends where the next higher epoch starts, and the answer names the
          largest epoch <= the requested one (the requested epoch may never have been seen here);
        - an epoch older than every entry ends where the first entry starts (the history before
          it was deleted with old segments; Kafka answers this way since KAFKA-7415);
        - an undefined epoch, an empty cache, or an epoch above the latest: (-1, -1).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for entry in self._entries:
            if entry.epoch > requested_epoch:
                break
            floor = entry
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch that wrote ``offset``: the last entry starting at or below it."""
        result = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            result = entry.epoch
        return result

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        if end_offset >= 0 and self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries = [e for e in self._entries if e.start_offset < end_offset]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget history below ``start_offset`` (the log start moved there).

        The epoch in force at ``start_offset`` now starts there.
        """
        removed = [e for e in self._entries if e.start_offset <= start_offset]
        if not removed:
            return
        kept = [e for e in self._entries if e.start_offset > start_offset]
        entries = [EpochEntry(epoch=removed[-1].epoch, start_offset=start_offset), *kept]
        if entries != self._entries:
            self._entries = entries
            self._flush()

    def clear(self) -> None:
        if self._entries:
            self._entries = []
            self._flush()
