"""A broker's files and znodes, as Kafka writes them: meta.properties, partition.metadata, registration."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.engine.cluster import LAB_EPOCH_MS, Cluster
from lab.engine.errors import InconsistentClusterId
from lab.engine.ids import TopicPartition
from tests.engine.helpers import checked_cluster, part, texts

UUID = re.compile(r"^[A-Za-z0-9_-]{22}$")  # 16 bytes, base64url, no padding


def znode(c: Cluster, path: str) -> dict[str, object]:
    return next(n for n in c.zookeeper_tree() if n["path"] == path)


def test_the_cluster_id_is_in_zookeeper_and_in_every_brokers_meta_properties() -> None:
    with checked_cluster(3) as c:
        node = znode(c, "/cluster/id")
        data = json.loads(str(node["data"]))
        assert data["version"] == "1"  # Kafka writes it as a string here
        assert UUID.match(data["id"])
        assert not node["ephemeral"]
        for b in (1, 2, 3):
            meta = (c.brokers[b].log_dir / "meta.properties").read_text()
            assert meta.splitlines() == ["version=0", f"broker.id={b}", f"cluster.id={data['id']}"]


def test_a_broker_whose_meta_properties_name_another_cluster_refuses_to_start() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        c.kill_broker(3)
        meta = c.brokers[3].log_dir / "meta.properties"
        meta.write_text(meta.read_text().replace("cluster.id=", "cluster.id=X"))
        stored = meta.read_text()
        c.restart_broker(3)
        c.run_for(8000)  # its old session expires meanwhile: /brokers/ids/3 goes
        cluster_id = json.loads(str(znode(c, "/cluster/id")["data"]))["id"]
        [said] = texts(c, "broker_refused")
        assert said == (
            f"broker 3 refuses to start: InconsistentClusterIdException: The Cluster ID {cluster_id} doesn't "
            f"match stored clusterId Some(X{cluster_id}) in meta.properties. The broker is trying to join the "
            "wrong cluster. Configured zookeeper.connect may be wrong."
        )
        assert c.snapshot()["brokers"][2]["state"] == "stopped"
        assert "3" not in [
            n["path"].rsplit("/", 1)[1] for n in c.zookeeper_tree() if n["path"].startswith("/brokers/ids/")
        ]
        assert meta.read_text() == stored  # it wrote nothing
        assert part(c, "t", 0)["isr"] == [1, 2]


def test_a_cluster_made_on_another_clusters_log_directories_refuses_to_start(tmp_path: Path) -> None:
    first = Cluster.create(brokers=1, seed=1, data_dir=tmp_path)
    first.close()
    again = Cluster.create(brokers=1, seed=1, data_dir=tmp_path)  # the same cluster: its id comes back
    again.close()
    with pytest.raises(InconsistentClusterId, match="The broker is trying to join the wrong cluster"):
        Cluster.create(brokers=1, seed=2, data_dir=tmp_path)


def test_a_topic_has_an_id_in_its_znode_and_in_every_replicas_partition_metadata() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        data = json.loads(str(znode(c, "/brokers/topics/orders")["data"]))
        assert list(data) == ["version", "topic_id", "partitions", "adding_replicas", "removing_replicas"]
        assert data["version"] == 3
        topic_id = data["topic_id"]
        assert UUID.match(topic_id)
        for b in (1, 2, 3):
            for p in (0, 1):
                text = (c.brokers[b].log_dir / f"orders-{p}" / "partition.metadata").read_text()
                assert text == f"version: 0\ntopic_id: {topic_id}"
        c.create_topic("payments")
        other = json.loads(str(znode(c, "/brokers/topics/payments")["data"]))["topic_id"]
        assert other != topic_id


def test_a_topic_without_an_id_gets_one_from_the_controller() -> None:
    from lab.engine.metadata import paths

    with checked_cluster(3) as c:
        admin = c.wait(c._admin_session())
        legacy = paths.TopicAssignment(partitions={0: (1, 2)})  # as a Kafka before 2.8 wrote it
        c.wait(admin.create(paths.topic_path("old"), paths.encode_topic_assignment(legacy)))
        c.wait_for(lambda: c.leader_of("old", 0) is not None, 10_000)
        topic_id = json.loads(str(znode(c, "/brokers/topics/old")["data"])).get("topic_id")
        assert topic_id is not None
        assert UUID.match(topic_id)
        assert texts(c, "topic_id_assigned") == [
            f"controller 1 gave topic old its topic id {topic_id} (KIP-516)"
        ]
        assert (c.brokers[2].log_dir / "old-0" / "partition.metadata").read_text().endswith(topic_id)


def test_a_log_of_another_topic_with_the_same_name_is_not_served() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        c.kill_broker(3)
        (c.brokers[3].log_dir / "t-0" / "partition.metadata").write_text(
            "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA"
        )
        c.restart_broker(3)
        c.run_for(10_000)  # its old session expires, it registers, the controller sends LeaderAndIsr
        assert any("INCONSISTENT_TOPIC_ID" in t for t in texts(c, "broker_error"))
        assert part(c, "t", 0)["isr"] == [1, 2]
        assert c.brokers[3].partitions[TopicPartition("t", 0)].leader < 0


def test_a_broker_advertised_on_ipv6_registers_its_endpoints_in_brackets_as_kafka_does() -> None:
    ipv6 = {
        b: {"advertised.listeners": f"PLAINTEXT://[::1]:{19091 + b},SASL_SSL://[::1]:{19094 + b}"}
        for b in (1, 2)
    }
    with Cluster.create(brokers=2, seed=3, listener_config=ipv6) as c:
        registered = json.loads(str(znode(c, "/brokers/ids/2")["data"]))
        assert registered["endpoints"] == ["PLAINTEXT://[::1]:19093", "SASL_SSL://[::1]:19096"]
        assert (registered["host"], registered["port"]) == ("::1", 19093)
    named = {1: {"advertised.listeners": "PLAINTEXT://kafka-1.lab:19092"}}
    with Cluster.create(brokers=1, seed=3, listener_config=named) as c:
        registered = json.loads(str(znode(c, "/brokers/ids/1")["data"]))
        assert registered["endpoints"] == ["PLAINTEXT://kafka-1.lab:19092"]
        assert (registered["host"], registered["port"]) == ("kafka-1.lab", 19092)


def test_registration_and_controller_timestamps_are_epoch_milliseconds_as_strings() -> None:
    with Cluster.create(brokers=2, seed=3, epoch_ms=1_767_225_600_000) as c:
        registered = json.loads(str(znode(c, "/brokers/ids/2")["data"]))["timestamp"]
        controller = json.loads(str(znode(c, "/controller")["data"]))["timestamp"]
        assert isinstance(registered, str)
        assert isinstance(controller, str)
        assert 1_767_225_600_000 <= int(registered) <= 1_767_225_600_000 + c.now_ms
        assert 1_767_225_600_000 <= int(controller) <= 1_767_225_600_000 + c.now_ms
    stamps = []
    for _ in range(2):  # no epoch given: a fixed one, so a seed gives the same znodes every run
        with Cluster.create(brokers=1, seed=3) as fixed:
            stamps.append(int(json.loads(str(znode(fixed, "/controller")["data"]))["timestamp"]))
            assert LAB_EPOCH_MS <= stamps[-1] <= LAB_EPOCH_MS + fixed.now_ms
    assert stamps[0] == stamps[1]
