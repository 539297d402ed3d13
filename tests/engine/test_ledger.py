"""The ledger of acknowledged records: a loss, once found, is reported for good, in bounded memory."""

from __future__ import annotations

from lab.engine import ledger as ledger_module
from lab.engine.ids import TopicPartition
from lab.engine.ledger import AckedRecord, Ledger, PartitionLosses

TP = TopicPartition("t", 0)


def acked(offset: int, value: str, *, acks: int = -1, producer: str = "p", at: int = 0) -> AckedRecord:
    return AckedRecord(
        producer=producer, tp=TP, offset=offset, key=None, value=value.encode(), acks=acks, time_ms=at
    )


def test_an_offset_acknowledged_again_with_another_record_loses_the_first_for_good() -> None:
    ledger = Ledger()
    for i in range(3):
        ledger.record(acked(i, f"before-{i}"))
    ledger.record(acked(2, "after-failover", producer="q", at=900))
    assert ledger.lost_offsets() == {TP: [2]}
    [lost] = ledger.take_unannounced()
    assert (lost.record.value, lost.detected_ms) == (b"before-2", 900)
    assert "now holds another record, acknowledged to q" in lost.why
    for i in range(3, 10):
        ledger.record(acked(i, f"after-{i}"))
    assert ledger.lost_offsets() == {TP: [2]}  # more writes never empty the report
    assert ledger.of(TP)[2].value == b"after-failover"


def test_the_same_record_acknowledged_again_is_not_a_loss() -> None:
    ledger = Ledger()
    ledger.record(acked(0, "x"))
    ledger.record(acked(0, "x", at=5))  # an idempotent retry answered twice
    assert ledger.lost_offsets() == {}


def test_a_loss_is_noted_once_and_a_later_loss_at_the_same_offset_counts_again() -> None:
    ledger = Ledger()
    first = acked(4, "a")
    ledger.record(first)
    assert ledger.lose(first, detected_ms=1, why="gone") is not None
    assert ledger.lose(first, detected_ms=2, why="gone") is None  # found again: already noted
    ledger.record(acked(4, "b"))  # the acknowledgement that replaced it: no second loss for "a"
    assert ledger.losses[TP].count == 1
    second = ledger.of(TP)[4]
    ledger.lose(second, detected_ms=3, why="gone again")
    assert ledger.losses[TP].count == 2
    assert ledger.lost_offsets() == {TP: [4]}  # each offset once in the report


def test_losses_keep_every_offset_as_ranges_and_the_newest_details(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ledger_module, "LOST_DETAILS_PER_PARTITION", 5)
    ledger = Ledger()
    for offset in [*range(10, 20), 30, 31, 5, 21, 20]:
        rec = acked(offset, "v")
        ledger.record(rec)
        ledger.lose(rec, detected_ms=offset, why="gone")
    losses = ledger.losses[TP]
    assert losses.spans == [(5, 5), (10, 21), (30, 31)]
    assert losses.count == 15
    assert [lost.record.offset for lost in losses.newest] == [30, 31, 5, 21, 20]
    assert ledger.lost_offsets()[TP] == [5, *range(10, 22), 30, 31]


def test_spans_merge_from_both_sides() -> None:
    losses = PartitionLosses()
    for offset in (1, 3, 2, 7, 5, 6, 4):
        losses.add(ledger_module.LostRecord(record=acked(offset, "v"), detected_ms=0, why=""))
    assert losses.spans == [(1, 7)]


def test_a_deleted_topic_is_forgotten_but_its_losses_stay() -> None:
    ledger = Ledger()
    rec = acked(0, "x")
    ledger.record(rec)
    ledger.lose(rec, detected_ms=0, why="gone")
    ledger.record(acked(1, "y"))
    ledger.forget_topic("t")
    assert ledger.of(TP) == {}
    assert ledger.lost_offsets() == {TP: [0]}


def test_a_batch_written_over_part_of_others_keeps_what_it_did_not_touch() -> None:
    ledger = Ledger()
    ledger.record_batch("p", TP, 0, None, [b"a0", b"a1", b"a2", b"a3"], acks=-1, time_ms=1)
    ledger.record_batch("p", TP, 4, [b"k", None], [b"b4", b"b5"], acks=1, time_ms=2)
    # After a truncation to 2, another producer's batch is acknowledged at 2..4.
    ledger.record_batch("q", TP, 2, None, [b"c2", b"c3", b"b4"], acks=-1, time_ms=3)
    held = ledger.of(TP)
    assert [(r.offset, r.producer, r.key, r.value) for r in held.values()] == [
        (0, "p", None, b"a0"),
        (1, "p", None, b"a1"),
        (2, "q", None, b"c2"),
        (3, "q", None, b"c3"),
        (4, "q", None, b"b4"),
        (5, "p", None, b"b5"),
    ]
    assert ledger.lost_offsets() == {TP: [2, 3, 4]}  # 4 too: the key it was acknowledged with is gone
    assert ledger.count == 9
    assert ledger.highest_acks_all[TP] == 4
    assert 6 not in held
    assert len(held) == 6
