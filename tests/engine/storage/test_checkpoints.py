"""Checkpoint files in Kafka's text format."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.engine.errors import KafkaStorageError
from lab.engine.storage.checkpoints import (
    RECOVERY_POINT_CHECKPOINT,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)


def test_offset_checkpoint_text_is_kafkas(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / RECOVERY_POINT_CHECKPOINT)
    checkpoint.write({("orders", 1): 250, ("orders", 0): 120, ("__consumer_offsets", 7): 3})
    assert (tmp_path / RECOVERY_POINT_CHECKPOINT).read_text() == (
        "0\n3\n__consumer_offsets 7 3\norders 0 120\norders 1 250\n"
    )
    assert checkpoint.read() == {("orders", 1): 250, ("orders", 0): 120, ("__consumer_offsets", 7): 3}
    assert [p.name for p in tmp_path.iterdir()] == [RECOVERY_POINT_CHECKPOINT]  # no temporary file left


def test_rewriting_replaces_the_whole_file(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    checkpoint.write({("a", 0): 1, ("b", 0): 2})
    checkpoint.write({("a", 0): 5})
    assert checkpoint.read() == {("a", 0): 5}
    checkpoint.write({})
    assert checkpoint.path.read_text() == "0\n0\n"
    assert checkpoint.read() == {}


def test_an_unchanged_checkpoint_is_not_written_again(tmp_path: Path) -> None:
    # An idle broker checkpoints every second: the same text is left as it is (no new file renamed
    # over it), a changed one replaces it.
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    checkpoint.write({("a", 0): 1})
    inode = checkpoint.path.stat().st_ino
    checkpoint.write({("a", 0): 1})
    assert checkpoint.path.stat().st_ino == inode
    checkpoint.write({("a", 0): 2})
    assert checkpoint.path.stat().st_ino != inode
    assert checkpoint.read() == {("a", 0): 2}


def test_a_checkpoint_changed_or_deleted_behind_the_brokers_back_is_written_again(tmp_path: Path) -> None:
    # The writer remembers what it left on disk, so an idle broker's checkpoint does not read the
    # file back; a file someone else replaced, edited or deleted meanwhile is written again.
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    epochs = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    checkpoint.write({("a", 0): 1})
    epochs.write([EpochEntry(epoch=0, start_offset=0)])
    checkpoint.path.write_text("0\n1\na 0 7\n")  # edited in place
    epochs.path.unlink()
    checkpoint.write({("a", 0): 1})
    epochs.write([EpochEntry(epoch=0, start_offset=0)])
    assert checkpoint.read() == {("a", 0): 1}
    assert epochs.read() == [EpochEntry(epoch=0, start_offset=0)]
    replaced = tmp_path / "other"
    replaced.write_text("0\n1\na 0 9\n")
    replaced.replace(checkpoint.path)  # a new file renamed over it
    checkpoint.write({("a", 0): 1})
    assert checkpoint.read() == {("a", 0): 1}
    checkpoint.path.unlink()
    checkpoint.write({("a", 0): 1})
    assert checkpoint.read() == {("a", 0): 1}


def test_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "nothing").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "nothing").read() == []


def test_leader_epoch_checkpoint_text_is_kafkas(tmp_path: Path) -> None:
    checkpoint = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    entries = [EpochEntry(epoch=0, start_offset=0), EpochEntry(epoch=3, start_offset=120)]
    checkpoint.write(entries)
    assert checkpoint.path.read_text() == "0\n2\n0 0\n3 120\n"
    assert checkpoint.read() == entries


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("", 1, "empty"),
        ("1\n0\n", 1, "unsupported version"),
        ("0\n", 2, "missing the entry count"),
        ("0\ntwo\n", 2, "not an integer"),
        ("0\n2\norders 0 5\n", 2, "says 2 entries, the file holds 1"),
        ("0\n1\norders 0\n", 3, "is not 'topic partition offset'"),
        ("0\n2\norders 0 5\norders x 6\n", 4, "'orders x 6'"),
        ("0\n1\n 0 5\n", 3, "empty topic"),
    ],
)
def test_malformed_offset_checkpoints_say_which_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(KafkaStorageError) as raised:
        OffsetCheckpointFile(path).read()
    assert f"line {line}" in str(raised.value)
    assert problem in str(raised.value)
    assert str(path) in str(raised.value)


def test_malformed_epoch_checkpoint_says_which_line(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n2\n0 0\n1 ten\n")
    with pytest.raises(KafkaStorageError, match="line 4: '1 ten' is not 'epoch start_offset'"):
        LeaderEpochCheckpointFile(path).read()
