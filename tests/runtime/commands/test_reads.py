"""Reads as commands: the message browser's page."""

from __future__ import annotations

from pathlib import Path

from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.classroom.helpers import on_driver
from tests.walltime import still_lab


def test_the_newest_matches_of_a_search_are_the_last_ones(tmp_path: Path) -> None:
    lab, _ = still_lab(
        tmp_path, "newest", topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),)
    )
    try:

        def write(live: LiveLab) -> None:
            producer = live.cluster.producer(acks="all")
            futures = [
                producer.send("orders", f"{'hit' if i % 2 else 'miss'}-{i}", partition=0) for i in range(30)
            ]
            producer.flush(30_000)
            for f in futures:
                f.result()

        on_driver(lab, write)
        args = {"topic": "orders", "partition": 0, "start": "newest", "search": "hit", "limit": 3}
        page = lab.act("messages", args).result(10)
        assert [r["value"] for r in page["records"]] == ["hit-25", "hit-27", "hit-29"]
        assert (page["start"], page["high_watermark"], page["full"]) == (25, 30, False)
    finally:
        lab.stop()
