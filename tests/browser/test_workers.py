"""A lab worker killed with SIGKILL (make run WORKERS=2): its lab comes back on the other worker with
every record Kafka acknowledged (acks=all), and the page watching it follows it there."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from playwright.sync_api import Page, expect

from lab.runtime.ownership import Ownership
from tests.browser.helpers import log_in
from tests.lab_server import LabServer
from tests.processes import alive, wait_until

pytestmark = pytest.mark.long(70)

RECORDS = 200


def _bootstrap(server: LabServer) -> str:
    found = re.search(r"the demo lab's bootstrap\.servers=(\S+)", server.output())
    assert found, server.output()
    return found.group(1)


def _acknowledged(bootstrap: str) -> dict[bytes, tuple[int, int]]:
    """Produce with acks=all; every record the brokers acknowledged, with its partition and offset."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=5,
        retries=50,
        retry_backoff_ms=100,
        request_timeout_ms=5_000,
    )
    futures = {
        b"worker-failover-%d" % i: producer.send("orders", value=b"worker-failover-%d" % i)
        for i in range(RECORDS)
    }
    producer.flush(60)
    producer.close(10)
    acked = {}
    for value, future in futures.items():
        metadata = future.get(timeout=1)
        acked[value] = (metadata.partition, metadata.offset)
    return acked


def _read_back(bootstrap: str, expected: set[bytes], timeout_s: float) -> dict[bytes, tuple[int, int]]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=10_000,
    )
    consumer.assign([TopicPartition("orders", p) for p in range(3)])
    consumer.seek_to_beginning()
    found: dict[bytes, tuple[int, int]] = {}
    deadline = time.monotonic() + timeout_s
    while not expected <= set(found) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            for record in records:
                if record.value in expected:
                    found[record.value] = (record.partition, record.offset)
    consumer.close()
    return found


def test_a_killed_workers_lab_comes_back_on_the_other_with_every_acknowledged_record(
    page: Page, zookeeper: str, tmp_path: Path
) -> None:
    server = LabServer(tmp_path, zookeeper=zookeeper, workers=2)
    server.start(timeout_s=120)
    zk = Ownership(zookeeper, (tmp_path / "instance-id").read_text().strip())
    try:
        lease = zk.lease("demo")
        assert lease is not None
        first = {w.name: w for w in zk.workers()}[lease.worker]
        other = next(w.name for w in zk.workers() if w.name != first.name)

        log_in(page, server)
        page.goto(server.url + "/labs/demo/")
        expect(page.locator("#live-status")).to_have_text("● live")
        expect(page.locator("#cluster-map")).to_contain_text("controller", ignore_case=True)

        bootstrap = _bootstrap(server)
        acked = _acknowledged(bootstrap)
        assert len(acked) == RECORDS

        os.kill(first.pid, signal.SIGKILL)
        assert wait_until(lambda: not alive(first.pid), 10)
        # Its lease vanishes with its ZooKeeper session; the other worker takes the lab up from its data dir.
        assert wait_until(lambda: (now := zk.lease("demo")) is not None and now.worker == other, 60), (
            server.output()
        )

        # The page, still on the web process, follows: it says where the lab went, and frames flow again.
        moved = page.locator('#timeline li[data-kind="lab_moved"]')
        expect(moved).to_contain_text(
            f"The lab moved to worker {other} after worker {first.name} stopped.", timeout=60_000
        )
        seq = page.locator("#lab-frame").get_attribute("data-frame")
        expect(page.locator("#lab-frame")).not_to_have_attribute("data-frame", seq or "", timeout=15_000)
        expect(page.locator("#live-status")).to_have_text("● live")

        # Every acknowledged record is there, where the brokers said it was.
        found = _read_back(bootstrap, set(acked), timeout_s=90)
        missing = sorted(set(acked) - set(found))
        assert not missing, f"{len(missing)} acknowledged records lost after the failover: {missing[:5]}"
        assert found == acked
    finally:
        zk.close()
        assert server.stop() == 0, server.output()
