"""The consumer protocol's bytes, checked both ways against kio (Kafka's own schemas) and kafka-python."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.protocol import ConsumerProtocolMemberAssignment_v0, ConsumerProtocolMemberMetadata_v0
from kio.schema.consumer_protocol_assignment.v3 import data as kio_assignment
from kio.schema.consumer_protocol_subscription.v3 import data as kio_subscription
from kio.serial import entity_reader, entity_writer

from lab.engine.consumer_protocol import (
    MalformedProtocolData,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from lab.engine.ids import TopicPartition

topics = st.lists(st.text(alphabet="abcxyz._-", min_size=1, max_size=8), max_size=4, unique=True)
tps = st.lists(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "orders"]), st.integers(0, 50)), unique=True
)


@given(topics=topics, owned=tps, generation=st.integers(-1, 1000), rack=st.none() | st.text(max_size=5))
def test_a_subscription_reads_as_kafka_writes_it(topics, owned, generation, rack) -> None:
    sub = Subscription(topics=tuple(topics), owned=tuple(sorted(owned)), generation=generation, rack=rack)
    raw = encode_subscription(sub)
    assert struct.unpack_from(">h", raw)[0] == 3
    theirs, used = entity_reader(kio_subscription.ConsumerProtocolSubscription)(raw, 2)
    assert used == len(raw) - 2
    assert theirs.topics == tuple(topics)
    assert theirs.generation_id == generation
    assert theirs.rack_id == rack
    assert [(t.topic, p) for t in theirs.owned_partitions for p in t.partitions] == [
        (tp.topic, tp.partition) for tp in sorted(owned)
    ]
    assert decode_subscription(raw) == sub


@given(assigned=tps, user_data=st.none() | st.binary(max_size=10))
def test_an_assignment_round_trips_through_kio(assigned, user_data) -> None:
    raw = encode_assignment(assigned, user_data=user_data)
    theirs, _ = entity_reader(kio_assignment.ConsumerProtocolAssignment)(raw, 2)
    assert sorted(
        TopicPartition(t.topic, p) for t in theirs.assigned_partitions for p in t.partitions
    ) == sorted(assigned)
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", 3))
    entity_writer(kio_assignment.ConsumerProtocolAssignment)(buffer, theirs)
    back = decode_assignment(buffer.getvalue())
    assert sorted(back.partitions) == sorted(assigned)
    assert back.user_data == user_data


def test_kafka_pythons_v0_metadata_and_assignment_read() -> None:
    # kafka-python's Struct.encode holds itself weakly: keep the structs alive while encoding.
    metadata = ConsumerProtocolMemberMetadata_v0(0, ["orders", "audit"], b"")
    assert decode_subscription(metadata.encode()).topics == ("orders", "audit")
    assignment = ConsumerProtocolMemberAssignment_v0(0, [("orders", [0, 2])], b"")
    assert decode_assignment(assignment.encode()).partitions == (
        TopicPartition("orders", 0),
        TopicPartition("orders", 2),
    )


def test_a_newer_version_reads_as_the_newest_known() -> None:
    raw = bytearray(encode_subscription(Subscription(topics=("t",), generation=4)))
    struct.pack_into(">h", raw, 0, 9)
    raw += b"fields a future version added"
    assert decode_subscription(bytes(raw)).topics == ("t",)


@pytest.mark.parametrize(
    "raw", [b"", b"\x00", b"\x00\x00\x7f\xff\xff\xff", b"\xff\xff", b"\x00\x00\x00\x00\x00\x01\x00\x09ab"]
)
def test_garbage_is_malformed_not_a_crash(raw: bytes) -> None:
    with pytest.raises(MalformedProtocolData):
        decode_subscription(raw)
