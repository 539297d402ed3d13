"""The snapshot: a JSON-safe picture of the whole cluster, with DESIGN.md's keys and shapes."""

from __future__ import annotations

import json
from typing import Any

from lab.engine.cluster import Cluster
from tests.engine.helpers import checked_cluster

MARKERS = ("log_start_offset", "high_watermark", "log_end_offset")


def _produce(c: Cluster, topic: str, n: int, *, acks: str = "all", partition: int | None = None) -> None:
    p = c.producer(acks=acks)
    for i in range(n):
        p.send(topic, f"v{i}", partition=partition)
    p.flush()


def _partition(snap: dict[str, Any], topic: str, partition: int) -> dict[str, Any]:
    found: dict[str, Any] = snap["topics"][topic]["partitions"][partition]
    assert found["partition"] == partition
    return found


def _brokers(snap: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {b["id"]: b for b in snap["brokers"]}


def test_the_snapshot_has_the_designs_keys_and_shapes_and_is_json() -> None:
    with Cluster.create(brokers=3, seed=1) as c:
        c.create_topic("orders", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
        _produce(c, "orders", 5, partition=0)
        c.run_for(1000)
        snap = c.snapshot()
        assert json.loads(json.dumps(snap)) == snap  # JSON-safe: no tuples, sets or objects inside
        assert {"time_ms", "controller", "controller_epoch", "brokers", "topics", "groups"} <= set(snap)
        assert snap["time_ms"] == c.now_ms
        assert snap["controller"] in (1, 2, 3)
        assert snap["controller_epoch"] >= 1
        assert [b["id"] for b in snap["brokers"]] == [1, 2, 3]
        assert all(b["state"] == "alive" for b in snap["brokers"])
        assert [b["controller"] for b in snap["brokers"]].count(True) == 1
        orders = snap["topics"]["orders"]
        assert orders["config"] == {"min.insync.replicas": "2"}
        assert [p["partition"] for p in orders["partitions"]] == [0, 1, 2]
        p0 = _partition(snap, "orders", 0)
        assert p0["replicas"] == [1, 2, 3]  # partition i on broker i % n first
        assert _partition(snap, "orders", 1)["replicas"] == [2, 3, 1]
        assert p0["leader"] == 1
        assert p0["leader_epoch"] == 0
        assert p0["isr"] == [1, 2, 3]
        assert set(p0["logs"]) == {"1", "2", "3"}  # keyed by broker id as a string, as JSON keys are
        for log in p0["logs"].values():
            assert {k: log[k] for k in MARKERS} == {
                "log_start_offset": 0,
                "high_watermark": 5,
                "log_end_offset": 5,
            }
        assert p0["logs"]["1"]["role"] == "leader"
        assert p0["logs"]["2"]["role"] == "follower"
        assert not p0["offline"]
        assert not p0["under_replicated"]
        assert snap["groups"] == {}
        [client] = snap["clients"]
        assert (
            client.items()
            >= {
                "name": "producer-1",
                "kind": "producer",
                "state": "running",
                "topics": ["orders"],  # what it wrote to, so the page can say
                "acks": "all",
                "sent": 5,
                "acked": 5,
                "failed": 0,
            }.items()
        )


def test_taking_a_snapshot_changes_nothing() -> None:
    with Cluster.create(brokers=3, seed=2) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        _produce(c, "orders", 3)
        before = c.now_ms
        assert c.snapshot() == c.snapshot()
        assert c.now_ms == before


def test_broker_states_after_kill_pause_isolate_and_slow() -> None:
    with Cluster.create(brokers=5, seed=3) as c:
        c.create_topic("orders", partitions=5, replication_factor=3)
        c.kill_broker(2)
        c.pause_broker(3)
        c.isolate_broker(4, from_="brokers")
        c.slow_broker(5, delay_ms=700)
        c.run_for(100)
        snap = c.snapshot()
        json.dumps(snap)
        brokers = _brokers(snap)
        assert {b: brokers[b]["state"] for b in brokers} == {
            1: "alive",
            2: "killed",
            3: "paused",
            4: "isolated",
            5: "slow",
        }
        assert brokers[4]["isolated_from"] == ["brokers"]
        assert brokers[5]["slow_ms"] == 700
        c.heal(4)
        c.heal(5)
        c.resume_broker(3)
        c.restart_broker(2)  # it registers once ZooKeeper has expired its old session
        c.wait_for(lambda: [b["state"] for b in c.snapshot()["brokers"]] == ["alive"] * 5, 15_000)


def test_each_broker_says_how_long_until_zookeeper_expires_a_session_it_no_longer_hears() -> None:
    with Cluster.create(brokers=3, seed=5, config={"zookeeper.session.timeout.ms": "2000"}) as c:
        brokers = _brokers(c.snapshot())
        one = brokers[1]
        assert one["session_id"] == c.brokers[1].session.session_id  # the owner of /brokers/ids/1
        assert (one["session_timeout_ms"], one["session_expires_in_ms"]) == (2000, None)  # heard
        c.kill_broker(2)
        c.pause_broker(3)
        c.run_for(500)
        brokers = _brokers(c.snapshot())
        assert brokers[2]["session_expires_in_ms"] == 1500  # 2000 ms from the kill
        assert brokers[3]["session_expires_in_ms"] == 1500  # a paused broker sends no heartbeat either
        killed_session = brokers[2]["session_id"]
        c.restart_broker(2)  # before ZooKeeper expired the old session: it waits that out
        c.run_for(500)
        two = _brokers(c.snapshot())[2]
        assert two["session_id"] != killed_session
        assert (two["previous_session_id"], two["previous_session_expires_in_ms"]) == (killed_session, 1000)
        c.resume_broker(3)
        assert _brokers(c.snapshot())[3]["session_expires_in_ms"] is None  # heard again in time
        c.run_for(1500)
        two = _brokers(c.snapshot())[2]
        assert two["previous_session_expires_in_ms"] is None  # expired: the store knows it ended
        assert two["session_expires_in_ms"] is None


def test_a_killed_brokers_replicas_show_offline_and_the_isr_shrinks() -> None:
    with Cluster.create(brokers=3, seed=4) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        _produce(c, "orders", 4)
        c.kill_broker(1)  # the leader (and the controller)
        c.run_for(10_000)  # the session expires; a new controller elects a new leader
        snap = c.snapshot()
        p0 = _partition(snap, "orders", 0)
        assert p0["leader"] in (2, 3)
        assert p0["leader_epoch"] == 1
        assert 1 not in p0["isr"]
        assert p0["under_replicated"]
        assert p0["logs"]["1"]["online"] is False
        assert p0["logs"]["1"]["log_end_offset"] == 4  # its log is still on disk
        assert p0["logs"][str(p0["leader"])]["role"] == "leader"
        assert snap["controller"] in (2, 3)
        assert snap["controller_epoch"] == 2


def test_each_replicas_markers_come_from_its_own_log() -> None:
    with Cluster.create(brokers=3, seed=5) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        _produce(c, "orders", 3)
        c.run_for(1000)
        c.isolate_broker(3, from_="brokers")
        _produce(c, "orders", 2, acks="1")
        c.run_for(200)
        logs = _partition(c.snapshot(), "orders", 0)["logs"]
        assert logs["1"]["log_end_offset"] == 5
        assert logs["2"]["log_end_offset"] == 5
        assert logs["3"]["log_end_offset"] == 3  # cut off: it has not fetched the last two
        assert logs["1"]["high_watermark"] == 3  # the leader waits for broker 3, still in the ISR
        for log in logs.values():
            assert log["log_start_offset"] <= log["high_watermark"] <= log["log_end_offset"]


def test_groups_and_clients_appear_once_a_group_and_simulated_clients_exist() -> None:
    with Cluster.create(brokers=3, seed=6) as c:
        c.create_topic("orders", partitions=3, replication_factor=3)
        producer = c.simulated_producer("orders", rate_per_s=50, keys=5)
        consumer = c.simulated_consumer("billing", ["orders"], processing_ms=2)
        c.run_for(6000)
        snap = c.snapshot()
        assert json.loads(json.dumps(snap)) == snap
        group = snap["groups"]["billing"]
        assert group["state"] == "Stable"
        assert group["generation"] >= 1
        assert group["assignor"] == "range"  # Kafka's default list starts with range
        assert [m["member_id"] for m in group["members"]] == [consumer.consumer.member_id]
        assert sorted(map(tuple, group["members"][0]["assignment"])) == [
            ("orders", 0),
            ("orders", 1),
            ("orders", 2),
        ]
        assert set(group["committed"]) <= {"orders/0", "orders/1", "orders/2"}
        assert sum(group["committed"].values()) > 0
        assert all(isinstance(offset, int) for offset in group["committed"].values())
        clients = {client["name"]: client for client in snap["clients"]}
        assert clients[producer.name]["kind"] == "producer"
        assert clients[producer.name]["state"] == "running"
        assert clients[producer.name]["acked"] > 0
        assert clients[consumer.name]["kind"] == "consumer"
        assert clients[consumer.name]["group"] == "billing"
        assert clients[consumer.name]["consumed"] > 0
        assert "__consumer_offsets" in snap["topics"]  # the group's offsets live in a topic too


def test_plain_clients_appear_with_their_counts() -> None:
    with Cluster.create(brokers=1, seed=7) as c:
        c.create_topic("orders", partitions=1, replication_factor=1)
        _produce(c, "orders", 2)
        reader = c.consumer()
        reader.assign([("orders", 0)])
        reader.seek("orders", 0, 0)
        reader.poll(timeout_ms=500)
        clients = {client["name"]: client for client in c.snapshot()["clients"]}
        assert (
            clients[reader.client_id].items()
            >= {
                "kind": "consumer",
                "state": "running",
                "assignment": [["orders", 0]],
                "consumed": 2,
            }.items()
        )
        reader.close()
        assert {client["name"]: client for client in c.snapshot()["clients"]}[reader.client_id][
            "state"
        ] == "closed"


def test_messages_in_flight_are_listed_with_their_times() -> None:
    with Cluster.create(brokers=3, seed=8, config={"lab.network.latency.ms": "40"}) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        p = c.producer(acks="all")
        p.send("orders", "x")  # first a Metadata request, then the Produce

        def produce_in_flight() -> list[dict[str, Any]]:
            return [m for m in c.snapshot()["in_flight"] if m["kind"] == "Produce"]

        c.wait_for(lambda: bool(produce_in_flight()), 1000)
        snap = c.snapshot()
        in_flight = snap["in_flight"]
        produce = produce_in_flight()
        assert len(produce) == 1
        assert produce[0]["src"] == p.client_id
        assert produce[0]["dst"] == 1
        assert produce[0]["response"] is False
        for message in in_flight:
            assert message["deliver_ms"] - message["sent_ms"] >= 40
            assert message["sent_ms"] <= snap["time_ms"] <= message["deliver_ms"]
        c.run_for(40)
        assert all(m["id"] != produce[0]["id"] for m in c.snapshot()["in_flight"])  # it arrived


def test_every_replica_shows_its_idempotent_producers() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        p = c.producer(client_id="idem")
        for i in range(5):
            p.send("orders", f"v{i}")
        p.flush()
        c.run_for(1000)  # the followers fetch the batches and rebuild the state from them
        logs = c.snapshot()["topics"]["orders"]["partitions"][0]["logs"]
        for broker in ("1", "2", "3"):
            assert logs[broker]["producers"] == [
                {
                    "producer_id": p.producer_id,
                    "producer_epoch": 0,
                    "first_sequence": 0,
                    "last_sequence": 4,
                    "last_offset": 4,
                    "txn_first_offset": None,  # not transactional
                }
            ]


def test_the_snapshot_shows_the_lso_the_markers_and_each_transactional_id() -> None:
    import json as _json

    from tests.engine.helpers import checked_cluster

    with checked_cluster(3) as c:
        c.create_topic("t", assignment={0: [1, 2, 3]})
        p = c.producer(transactional_id="tx", transaction_timeout_ms=30_000)
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"a", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send("t", b"b", partition=0)
        p.flush()
        c.run_for(300)
        snap = c.snapshot()
        _json.dumps(snap)
        log = snap["topics"]["t"]["partitions"][0]["logs"]["1"]
        assert (log["high_watermark"], log["last_stable_offset"], log["log_end_offset"]) == (3, 2, 3)
        assert log["transactions"]["ongoing"] == [{"producer_id": p.producer_id, "first_offset": 2}]
        assert log["transactions"]["markers"] == [
            {"offset": 1, "type": "COMMIT", "producer_id": p.producer_id}
        ]
        tx = snap["transactions"]["tx"]
        assert (tx["state"], tx["producer_id"], tx["partitions"]) == ("Ongoing", p.producer_id, [["t", 0]])
        assert tx["deadline_ms"] == tx["start_ms"] + 30_000
        p.abort_transaction()
        c.run_for(300)
        logs = c.snapshot()["topics"]["t"]["partitions"][0]["logs"]
        for broker in ("1", "2"):  # the leader, and a follower from the batches it fetched
            assert logs[broker]["transactions"]["aborted"] == [
                {"producer_id": p.producer_id, "first_offset": 2, "last_offset": 3}
            ]
        assert logs["1"]["last_stable_offset"] == logs["1"]["high_watermark"] == 4
