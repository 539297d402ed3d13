"""Lost records: every acknowledged record the cluster lost, for as long as the lab lives.

The timeline says when a loss was found, but scrolls on; this panel keeps the count, the offsets
and the newest lost records in full (key, value, acks, who was told it was stored), and stays after
the offsets are written again. Records Kafka removed on purpose (retention, compaction) are not
in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SHOWN = 10  # rows per partition; the rest are counted
TEXT_LIMIT = 40

TIP = (
    "Acknowledged: the producer was told the record is stored. Lost: the log no longer holds it at "
    "its offset (a leader without it took over, or its offset now holds another record). Records "
    "retention or compaction deleted on purpose are not counted."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LostRow:
    offset: int
    key: str
    value: str
    acks: str
    producer: str
    acked_label: str
    detected_label: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LostPartition:
    name: str  # "orders-0"
    count: int
    offsets: str  # "3..6, 9"
    rows: tuple[LostRow, ...]
    more: int  # lost records counted but not shown


@dataclass(frozen=True, slots=True, kw_only=True)
class LostRecords:
    total: int
    partitions: tuple[LostPartition, ...]
    tip: str = TIP


def lost_records(snap: Mapping[str, Any]) -> LostRecords:
    partitions = []
    for p in snap.get("lost_records") or ():
        rows = tuple(_row(r) for r in list(p.get("records") or ())[:SHOWN])
        partitions.append(
            LostPartition(
                name=f"{p['topic']}-{p['partition']}",
                count=int(p["count"]),
                offsets=str(p["offsets"]),
                rows=rows,
                more=max(0, int(p["count"]) - len(rows)),
            )
        )
    return LostRecords(total=sum(p.count for p in partitions), partitions=tuple(partitions))


def _row(r: Mapping[str, Any]) -> LostRow:
    return LostRow(
        offset=int(r["offset"]),
        key=_short(r.get("key")),
        value=_short(r.get("value")),
        acks=str(r.get("acks", "")),
        producer=str(r.get("producer", "")),
        acked_label=_seconds(r.get("acked_ms")),
        detected_label=_seconds(r.get("detected_ms")),
        why=str(r.get("why", "")),
    )


def _short(text: str | None) -> str:
    if text is None:
        return "null"
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def _seconds(ms: object) -> str:
    return f"{int(ms) / 1000:.3f} s" if isinstance(ms, int) else ""
