"""The aborted-transaction index: Kafka's ``TransactionIndex``, one ``<base>.txnindex`` per segment.

Each aborted transaction gets one entry in the index of the segment its abort marker went to, in
Kafka's format: 34 bytes, big-endian: version int16 (0), producerId int64, firstOffset int64,
lastOffset int64 (the marker's offset), lastStableOffset int64 (the LSO when the marker was
written). A read_committed fetch collects the entries of the segments from the one holding the
fetch offset on, whose transaction overlaps what it reads (lastOffset >= fetch offset,
firstOffset < the upper bound): the FetchResponse's ``aborted_transactions``, which the consumer
uses to drop aborted records. Like Kafka's, the file is made with its first entry.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

TXN_INDEX_SUFFIX = ".txnindex"
TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortedTxn:
    """One aborted transaction (Kafka's AbortedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            TXN_INDEX_VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


class CorruptTxnIndex(Exception):
    """A ``.txnindex`` file whose length is not a whole number of entries, or of another version."""


def decode_entries(data: bytes) -> list[AbortedTxn]:
    if len(data) % ENTRY_SIZE:
        raise CorruptTxnIndex(f"{len(data)} bytes is not a whole number of {ENTRY_SIZE}-byte entries")
    out = []
    for pos in range(0, len(data), ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != TXN_INDEX_VERSION:
            raise CorruptTxnIndex(f"entry at byte {pos} has version {version}, not {TXN_INDEX_VERSION}")
        out.append(AbortedTxn(producer_id=pid, first_offset=first, last_offset=last, last_stable_offset=lso))
    return out


class TransactionIndex:
    """The aborted transactions whose markers are in one segment, in memory and in its file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        if path.exists():
            try:
                self.entries = decode_entries(path.read_bytes())
            except CorruptTxnIndex:
                # Rebuilt by the replay that follows (the log replays what its snapshot does not cover).
                self.entries = []
                path.unlink(missing_ok=True)

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(
                f"aborted transaction ending at {txn.last_offset} is not after {self.entries[-1].last_offset}"
            )
        self.entries.append(txn)
        with open(self.path, "ab") as f:
            f.write(txn.encode())

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or past ``offset``."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) == len(self.entries):
            return
        self.entries = keep
        self._rewrite()

    def _rewrite(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(e.encode() for e in self.entries))
        os.replace(tmp, self.path)

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Kafka's collectAbortedTxns: the entries overlapping [fetch_offset, upper_bound)."""
        return [e for e in self.entries if e.last_offset >= fetch_offset and e.first_offset < upper_bound]

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self.entries = []
