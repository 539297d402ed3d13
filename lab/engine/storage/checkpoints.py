"""Kafka's checkpoint files: plain text, a version line ``0``, a count line, one entry a line.

``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks) and
``log-start-offset-checkpoint`` live in a log directory and hold ``topic partition offset``
lines; ``leader-epoch-checkpoint`` lives in a partition directory and holds ``epoch start_offset``
lines. Writes go to a temporary file that is then renamed over the old one, so a reader sees
the old file or the new one, never half of each.

Two more small files Kafka keeps: ``partition.metadata`` in a partition directory (the topic id,
KIP-516) and ``meta.properties`` in a log directory (the broker and the cluster it belongs to).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from lab.engine.errors import KafkaStorageError

VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class EpochEntry:
    """A leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


def _write_atomically(path: Path, lines: Sequence[str]) -> None:
    data = "".join(f"{line}\n" for line in [str(VERSION), str(len(lines)), *lines]).encode("utf-8")
    name = os.fspath(path)
    if _holds(name, data):
        return  # already on disk: an idle broker's every-second checkpoint costs a read, not a rename
    tmp = name + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, name)


def _holds(name: str, data: bytes) -> bool:
    """Whether the file ``name`` holds exactly ``data`` (plain system calls: every broker asks every second)."""
    try:
        fd = os.open(name, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        return os.read(fd, len(data) + 1) == data
    finally:
        os.close(fd)


def _read_entries(path: Path, parse: Callable[[str], T], expected: str) -> list[T]:
    """Entries of a checkpoint file; a missing file is empty; anything malformed says which line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()

    def malformed(number: int, problem: str) -> KafkaStorageError:
        return KafkaStorageError(f"malformed checkpoint file {path}, line {number}: {problem}")

    if not lines:
        raise malformed(1, "the file is empty; expected the version line '0'")
    if lines[0].strip() != str(VERSION):
        raise malformed(1, f"unsupported version {lines[0]!r}; expected '{VERSION}'")
    if len(lines) < 2:
        raise malformed(2, "missing the entry count line")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise malformed(2, f"entry count {lines[1]!r} is not an integer") from None
    entries = lines[2:]
    if count < 0 or len(entries) != count:
        raise malformed(2, f"the count line says {count} entries, the file holds {len(entries)}")
    result: list[T] = []
    for number, line in enumerate(entries, start=3):
        try:
            result.append(parse(line))
        except ValueError as e:
            raise malformed(number, f"{line!r} is not '{expected}' ({e})") from None
    return result


class OffsetCheckpointFile:
    """``topic partition offset`` lines: recovery points, high watermarks, log start offsets."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @staticmethod
    def _parse(line: str) -> tuple[tuple[str, int], int]:
        parts = line.split(" ")
        if len(parts) != 3:
            raise ValueError(f"{len(parts)} fields")
        topic, partition, offset = parts
        if not topic:
            raise ValueError("empty topic")
        return (topic, int(partition)), int(offset)

    def read(self) -> dict[tuple[str, int], int]:
        return dict(_read_entries(self.path, self._parse, "topic partition offset"))

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
        _write_atomically(self.path, lines)


class LeaderEpochCheckpointFile:
    """``epoch start_offset`` lines, in epoch order."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @staticmethod
    def _parse(line: str) -> EpochEntry:
        parts = line.split(" ")
        if len(parts) != 2:
            raise ValueError(f"{len(parts)} fields")
        return EpochEntry(epoch=int(parts[0]), start_offset=int(parts[1]))

    def read(self) -> list[EpochEntry]:
        return _read_entries(self.path, self._parse, "epoch start_offset")

    def write(self, entries: Sequence[EpochEntry]) -> None:
        _write_atomically(self.path, [f"{e.epoch} {e.start_offset}" for e in entries])


class PartitionMetadataFile:
    """``partition.metadata``: ``version: 0`` and ``topic_id: <id>``, as Kafka 2.8+ writes it."""

    def __init__(self, partition_dir: Path) -> None:
        self.path = Path(partition_dir) / PARTITION_METADATA

    def read(self) -> str | None:
        """The topic id, or None when the file is not there (a log an older Kafka wrote)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        fields: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            name, sep, value = line.partition(":")
            if not sep or not value.strip():
                raise KafkaStorageError(
                    f"malformed {self.path}, line {number}: {line!r} is not 'name: value'"
                )
            fields[name.strip()] = value.strip()
        if fields.get("version") != str(VERSION):
            raise KafkaStorageError(f"unrecognized version of {self.path}: {fields.get('version')!r}")
        topic_id = fields.get("topic_id")
        if not topic_id:
            raise KafkaStorageError(f"malformed {self.path}: no topic_id")
        return topic_id

    def write(self, topic_id: str) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(f"version: {VERSION}\ntopic_id: {topic_id}", encoding="utf-8")
        os.replace(tmp, self.path)


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file's ``key=value`` lines (``#`` and ``!`` start comments); {} if missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, _, value = stripped.partition("=")
        out[key.strip()] = value.strip()
    return out


def write_properties(path: Path, values: Mapping[str, str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    os.replace(tmp, path)
