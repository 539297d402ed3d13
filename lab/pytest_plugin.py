"""A pytest plugin: the ``kafka_lab`` fixture serves a real multi-broker cluster for a test.

Installed with kafka-lab (an entry point), so a project can test its own Kafka code without a
JVM::

    def test_my_consumer(kafka_lab):
        producer = KafkaProducer(bootstrap_servers=kafka_lab.bootstrap_servers)
        ...
        kafka_lab.cluster.kill_broker(1)   # the engine's Cluster API, for faults

Ask for more with a marker: ``@pytest.mark.kafka_lab(brokers=3, topics=["orders:3:3"],
config={"min.insync.replicas": "2"})``; secured listeners and their users with
``listeners=["SASL_SSL"], users={"alice": "alice-secret"}`` (``kafka_lab.bootstrap("SASL_SSL")``,
``kafka_lab.ca_file``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lab.cluster import ServedCluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka_lab(brokers=3, topics=(), config=None, listeners=(), users=None): options of the kafka_lab "
        "fixture's cluster",
    )


@pytest.fixture
def kafka_lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedCluster]:
    # Imported here, not at plugin load: every pytest run loads the plugin, few use the fixture.
    from lab.cluster import free_ports, parse_topic, serve

    marker = request.node.get_closest_marker("kafka_lab")
    options = dict(marker.kwargs) if marker is not None else {}
    brokers = int(options.get("brokers", 3))
    topics = [parse_topic(t) if isinstance(t, str) else t for t in options.get("topics", ())]
    config = {str(k): str(v) for k, v in (options.get("config") or {}).items()}
    listeners = [str(p) for p in options.get("listeners", ())]
    with serve(
        brokers=brokers,
        port=free_ports(brokers * (1 + len(listeners))),
        data_dir=tmp_path_factory.mktemp("kafka-lab"),
        topics=topics,
        config=config,
        listeners=listeners,
        users={str(k): str(v) for k, v in (options.get("users") or {}).items()},
    ) as served:
        yield served
