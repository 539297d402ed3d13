"""Failed TLS handshakes and SASL logins in the timeline (lab/wire/failures.py): the first in full, with
why; a flood summed up, one line per 5 s of virtual time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.engine.cluster import Cluster
from lab.wire.failures import SASL, TLS, WINDOW_MS, FailureLog
from tests.engine.helpers import checked_cluster


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(1) as c:
        yield c


def lines(cluster: Cluster, kind: str) -> list[str]:
    return [e.text for e in cluster.events() if e.kind == kind]


def test_a_flood_of_failed_handshakes_is_one_line_then_one_summary_per_window(cluster: Cluster) -> None:
    log = FailureLog(cluster)
    for n in range(200):
        log.tls_failed(broker=1, listener="SSL", peer=f"127.0.0.1:{50000 + n}", reason="not TLS")
    assert lines(cluster, TLS) == [
        "TLS handshake from 127.0.0.1:50000 to broker 1's SSL listener failed: not TLS"
    ]
    cluster.run_for(WINDOW_MS)
    assert lines(cluster, TLS)[1:] == [
        "199 more failed TLS handshakes from 127.0.0.1 on broker 1's SSL listener in 5 s; the latest: not TLS"
    ]
    log.tls_failed(broker=1, listener="SSL", peer="127.0.0.1:60000", reason="no handshake within 60 s")
    cluster.run_for(WINDOW_MS)
    assert lines(cluster, TLS)[2:] == [
        "1 more failed TLS handshake from 127.0.0.1 on broker 1's SSL listener in 5 s; "
        "the latest: no handshake within 60 s"
    ]
    cluster.run_for(WINDOW_MS)  # a quiet window: forgotten, so the next failure is told in full again
    assert log.open == {}
    log.tls_failed(broker=1, listener="SSL", peer="127.0.0.1:60001", reason="not TLS")
    assert len(lines(cluster, TLS)) == 4
    assert log.total == 202


def test_each_host_and_listener_has_a_window_of_its_own(cluster: Cluster) -> None:
    log = FailureLog(cluster)
    log.tls_failed(broker=1, listener="SSL", peer="10.0.0.5:1000", reason="not TLS")
    log.tls_failed(broker=1, listener="SASL_SSL", peer="10.0.0.5:1001", reason="not TLS")
    log.tls_failed(broker=1, listener="SSL", peer="[::1]:1002", reason="not TLS")
    log.sasl_failed(
        broker=1,
        listener="SASL_SSL",
        peer="10.0.0.5:1003",
        client="kcat (client.id rdkafka) at 10.0.0.5:1003",
        mechanism="SCRAM-SHA-256",
        user="alice",
        reason="wrong password",
    )
    assert len(lines(cluster, TLS)) == 3
    assert lines(cluster, SASL) == [
        "SASL/SCRAM-SHA-256 authentication of User:alice (kcat (client.id rdkafka) at 10.0.0.5:1003) on "
        "broker 1's SASL_SSL listener failed: wrong password"
    ]
