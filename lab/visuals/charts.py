"""Charts over virtual time: throughput, the HW-to-LEO gap, and consumer lag.

The runtime keeps a ring buffer of ``Sample``s, one per frame; this module turns a
window of them into SVG polylines. Counters in a sample only grow (the runtime
carries them across broker restarts), so a rate is a difference over time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WINDOW_MS = 30_000
RATE_SPAN_MS = 1_000  # a rate is measured over about this much virtual time
WIDTH = 320
HEIGHT = 110
DASHES = ("", "6 3", "2 3", "8 3 2 3")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    time_ms: int  # virtual
    produced: int  # records appended by leaders, ever
    consumed: int  # records handed to consumers, ever
    hw_gap: int  # sum over partitions of the leader's LEO - HW
    lag: tuple[tuple[str, int], ...]  # group -> total lag


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    label: str
    points: str  # SVG polyline points
    last: float
    dash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    key: str
    title: str
    unit: str
    y_max: float
    series: tuple[Series, ...]
    note: str

    @property
    def empty(self) -> bool:
        return not any(s.points for s in self.series)


@dataclass(frozen=True, slots=True, kw_only=True)
class Charts:
    charts: tuple[Chart, ...]
    window_s: int
    width: int = WIDTH
    height: int = HEIGHT


def sample(snapshot: Mapping[str, Any], *, produced: int, consumed: int) -> Sample:
    """One sample: the counters the runtime carries, plus what the snapshot shows now."""
    gap = 0
    for name, topic in (snapshot.get("topics") or {}).items():
        if name.startswith("__"):
            continue
        for part in topic["partitions"]:
            log = (part.get("logs") or {}).get(str(part["leader"]))
            if log is not None and not part.get("offline"):
                gap += max(0, int(log["log_end_offset"]) - int(log["high_watermark"]))
    lag = tuple(
        (g, int(info.get("total_lag") or 0)) for g, info in sorted((snapshot.get("groups") or {}).items())
    )
    return Sample(
        time_ms=int(snapshot.get("time_ms") or 0), produced=produced, consumed=consumed, hw_gap=gap, lag=lag
    )


def nice_ceiling(value: float) -> float:
    """The next 1, 2 or 5 times a power of ten at or above ``value`` (at least 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def _rates(samples: Sequence[Sample], attr: str) -> list[tuple[int, float]]:
    out: list[tuple[int, float]] = []
    j = 0
    for i, s in enumerate(samples):
        while j < i and s.time_ms - samples[j + 1].time_ms >= RATE_SPAN_MS:
            j += 1
        if i == 0 or s.time_ms == samples[j].time_ms:
            continue
        delta = getattr(s, attr) - getattr(samples[j], attr)
        out.append((s.time_ms, max(0.0, delta * 1000 / (s.time_ms - samples[j].time_ms))))
    return out


def _series(
    label: str, values: list[tuple[int, float]], t0: int, span: int, y_max: float, dash: str
) -> Series:
    pts = []
    for t, v in values:
        x = (t - t0) / span * WIDTH
        y = HEIGHT - min(v, y_max) / y_max * HEIGHT
        pts.append(f"{x:.1f},{y:.1f}")
    last = values[-1][1] if values else 0.0
    return Series(label=label, points=" ".join(pts), last=round(last, 1), dash=dash)


def _chart(
    key: str,
    title: str,
    unit: str,
    lines: list[tuple[str, list[tuple[int, float]]]],
    t0: int,
    span: int,
    note: str,
) -> Chart:
    top = max((v for _, values in lines for _, v in values), default=0.0)
    y_max = nice_ceiling(top)
    return Chart(
        key=key,
        title=title,
        unit=unit,
        y_max=y_max,
        series=tuple(
            _series(label, values, t0, span, y_max, DASHES[i % len(DASHES)])
            for i, (label, values) in enumerate(lines)
        ),
        note=note,
    )


def charts(samples: Sequence[Sample], *, window_ms: int = WINDOW_MS) -> Charts:
    """The three charts over the last ``window_ms`` of virtual time."""
    if samples:
        end = samples[-1].time_ms
        t0 = max(0, end - window_ms)
        # Rates need the samples just before the window too.
        shown = [s for s in samples if s.time_ms >= t0 - RATE_SPAN_MS]
    else:
        t0, shown = 0, []
    span = window_ms
    inside = [s for s in shown if s.time_ms >= t0]
    groups = sorted({g for s in inside for g, _ in s.lag})
    produce = [(t, v) for t, v in _rates(shown, "produced") if t >= t0]
    consume = [(t, v) for t, v in _rates(shown, "consumed") if t >= t0]
    return Charts(
        charts=(
            _chart(
                "throughput",
                "Throughput",
                "records/s",
                [("produced", produce), ("consumed", consume)],
                t0,
                span,
                "Records appended by partition leaders, and records fetched by consumers, per virtual second.",
            ),
            _chart(
                "hw-gap",
                "HW to LEO gap",
                "records",
                [("written, not yet committed", [(s.time_ms, float(s.hw_gap)) for s in inside])],
                t0,
                span,
                "Records on the leaders above the high watermark: written, waiting for the ISR to fetch them.",
            ),
            _chart(
                "lag",
                "Consumer lag",
                "records",
                [(g, [(s.time_ms, float(dict(s.lag).get(g, 0))) for s in inside]) for g in groups],
                t0,
                span,
                "Per group: high watermark minus committed offset, summed over its partitions.",
            ),
        ),
        window_s=window_ms // 1000,
    )
