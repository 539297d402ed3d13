"""The partition log: each replica's log as a row of offset cells, with its markers.

Rows of one partition share one window of offsets, so the replicas line up and a
student sees at a glance which follower lags. Each row marks the log start offset
("log start": not "LSO", which in Kafka is the last stable offset of transactions), the
high watermark (HW) and the log end offset (LEO); the records between the HW and the LEO
are drawn as written but not yet visible to consumers. A partition whose ISR is smaller
than its topic's min.insync.replicas (the topic's override, else the broker's) is marked:
acks=all writes to it fail. Fetches in
flight between the replicas are drawn where they are on their way, with the time
left to travel so the page can animate them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lab.visuals.clock import clock_label
from lab.visuals.cluster_map import under_min_isr
from lab.visuals.glossary import effective_value, tip

WINDOW = 24  # offset cells drawn per row
ROOM = 2  # empty cells after the longest log: where the next records go


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    """Log start, HW or LEO (or several where they coincide), at the left edge of cell ``at``."""

    at: int
    label: str  # "HW LEO"
    kinds: str  # css classes: "start hw leo"
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaLog:
    broker: int
    role: str  # leader | follower | none
    online: bool
    in_isr: bool
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    last_stable_offset: int  # below the HW while a transaction is open
    leader_epoch: int
    # One letter per offset in the window: d deleted, c committed, u uncommitted, e empty; a commit
    # marker x, an abort marker a (control batches of transactions).
    cells: str
    markers: tuple[Marker, ...]
    behind: int  # records behind the leader's log end
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Flight:
    id: int
    kind: str
    src: int
    dst: int
    response: bool
    src_row: int
    dst_row: int
    progress: float  # 0 at the sender, 1 at the receiver
    remaining_s: float | None  # wall seconds left at the lab's speed; None while the clock is paused
    label: str

    @property
    def y_now(self) -> float:
        """Where it is now, in replica rows (row 0 is the first replica)."""
        return round(self.src_row + (self.dst_row - self.src_row) * self.progress, 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerRow:
    """An idempotent producer as the leader's producer state knows it."""

    producer_id: int
    producer_epoch: int
    first_sequence: int  # of the batches kept to recognise a retry (the last five)
    last_sequence: int
    last_offset: int
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLog:
    topic: str
    partition: int
    leader: int | None
    leader_epoch: int
    start: int  # the first offset in the window
    end: int  # one past the last
    earlier: int  # offsets before the window that some replica still keeps
    replicas: tuple[ReplicaLog, ...]
    flights: tuple[Flight, ...]
    min_insync_replicas: int  # the topic's effective value
    under_min_isr: bool  # an online partition whose ISR is smaller: acks=all writes fail
    min_isr_title: str
    producers: tuple[ProducerRow, ...] = ()  # the leader's producer state (else a replica's)

    @property
    def axis(self) -> tuple[tuple[int, int], ...]:
        """(cell index, offset) for the labelled offsets: every fifth."""
        return tuple((i, o) for i, o in enumerate(range(self.start, self.end)) if o % 5 == 0)

    @property
    def width(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicLog:
    topic: str
    internal: bool
    partitions: tuple[PartitionLog, ...]
    min_insync_replicas: int  # the topic's override, else the broker's
    min_isr_override: bool  # the topic sets its own
    tips: tuple[tuple[str, str], ...]  # the markers' tooltips, with this topic's own config values

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)

    @property
    def under_min_isr(self) -> int:
        return sum(p.under_min_isr for p in self.partitions)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLogs:
    topics: tuple[TopicLog, ...]
    tips: tuple[tuple[str, str], ...]

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)

    def topic(self, name: str) -> TopicLog | None:
        return next((t for t in self.topics if t.topic == name), None)


def _window(logs: Mapping[str, Mapping[str, Any]], width: int) -> tuple[int, int, int]:
    if not logs:
        return 0, width, 0
    longest = max(int(v["log_end_offset"]) for v in logs.values())
    oldest = min(int(v["log_start_offset"]) for v in logs.values())
    end = max(longest + ROOM, oldest + width)
    start = max(oldest, end - width)
    return start, end, start - oldest


def _cells(
    start: int, end: int, log_start: int, hw: int, leo: int, controls: Mapping[int, str] | None = None
) -> str:
    out = []
    for offset in range(start, end):
        if controls and offset in controls and log_start <= offset < leo:
            out.append(controls[offset])
        elif offset < log_start:
            out.append("d")
        elif offset < min(hw, leo):
            out.append("c")
        elif offset < leo:
            out.append("u")
        else:
            out.append("e")
    return "".join(out)


def _markers(
    start: int,
    end: int,
    log_start: int,
    hw: int,
    leo: int,
    config: Mapping[str, str],
    topic_config: Mapping[str, str],
    lso: int | None = None,
) -> tuple[Marker, ...]:
    """Markers in the window; where two or three coincide they share one label ("HW LEO"). The LSO
    is drawn only where an open transaction holds it below the HW."""
    at: dict[int, list[tuple[str, str, int]]] = {}
    bounds = [("start", "log start", log_start), ("hw", "HW", hw), ("leo", "LEO", leo)]
    if lso is not None and lso < hw:
        bounds.insert(1, ("lso", "LSO", lso))
    for kind, label, offset in bounds:
        if start <= offset <= end:  # a boundary may sit just after the window's last cell
            at.setdefault(offset - start, []).append((kind, label, offset))
    names = {
        "start": "log_start_offset",
        "lso": "last_stable_offset",
        "hw": "high_watermark",
        "leo": "log_end_offset",
    }
    out = []
    for index in sorted(at):
        marks = at[index]
        out.append(
            Marker(
                at=index,
                label=" ".join(label for _, label, _ in marks),
                kinds=" ".join(kind for kind, _, _ in marks),
                title=" ".join(
                    f"{label} = {offset}. {tip(names[kind], config, topic_config)}"
                    for kind, label, offset in marks
                ),
            )
        )
    return tuple(out)


def _flights(
    in_flight: list[Mapping[str, Any]],
    rows: list[int],
    leader: int | None,
    now_ms: int,
    rate: float,
) -> tuple[Flight, ...]:
    out = []
    if leader is None:
        return ()
    for env in in_flight:
        if env.get("kind") != "Fetch":
            continue
        src, dst = env.get("src"), env.get("dst")
        if not isinstance(src, int) or not isinstance(dst, int) or src not in rows or dst not in rows:
            continue
        # Replication traffic of this partition: follower -> leader requests and their answers.
        if leader not in (src, dst):
            continue
        sent, deliver = int(env["sent_ms"]), int(env["deliver_ms"])
        total = max(1, deliver - sent)
        progress = min(1.0, max(0.0, (now_ms - sent) / total))
        remaining = max(0, deliver - now_ms)
        response = bool(env.get("response"))
        out.append(
            Flight(
                id=int(env["id"]),
                kind="Fetch",
                src=src,
                dst=dst,
                response=response,
                src_row=rows.index(src),
                dst_row=rows.index(dst),
                progress=round(progress, 3),
                remaining_s=None if rate <= 0 else round(remaining / 1000 / rate, 3),
                label=(
                    f"Fetch response {src} → {dst}: records and the leader's HW"
                    if response
                    else f"Fetch {src} → {dst}: the follower asks from its LEO"
                )
                + f" (sent at {clock_label(sent)}, arrives at {clock_label(deliver)}, virtual time)",
            )
        )
    return tuple(sorted(out, key=lambda f: f.id))


def _producers(logs: Mapping[str, Mapping[str, Any]], leader: int) -> tuple[ProducerRow, ...]:
    source = logs.get(str(leader)) or next(iter(logs.values()), None)
    rows = []
    for p in (source or {}).get("producers") or ():
        first, last = int(p["first_sequence"]), int(p["last_sequence"])
        rows.append(
            ProducerRow(
                producer_id=int(p["producer_id"]),
                producer_epoch=int(p["producer_epoch"]),
                first_sequence=first,
                last_sequence=last,
                last_offset=int(p["last_offset"]),
                title=f"producer id {p['producer_id']}, epoch {p['producer_epoch']}: its next batch must start "
                f"at sequence {last + 1}; a retry of sequences {first} to {last} is answered with the offset "
                "it got, and written again never",
            )
        )
    return tuple(rows)


def partition_log(
    topic: str,
    part: Mapping[str, Any],
    *,
    in_flight: list[Mapping[str, Any]],
    now_ms: int,
    rate: float,
    config: Mapping[str, str],
    topic_config: Mapping[str, str] | None = None,
    width: int = WINDOW,
) -> PartitionLog:
    """One partition's replicas; ``topic_config`` is the topic's overrides (the snapshot's ``config``)."""
    overrides: Mapping[str, str] = topic_config or {}
    logs: Mapping[str, Mapping[str, Any]] = part.get("logs") or {}
    start, end, earlier = _window(logs, width)
    leader = int(part["leader"])
    isr = {int(b) for b in part["isr"]}
    leader_leo = int(logs[str(leader)]["log_end_offset"]) if str(leader) in logs else None
    rows = [int(r) for r in part["replicas"] if str(r) in logs]
    replicas = []
    for broker in rows:
        log = logs[str(broker)]
        first, hw, leo = int(log["log_start_offset"]), int(log["high_watermark"]), int(log["log_end_offset"])
        lso = int(log.get("last_stable_offset", hw))
        controls = {
            int(m["offset"]): "x" if m["type"] == "COMMIT" else "a"
            for m in (log.get("transactions") or {}).get("markers", ())
        }
        behind = 0 if leader_leo is None else max(0, leader_leo - leo)
        role = "leader" if broker == leader else "follower"
        words = [
            f"broker {broker}, {role}" + ("" if broker in isr else ", out of ISR"),
            f"log start {first}, HW {hw}, LEO {leo}, leader epoch {log['leader_epoch']}",
        ]
        if leo > hw:
            words.append(f"{leo - hw} record(s) above the HW, not yet visible to consumers")
        if lso < hw:
            words.append(f"LSO {lso}: an open transaction holds read_committed consumers below it")
        if behind:
            words.append(f"{behind} behind the leader")
        if not log.get("online", True):
            words.append("offline: the broker is down, this is its log on disk")
        replicas.append(
            ReplicaLog(
                broker=broker,
                role=role,
                online=bool(log.get("online", True)),
                in_isr=broker in isr,
                log_start_offset=first,
                high_watermark=hw,
                log_end_offset=leo,
                last_stable_offset=lso,
                leader_epoch=int(log["leader_epoch"]),
                cells=_cells(start, end, first, hw, leo, controls),
                markers=_markers(start, end, first, hw, leo, config, overrides, lso),
                behind=behind,
                title="; ".join(words),
            )
        )
    min_isr = int(effective_value("min.insync.replicas", config, overrides))
    return PartitionLog(
        topic=topic,
        partition=int(part["partition"]),
        leader=None if leader < 0 else leader,
        leader_epoch=int(part["leader_epoch"]),
        start=start,
        end=end,
        earlier=earlier,
        replicas=tuple(replicas),
        flights=_flights(in_flight, rows, None if leader < 0 else leader, now_ms, rate),
        min_insync_replicas=min_isr,
        under_min_isr=under_min_isr(part, min_isr),
        min_isr_title=f"ISR {sorted(isr)}: {len(isr)} in sync, min.insync.replicas {min_isr}. "
        + tip("under_min_isr", config, overrides),
        producers=_producers(logs, leader),
    )


# ``Memo.take`` (lab.visuals.frame): the view kept under a name while its inputs are equal.
Take = Callable[[str, tuple[object, ...], Callable[[], PartitionLog]], PartitionLog]


def partition_logs(
    snapshot: Mapping[str, Any],
    config: Mapping[str, str],
    *,
    rate: float,
    width: int = WINDOW,
    take: Take | None = None,
) -> PartitionLogs:
    """Every topic's partitions (user topics first), from an engine snapshot. With ``take``, a partition
    whose snapshot and fetches in flight are those of the last frame keeps its view (a busy lab's
    __consumer_offsets has five partitions, and a group commits to one)."""
    in_flight = list(snapshot.get("in_flight") or ())
    now = int(snapshot.get("time_ms") or 0)
    topics = []

    def one(name: str, part: Mapping[str, Any], overrides: Mapping[str, str]) -> PartitionLog:
        def make() -> PartitionLog:
            return partition_log(
                name,
                part,
                in_flight=in_flight,
                now_ms=now,
                rate=rate,
                config=config,
                topic_config=overrides,
                width=width,
            )

        if take is None:
            return make()
        # What the view is drawn from: the partition's snapshot, the lab's config and the topic's, and
        # its fetches in flight (the only part that moves with time alone).
        logs = part.get("logs") or {}
        leader = int(part["leader"])
        rows = [int(r) for r in part["replicas"] if str(r) in logs]
        flights = _flights(in_flight, rows, None if leader < 0 else leader, now, rate)
        return take(f"plog:{name}:{part['partition']}", (part, flights, config, overrides, width), make)

    for name in sorted(snapshot.get("topics", {}), key=lambda t: (t.startswith("__"), t)):
        parts = sorted(snapshot["topics"][name]["partitions"], key=lambda p: p["partition"])
        overrides: Mapping[str, str] = snapshot["topics"][name].get("config") or {}
        topics.append(
            TopicLog(
                topic=name,
                internal=name.startswith("__"),
                min_insync_replicas=int(effective_value("min.insync.replicas", config, overrides)),
                min_isr_override="min.insync.replicas" in overrides,
                tips=tuple((k, tip(k, config, overrides)) for k in _TIPS),
                partitions=tuple(one(name, p, overrides) for p in parts),
            )
        )
    return PartitionLogs(
        topics=tuple(topics),
        tips=tuple((k, tip(k, config)) for k in _TIPS),
    )


_TIPS = (
    "log_start_offset",
    "high_watermark",
    "log_end_offset",
    "uncommitted",
    "leader_epoch",
    "in_flight",
    "under_min_isr",
    "producer_state",
)
