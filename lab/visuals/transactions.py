"""The Transactions view: each transactional id as its coordinator holds it, and each idempotent
producer's sequence numbers per partition as the partitions' leaders hold them.

Drawn from the snapshot only (the coordinators' metadata, the leaders' producer state, the dashboard's
producers): nothing is copied aside for the picture. An open transaction's timeout is counted down in
whole seconds of virtual time (the runtime's change key moves with it, so the page gets a frame each
second while a transaction is open).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lab.visuals.glossary import tip

STATE_TOPIC = "__transaction_state"

# Kafka's coordinator states, in words (TransactionState in Kafka's coordinator).
MEANING: Mapping[str, str] = {
    "Empty": "a producer id and epoch, no transaction open",
    "Ongoing": "a transaction is open: its partitions were added with AddPartitionsToTxn; the coordinator "
    "aborts it if it stays open longer than transaction.timeout.ms",
    "PrepareCommit": "EndTxn(commit) is written to __transaction_state: the transaction commits whatever "
    "happens now; the coordinator writes the COMMIT markers to its partitions",
    "PrepareAbort": "EndTxn(abort), or a timeout, is written to __transaction_state: the coordinator writes "
    "the ABORT markers to its partitions",
    "CompleteCommit": "every partition has its COMMIT marker: read_committed consumers read the records",
    "CompleteAbort": "every partition has its ABORT marker: read_committed consumers skip the records",
    "PrepareEpochFence": "a newer producer called InitProducerId with this transactional.id while a "
    "transaction was open: the coordinator aborts it under a bumped epoch, fencing the old producer",
    "Dead": "the transactional id expired (transactional.id.expiration.ms)",
}
OPEN = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


@dataclass(frozen=True, slots=True, kw_only=True)
class Holder:
    """A dashboard producer that holds a transactional id, with Kafka's client state."""

    name: str
    state: str  # Kafka's TransactionManager state: READY, IN_TRANSACTION, FATAL_ERROR...
    producer_epoch: int
    error: str | None  # PRODUCER_FENCED once a newer producer took the id
    committed: int
    aborted: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnRow:
    transactional_id: str
    state: str  # the coordinator's (Kafka's TransactionState)
    meaning: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[str, ...]
    coordinator: int
    state_partition: str  # __transaction_state-<n>, which the coordinator leads
    timeout_ms: int
    aborts_in_s: int | None  # while Ongoing: whole seconds of virtual time until the coordinator aborts it
    pending: str  # a state write or the markers in flight
    holders: tuple[Holder, ...]

    @property
    def open(self) -> bool:
        return self.state in OPEN


@dataclass(frozen=True, slots=True, kw_only=True)
class Sequence:
    partition: str
    producer_epoch: int
    last_sequence: int
    last_offset: int
    in_transaction: bool  # an open transaction of this producer holds the partition's LSO back


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerLine:
    producer_id: int
    transactional_id: str | None  # None: idempotent only
    partitions: tuple[Sequence, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionsView:
    transactions: tuple[TxnRow, ...]
    producers: tuple[ProducerLine, ...]
    tips: tuple[tuple[str, str], ...]

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)

    @property
    def empty(self) -> bool:
        return not self.transactions and not self.producers


TIPS = (
    "transactional_id",
    "txn_state",
    "txn_coordinator",
    "txn_timeout",
    "producer_fenced",
    "producer_state",
)


def _aborts_in_s(meta: Mapping[str, Any], now_ms: int) -> int | None:
    deadline = meta.get("deadline_ms")
    if deadline is None:
        return None
    return max(0, -(-(int(deadline) - now_ms) // 1000))  # rounded up: 0 only once due


def _holders(snapshot: Mapping[str, Any]) -> dict[str, list[Holder]]:
    out: dict[str, list[Holder]] = {}
    for client in snapshot.get("clients") or ():
        txn = client.get("transaction")
        if not txn or client.get("state") == "closed":
            continue
        out.setdefault(str(txn["transactional_id"]), []).append(
            Holder(
                name=str(client["name"]),
                state=str(txn["state"]),
                producer_epoch=int(txn.get("producer_epoch", -1)),
                error=txn.get("error"),
                committed=int(txn.get("committed", 0)),
                aborted=int(txn.get("aborted", 0)),
            )
        )
    return out


def _sequences(snapshot: Mapping[str, Any]) -> dict[int, list[Sequence]]:
    """Each producer id's last sequence per partition, from each partition's leader (else a replica)."""
    out: dict[int, list[Sequence]] = {}
    for topic, t in sorted((snapshot.get("topics") or {}).items()):
        for part in t.get("partitions") or ():
            logs = part.get("logs") or {}
            source = logs.get(str(part.get("leader"))) or next(iter(logs.values()), None)
            for p in (source or {}).get("producers") or ():
                out.setdefault(int(p["producer_id"]), []).append(
                    Sequence(
                        partition=f"{topic}-{part['partition']}",
                        producer_epoch=int(p["producer_epoch"]),
                        last_sequence=int(p["last_sequence"]),
                        last_offset=int(p["last_offset"]),
                        in_transaction=p.get("txn_first_offset") is not None,
                    )
                )
    return out


def transactions_view(snapshot: Mapping[str, Any], config: Mapping[str, str]) -> TransactionsView:
    now = int(snapshot.get("time_ms") or 0)
    holders = _holders(snapshot)
    rows = []
    ids_of: dict[int, str] = {}
    for transactional_id, meta in sorted((snapshot.get("transactions") or {}).items()):
        state = str(meta["state"])
        ids_of[int(meta["producer_id"])] = transactional_id
        rows.append(
            TxnRow(
                transactional_id=transactional_id,
                state=state,
                meaning=MEANING.get(state, state),
                producer_id=int(meta["producer_id"]),
                producer_epoch=int(meta["producer_epoch"]),
                partitions=tuple(f"{topic}-{partition}" for topic, partition in meta.get("partitions") or ()),
                coordinator=int(meta["coordinator"]),
                state_partition=f"{STATE_TOPIC}-{meta.get('state_partition', '?')}",
                timeout_ms=int(meta["timeout_ms"]),
                aborts_in_s=_aborts_in_s(meta, now),
                pending=str(meta.get("pending") or ""),
                holders=tuple(holders.get(transactional_id, ())),
            )
        )
    producers = tuple(
        ProducerLine(producer_id=pid, transactional_id=ids_of.get(pid), partitions=tuple(seqs))
        for pid, seqs in sorted(_sequences(snapshot).items())
    )
    return TransactionsView(
        transactions=tuple(rows),
        producers=producers,
        tips=tuple((marker, tip(marker, config)) for marker in TIPS),
    )
