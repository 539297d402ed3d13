"""A partition's log on disk, in Kafka's layout: segments, indexes, checkpoints, leader epochs."""

from lab.engine.storage.checkpoints import EpochEntry, LeaderEpochCheckpointFile, OffsetCheckpointFile
from lab.engine.storage.config import LogConfig
from lab.engine.storage.epochs import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from lab.engine.storage.log import AppendInfo, CleanerStats, FetchData, PartitionLog
from lab.engine.storage.segment import SegmentInfo

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "AppendInfo",
    "CleanerStats",
    "EpochEntry",
    "FetchData",
    "LeaderEpochCache",
    "LeaderEpochCheckpointFile",
    "LogConfig",
    "OffsetCheckpointFile",
    "PartitionLog",
    "SegmentInfo",
]
