"""Charts: rates from growing counters, the HW-to-LEO gap, lag per group, as SVG polylines."""

from __future__ import annotations

from lab.visuals.charts import HEIGHT, WIDTH, Sample, charts, nice_ceiling, sample
from tests.visuals.snapshots import log, partition, three_brokers


def _s(t: int, produced: int, consumed: int = 0, gap: int = 0, lag: tuple = ()) -> Sample:
    return Sample(time_ms=t, produced=produced, consumed=consumed, hw_gap=gap, lag=lag)


def test_a_sample_sums_the_leaders_gap_over_user_topics_and_takes_each_groups_lag() -> None:
    snap = three_brokers(groups={"billing": {"total_lag": 7}, "audit": {"total_lag": 0}})
    snap["topics"]["orders"]["partitions"][0] = partition(
        0, [1, 2], leader=1, isr=[1, 2], logs={1: log(0, 3, 8, role="leader"), 2: log(0, 3, 3)}
    )
    snap["topics"]["__consumer_offsets"] = {
        "config": {},
        "partitions": [partition(0, [1], leader=1, isr=[1], logs={1: log(0, 0, 9, role="leader")})],
    }
    s = sample(snap, produced=10, consumed=4)
    assert (s.hw_gap, s.lag, s.produced, s.consumed, s.time_ms) == (
        5,
        (("audit", 0), ("billing", 7)),
        10,
        4,
        1200,
    )


def test_throughput_is_records_per_virtual_second() -> None:
    samples = [_s(t, produced=t // 100, consumed=t // 200) for t in range(0, 5001, 100)]  # 10/s and 5/s
    view = charts(samples)
    throughput = view.charts[0]
    assert [s.label for s in throughput.series] == ["produced", "consumed"]
    assert [s.last for s in throughput.series] == [10.0, 5.0]
    assert throughput.y_max == 10.0


def test_points_fill_the_window_from_left_to_right() -> None:
    samples = [_s(t, 0, gap=t // 600) for t in range(0, 30_001, 500)]
    gap = charts(samples, window_ms=30_000).charts[1]
    points = [tuple(map(float, p.split(","))) for p in gap.series[0].points.split()]
    assert points[0] == (0.0, HEIGHT)
    assert points[-1] == (WIDTH, 0.0)
    assert gap.y_max == 50.0
    assert gap.series[0].last == 50.0


def test_lag_has_a_line_per_group_with_its_own_dash() -> None:
    samples = [_s(t, 0, lag=(("audit", 1), ("billing", t // 100))) for t in range(0, 2001, 100)]
    lag = charts(samples).charts[2]
    assert [(s.label, s.last) for s in lag.series] == [("audit", 1.0), ("billing", 20.0)]
    assert lag.series[0].dash != lag.series[1].dash


def test_nothing_to_draw_yet() -> None:
    view = charts([])
    assert all(c.empty for c in view.charts)
    assert [nice_ceiling(v) for v in (0, 1, 3, 7, 10, 11, 99, 101)] == [1, 1, 5, 10, 10, 20, 100, 200]
