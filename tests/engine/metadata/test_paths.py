"""Kafka's znode layout and JSON, byte for byte as KAFKA-FACTS.md shows it."""

from __future__ import annotations

import json

import pytest

from lab.engine.metadata import paths as zk
from lab.engine.metadata.memory import MemoryStore
from lab.engine.metadata.paths import (
    BrokerRegistration,
    ControllerRegistration,
    MalformedZnode,
    PartitionState,
    TopicAssignment,
)
from lab.engine.metadata.store import BadArguments, CreateOp, SessionState
from lab.engine.scheduler import Scheduler
from lab.engine.tasks import Task

# --- znode paths


@pytest.mark.parametrize("path", ["/", "/a", "/a/b-1/c_2", "/brokers/ids/0", "/a.b/..c"])
def test_valid_paths_pass(path: str) -> None:
    assert zk.check_path(path) == path


@pytest.mark.parametrize("path", ["", "a", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/a\x00"])
def test_invalid_paths_are_refused_by_name(path: str) -> None:
    with pytest.raises(BadArguments) as refused:
        zk.check_path(path)
    assert refused.value.code == "BADARGUMENTS"
    assert repr(path)[1:-1] in str(refused.value) or path == ""


def test_a_sequential_path_may_end_with_a_slash() -> None:
    assert zk.check_path("/q/", sequential=True) == "/q/"
    with pytest.raises(BadArguments):
        zk.check_path("/q/")


def test_non_string_paths_and_data_are_refused() -> None:
    with pytest.raises(BadArguments, match="must be a string"):
        zk.check_path(7)
    with pytest.raises(BadArguments, match="must be bytes"):
        zk.check_data("/a", "text")
    with pytest.raises(BadArguments, match="over the"):
        zk.check_data("/a", b"x" * (zk.MAX_DATA_BYTES + 1))
    with pytest.raises(BadArguments, match="version"):
        zk.check_version("/a", -2)
    with pytest.raises(BadArguments, match="multi takes"):
        zk.check_op("/a")
    zk.check_op(CreateOp(path="/q/", sequential=True))


def test_path_helpers() -> None:
    assert zk.parent_of("/a/b/c") == "/a/b"
    assert zk.parent_of("/a") == "/"
    assert zk.parent_of("/q/") == "/q"  # a sequential create's parent
    assert zk.name_of("/a/b") == "b"
    assert zk.join("/", "a") == "/a"
    assert zk.join("/a", "b") == "/a/b"
    assert zk.ancestors("/a/b/c") == ["/a", "/a/b"]
    assert zk.ancestors("/a") == []
    assert zk.sequence_suffix(42) == "0000000042"


def test_kafka_paths() -> None:
    assert zk.broker_path(1) == "/brokers/ids/1"
    assert zk.topic_path("orders") == "/brokers/topics/orders"
    assert zk.topic_partitions_path("orders") == "/brokers/topics/orders/partitions"
    assert zk.partition_path("orders", 0) == "/brokers/topics/orders/partitions/0"
    assert zk.partition_state_path("orders", 2) == "/brokers/topics/orders/partitions/2/state"
    assert zk.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert zk.topic_config_path("orders") == "/config/topics/orders"
    assert zk.ISR_CHANGE_PREFIX == "/isr_change_notification/isr_change_"
    assert zk.CONFIG_CHANGE_PREFIX == "/config/changes/config_change_"
    assert zk.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    assert zk.PREFERRED_REPLICA_ELECTION == "/admin/preferred_replica_election"
    assert zk.CONTROLLER == "/controller"
    assert zk.CONTROLLER_EPOCH == "/controller_epoch"


# --- JSON, exactly as Kafka writes it


def test_partition_state_json() -> None:
    state = PartitionState(leader=1, leader_epoch=5, isr=(1, 2, 3), controller_epoch=3)
    data = zk.encode_partition_state(state)
    assert data == b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":5,"isr":[1,2,3]}'
    assert zk.decode_partition_state(data) == state


def test_topic_assignment_json() -> None:
    assignment = TopicAssignment(partitions={1: (2, 3, 1), 0: (1, 2, 3)})
    data = zk.encode_topic_assignment(assignment)
    assert data == (
        b'{"version":3,"partitions":{"0":[1,2,3],"1":[2,3,1]},"adding_replicas":{},"removing_replicas":{}}'
    )
    decoded = zk.decode_topic_assignment(data)
    assert decoded.partitions == {0: (1, 2, 3), 1: (2, 3, 1)}
    assert (decoded.adding_replicas, decoded.removing_replicas, decoded.topic_id) == ({}, {}, None)


def test_topic_assignment_reads_versions_1_and_2_and_a_topic_id() -> None:
    v1 = zk.decode_topic_assignment(b'{"version":1,"partitions":{"0":[1,2]}}')
    assert v1 == TopicAssignment(partitions={0: (1, 2)})
    v2 = zk.decode_topic_assignment(
        b'{"version":2,"partitions":{"0":[1,2,3]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}'
    )
    assert (v2.adding_replicas, v2.removing_replicas) == ({0: (3,)}, {0: (1,)})
    with_id = TopicAssignment(partitions={0: (1,)}, topic_id="fLMkk1rTQ4qVWcyPgk3eVg")
    data = zk.encode_topic_assignment(with_id)
    assert data.startswith(b'{"version":3,"topic_id":"fLMkk1rTQ4qVWcyPgk3eVg","partitions":')
    assert zk.decode_topic_assignment(data) == with_id


def test_controller_json_and_epoch() -> None:
    data = zk.encode_controller(ControllerRegistration(broker_id=1, timestamp_ms=1_700_000_000_123))
    assert data == b'{"version":1,"brokerid":1,"timestamp":"1700000000123"}'
    assert zk.decode_controller(data) == ControllerRegistration(broker_id=1, timestamp_ms=1_700_000_000_123)
    assert zk.encode_controller_epoch(3) == b"3"
    assert zk.decode_controller_epoch(b"3") == 3


def test_broker_registration_json() -> None:
    reg = BrokerRegistration(broker_id=1, host="broker-1", port=9092, timestamp_ms=1000)
    data = zk.encode_broker_registration(reg)
    assert data == (
        b'{"version":5,"host":"broker-1","port":9092,"endpoints":["PLAINTEXT://broker-1:9092"],'
        b'"jmx_port":-1,"timestamp":"1000","listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"features":{}}'
    )
    decoded = zk.decode_broker_registration(1, data)
    assert (decoded.host, decoded.port, decoded.jmx_port, decoded.timestamp_ms) == (
        "broker-1",
        9092,
        -1,
        1000,
    )
    assert decoded.listeners() == ("PLAINTEXT://broker-1:9092",)
    racked = zk.encode_broker_registration(
        BrokerRegistration(broker_id=2, host="b2", port=9093, timestamp_ms=5, rack="dc1")
    )
    assert json.loads(racked)["rack"] == "dc1"
    assert zk.decode_broker_registration(2, racked).rack == "dc1"


def test_broker_registration_as_real_kafka_writes_it() -> None:
    # Kafka's docs example: SSL-only listeners leave host null and port -1.
    data = (
        b'{"features":{},"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"SSL"},'
        b'"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":"dc1","jmx_port":9999,'
        b'"port":-1,"host":null,"timestamp":"2233345666","version":5}'
    )
    reg = zk.decode_broker_registration(7, data)
    assert (reg.broker_id, reg.host, reg.port, reg.jmx_port, reg.rack) == (7, "host1", 9092, 9999, "dc1")
    assert reg.endpoints == ("CLIENT://host1:9092", "REPLICATION://host1:9093")
    assert reg.timestamp_ms == 2233345666


def test_an_ipv6_brokers_registration_has_its_endpoints_in_brackets_and_its_host_without() -> None:
    # Kafka writes "host" as the address itself and each endpoint as Utils.formatAddress does.
    reg = BrokerRegistration(broker_id=1, host="::1", port=9092, timestamp_ms=1)
    written = json.loads(zk.encode_broker_registration(reg))
    assert (written["host"], written["port"]) == ("::1", 9092)
    assert written["endpoints"] == ["PLAINTEXT://[::1]:9092"]
    sasl_only = BrokerRegistration(broker_id=2, host="", port=-1, endpoints=("SASL_SSL://[::1]:19096",))
    decoded = zk.decode_broker_registration(2, zk.encode_broker_registration(sasl_only))
    assert (decoded.host, decoded.port) == ("::1", 19096)


def test_a_registration_whose_endpoint_is_no_endpoint_is_refused() -> None:
    data = b'{"version":5,"host":null,"port":-1,"endpoints":["PLAINTEXT://broker-1"],"timestamp":"1"}'
    with pytest.raises(zk.MalformedZnode, match="LISTENER://host:port"):
        zk.decode_broker_registration(1, data)


def test_a_broker_with_no_plaintext_listener_registers_a_null_host_and_port_minus_one() -> None:
    reg = BrokerRegistration(
        broker_id=3, host="", port=-1, endpoints=("SSL://lab:19101", "SASL_SSL://lab:19104"), timestamp_ms=7
    )
    written = json.loads(zk.encode_broker_registration(reg))
    assert (written["host"], written["port"]) == (None, -1)
    assert written["endpoints"] == ["SSL://lab:19101", "SASL_SSL://lab:19104"]
    assert written["listener_security_protocol_map"] == {"SSL": "SSL", "SASL_SSL": "SASL_SSL"}


def test_notification_and_admin_json() -> None:
    isr = zk.encode_isr_change([("orders", 0), ("orders", 2)])
    assert (
        isr
        == b'{"version":1,"partitions":[{"topic":"orders","partition":0},{"topic":"orders","partition":2}]}'
    )
    assert zk.decode_isr_change(isr) == [("orders", 0), ("orders", 2)]

    moves = zk.encode_reassignment({("orders", 1): [3, 1], ("orders", 0): [1, 2]})
    assert moves == (
        b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]},'
        b'{"topic":"orders","partition":1,"replicas":[3,1]}]}'
    )
    assert zk.decode_reassignment(moves) == {("orders", 0): (1, 2), ("orders", 1): (3, 1)}

    election = zk.encode_preferred_replica_election([("orders", 0)])
    assert election == b'{"version":1,"partitions":[{"topic":"orders","partition":0}]}'
    assert zk.decode_preferred_replica_election(election) == [("orders", 0)]


def test_config_json() -> None:
    data = zk.encode_topic_config({"min.insync.replicas": "2", "retention.ms": "60000"})
    assert data == b'{"version":1,"config":{"min.insync.replicas":"2","retention.ms":"60000"}}'
    assert zk.decode_topic_config(data) == {"min.insync.replicas": "2", "retention.ms": "60000"}
    change = zk.encode_config_change("topics/orders")
    assert change == b'{"version":2,"entity_path":"topics/orders"}'
    assert zk.decode_config_change(change) == "topics/orders"


@pytest.mark.parametrize(
    ("decode", "data", "reason"),
    [
        (zk.decode_partition_state, b"not json", "not JSON"),
        (zk.decode_partition_state, b"[1,2]", "expected a JSON object"),
        (
            zk.decode_partition_state,
            b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1]}',
            "controller_epoch",
        ),
        (
            zk.decode_partition_state,
            b'{"version":2,"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1}',
            "version 2",
        ),
        (
            zk.decode_partition_state,
            b'{"version":1,"leader":"1","leader_epoch":0,"isr":[1],"controller_epoch":1}',
            "integer",
        ),
        (
            zk.decode_partition_state,
            b'{"version":1,"leader":1,"leader_epoch":0,"isr":[true],"controller_epoch":1}',
            "integer",
        ),
        (
            zk.decode_partition_state,
            b'{"version":1,"leader":1,"leader_epoch":0,"isr":5,"controller_epoch":1}',
            "list of integers",
        ),
        (zk.decode_topic_assignment, b'{"version":3,"partitions":{"x":[1]}}', "partition number"),
        (zk.decode_topic_assignment, b'{"version":3,"partitions":{"-1":[1]}}', "partition number"),
        (zk.decode_topic_assignment, b'{"version":3,"partitions":[1]}', "must be an object"),
        (zk.decode_controller, b'{"version":1,"timestamp":"1"}', "brokerid"),
        (zk.decode_controller_epoch, b"three", "integer"),
        (zk.decode_isr_change, b'{"version":1,"partitions":[{"topic":"t"}]}', "partition"),
        (zk.decode_reassignment, b'{"version":1,"partitions":[{"topic":"t","partition":0}]}', "replicas"),
        (zk.decode_topic_config, b'{"version":1,"config":{"a":1}}', "must be a string"),
        (zk.decode_config_change, b'{"version":2,"entity_path":"orders"}', "entity_path"),
        (zk.decode_config_change, b"\xff\xfe", "not JSON"),
    ],
)
def test_malformed_znodes_give_a_named_error(decode: object, data: bytes, reason: str) -> None:
    with pytest.raises(MalformedZnode, match=reason) as malformed:
        decode(data, "/some/path")  # type: ignore[operator]
    assert malformed.value.path == "/some/path"
    assert "/some/path" in str(malformed.value)


def test_malformed_broker_registration_names_its_path() -> None:
    with pytest.raises(MalformedZnode) as malformed:
        zk.decode_broker_registration(3, b'{"version":5,"endpoints":["nonsense"]}')
    assert malformed.value.path == "/brokers/ids/3"
    assert malformed.value.what == "broker registration"


# --- the persistent paths


def test_ensure_paths_creates_kafkas_persistent_paths_once() -> None:
    scheduler = Scheduler()
    store = MemoryStore(scheduler)
    session = store.open_session(name="broker-1", timeout_ms=6000, on_state=lambda _s: None)

    def run(task: Task[object]) -> object:
        while not task.outcome.done():
            assert scheduler.step()
        return task.outcome.result()

    run(Task.start(zk.ensure_paths(session)))
    run(Task.start(zk.ensure_paths(session)))  # again: nothing to do, no error
    for path in zk.PERSISTENT_PATHS:
        stat = run(Task.start(_exists(session, path)))
        assert stat is not None, path
    assert run(Task.start(_exists(session, zk.CONTROLLER_EPOCH))) is None  # the first controller makes it
    assert session.state is SessionState.CONNECTED


async def _exists(session: object, path: str) -> object:
    return await session.exists(path)  # type: ignore[attr-defined]
