"""The partition log against plain file I/O: appends and sequential reads, and the on-disk layout.

``python -m lab.bench storage [--quick]`` prints one JSON line per figure:

- ``storage_append``: ``PartitionLog.append_as_leader`` of prebuilt 500-record batches (CRC
  check, offset patch, index entries, rolls) against ``raw_file_append``, plain Python writing
  the same bytes to one file;
- ``storage_read``: reading the whole log back from offset 0 with 1 MiB fetches (Kafka's
  max.partition.fetch.bytes) against ``raw_file_read``, plain Python reading the file in 1 MiB
  chunks;
- ``storage_layout``: the files a log leaves in its directory, checked against Kafka's layout.

Both sides of a ratio run in the same process, on the same disk, on the same bytes.
"""

from __future__ import annotations

import json
import re
import struct
import tempfile
import time
from pathlib import Path

from lab.engine.records import build_batch
from lab.engine.storage import LogConfig, PartitionLog

RECORD_BYTES = 100
BATCH_RECORDS = 500
FETCH_BYTES = 1 << 20  # Kafka's max.partition.fetch.bytes default
SMALL_SEGMENT_BYTES = 16 << 20
_SEGMENT_FILE = re.compile(r"^\d{20}\.(log|index|timeindex|snapshot)$")  # Kafka's: producer state too


def _emit(figure: dict[str, object]) -> None:
    print(json.dumps(figure), flush=True)


def _template_batch() -> bytes:
    value = bytes(range(RECORD_BYTES))
    return build_batch([(None, value)] * BATCH_RECORDS, timestamp_ms=1_700_000_000_000)


def _raw_append(path: Path, batches: list[bytes]) -> float:
    start = time.perf_counter()
    with open(path, "wb") as f:
        for batch in batches:
            f.write(batch)
    return time.perf_counter() - start


def _raw_read(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    total = 0
    with open(path, "rb") as f:
        while chunk := f.read(FETCH_BYTES):
            total += len(chunk)
    return time.perf_counter() - start, total


def _log_append(directory: Path, config: LogConfig, batches: list[bytes]) -> tuple[float, PartitionLog]:
    log = PartitionLog.open(directory, config, now_ms=0)
    start = time.perf_counter()
    for batch in batches:
        log.append_as_leader(batch, leader_epoch=0, now_ms=0)
    log.flush()
    return time.perf_counter() - start, log


def _log_read(log: PartitionLog) -> tuple[float, int]:
    start = time.perf_counter()
    offset, end, total = 0, log.log_end_offset, 0
    while offset < end:
        fetched = log.read(offset, FETCH_BYTES)
        total += len(fetched.records)
        offset = fetched.next_offset
    return time.perf_counter() - start, total


def _measure(root: Path, batches: list[bytes], segment_bytes: int, repeats: int) -> None:
    records = len(batches) * BATCH_RECORDS
    config = LogConfig(segment_bytes=segment_bytes)
    raw_append, raw_read, log_append, log_read = [], [], [], []
    segments = 0
    for run in range(repeats):
        raw_path = root / f"raw-{run}.log"
        raw_append.append(_raw_append(raw_path, batches))
        seconds, log = _log_append(root / f"bench-{segment_bytes}-{run}", config, batches)
        log_append.append(seconds)
        segments = len(log.segments)
        seconds, raw_bytes = _raw_read(raw_path)
        raw_read.append(seconds)
        seconds, log_bytes = _log_read(log)
        log_read.append(seconds)
        if log_bytes != raw_bytes:
            raise RuntimeError(f"the log read back {log_bytes} bytes, the raw file holds {raw_bytes}")
        log.delete()
        raw_path.unlink()
    common = {
        "records": records,
        "record_bytes": RECORD_BYTES,
        "batch": BATCH_RECORDS,
        "segment_bytes": segment_bytes,
        "segments": segments,
        "repeats": repeats,
    }
    for bench, baseline, ours, theirs, extra in (
        ("storage_append", "raw_file_append", log_append, raw_append, {}),
        ("storage_read", "raw_file_read", log_read, raw_read, {"max_bytes": FETCH_BYTES}),
    ):
        ours_rate = records / min(ours)
        baseline_rate = records / min(theirs)
        _emit(
            {
                "bench": bench,
                **common,
                **extra,
                "records_per_s": round(ours_rate),
                "baseline": baseline,
                "baseline_records_per_s": round(baseline_rate),
                "ratio": round(ours_rate / baseline_rate, 3),
            }
        )


def _layout(root: Path) -> None:
    """Write a small log with rolls and check its files are Kafka's: names, entry sizes, entries."""
    config = LogConfig(segment_bytes=64 << 10, index_interval_bytes=4096)
    log = PartitionLog.open(root / "layout-0", config, now_ms=0)
    value = bytes(RECORD_BYTES)
    for i in range(200):
        log.append_as_leader(
            build_batch([(b"k", value)] * 10, timestamp_ms=i), leader_epoch=i // 100, now_ms=0
        )
    log.close()
    directory = log.dir
    names = sorted(p.name for p in directory.iterdir())
    problems = [n for n in names if not _SEGMENT_FILE.match(n) and n != "leader-epoch-checkpoint"]
    index_entries = timeindex_entries = 0
    for log_file in sorted(directory.glob("*.log")):
        base = int(log_file.stem)
        data = log_file.read_bytes()
        index = (directory / f"{log_file.stem}.index").read_bytes()
        timeindex = (directory / f"{log_file.stem}.timeindex").read_bytes()
        if len(index) % 8 or len(timeindex) % 12:
            problems.append(f"{log_file.stem}: index sizes {len(index)}, {len(timeindex)}")
        for relative, position in struct.iter_unpack(">ii", index):
            batch_base, last_delta = (
                struct.unpack_from(">q", data, position)[0],
                struct.unpack_from(">i", data, position + 23)[0],
            )
            if batch_base + last_delta != base + relative:
                problems.append(
                    f"{log_file.stem}: index entry ({relative}, {position}) does not point at its batch"
                )
        index_entries += len(index) // 8
        timeindex_entries += len(timeindex) // 12
    _emit(
        {
            "bench": "storage_layout",
            "files": len(names),
            "segments": len(list(directory.glob("*.log"))),
            "sample": names[:4],
            "index_entry_bytes": 8,
            "timeindex_entry_bytes": 12,
            "index_entries": index_entries,
            "timeindex_entries": timeindex_entries,
            "epoch_checkpoint": (directory / "leader-epoch-checkpoint").read_text().split("\n")[:4],
            "ok": not problems,
            "problems": problems,
        }
    )


def main(quick: bool = False) -> None:
    records = 100_000 if quick else 1_000_000
    repeats = 1 if quick else 3
    template = _template_batch()
    batches = [template] * (records // BATCH_RECORDS)
    with tempfile.TemporaryDirectory(prefix="lab-bench-storage-") as tmp:
        root = Path(tmp)
        # A short unreported pass first, so neither side pays for cold caches or first allocations.
        warm_up = root / "warm-up"
        warm_up.mkdir()
        for _ in range(2):
            _, log = _log_append(warm_up / "warm-0", LogConfig(), batches[:50])
            _log_read(log)
            log.delete()
            _raw_append(warm_up / "raw.log", batches[:50])
            _raw_read(warm_up / "raw.log")
        _measure(root, batches, LogConfig().segment_bytes, repeats)
        _measure(root, batches, SMALL_SEGMENT_BYTES, repeats)
        _layout(root)
