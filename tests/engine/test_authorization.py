"""Every request authorized as Kafka's KafkaApis asks (lab/engine/authorization.py), on the memory
store in virtual time, by simulated clients that carry principals."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from lab.engine import protocol as p
from lab.engine.acl import LAB_CONTEXT, AclFilter, RequestContext, parse_binding
from lab.engine.cluster import Cluster
from lab.engine.errors import ClusterAuthorizationFailed, TopicAuthorizationFailed
from lab.engine.ids import TopicPartition
from lab.engine.network import Endpoint
from lab.engine.records import build_batch
from tests.engine.helpers import checked_cluster

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3, config=AUTHORIZER) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        c.create_topic("payments", partitions=1, replication_factor=3)
        yield c


def allow(
    c: Cluster, principal: str, operation: str, kind: str = "topic", name: str = "orders", **kw: str
) -> None:
    c.create_acls(
        [parse_binding(resource_type=kind, name=name, principal=principal, operation=operation, **kw)]
    )
    taken_in(c)


def taken_in(c: Cluster) -> None:
    held = c.describe_acls()
    c.wait_for(lambda: c.acls_taken_in(held), 5_000, "the brokers to read the ACLs")


def ask(c: Cluster, principal: str, body: object, broker: int = 1) -> object:
    """One request from ``principal`` to ``broker``, and its answer."""
    endpoint = Endpoint(c.network, c.scheduler, f"asker-{c.now_ms}", lambda env: None)
    endpoint.context = RequestContext(principal)
    answers: list[object] = []
    endpoint.request(broker, body, answers.append, timeout_ms=5_000)
    c.wait_for(lambda: bool(answers), 5_000, "the answer")
    endpoint.close()
    return answers[0]


def denials(c: Cluster) -> list[str]:
    return [e.text for e in c.journal if e.kind == "authorization_denied"]


def test_the_lab_and_its_brokers_are_super_users_so_nothing_changes_for_them(cluster: Cluster) -> None:
    producer = cluster.producer()
    assert producer.principal == LAB_CONTEXT.principal == "User:admin"
    f = producer.send("orders", value=b"v")
    cluster.run_for(500)
    assert f.result().offset == 0
    assert denials(cluster) == []


def test_a_producer_without_acls_is_denied_with_the_reason_in_the_timeline(cluster: Cluster) -> None:
    producer = cluster.producer(principal="User:alice")
    f = producer.send("orders", value=b"v")
    cluster.run_for(1_000)
    with pytest.raises(TopicAuthorizationFailed):
        f.result()
    assert denials(cluster)[0] == (
        "denied User:alice DESCRIBE on Topic:orders (Metadata from 127.0.0.1): "
        "no ACL on Topic:orders; allow.everyone.if.no.acl.found=false"
    )
    event = next(e for e in cluster.journal if e.kind == "authorization_denied")
    assert event.topic == "orders"
    assert event.data["principal"] == "User:alice"


def test_write_on_the_topic_lets_an_idempotent_producer_in(cluster: Cluster) -> None:
    allow(cluster, "User:alice", "write")
    producer = cluster.producer(principal="User:alice")
    f = producer.send("orders", value=b"v")
    cluster.run_for(1_000)
    assert f.result().topic == "orders"
    # WRITE on a topic answers InitProducerId too (KIP-679), and implies DESCRIBE for its metadata.
    assert denials(cluster) == []
    # Not another topic.
    g = producer.send("payments", value=b"v")
    cluster.run_for(1_000)
    with pytest.raises(TopicAuthorizationFailed):
        g.result()


def test_a_produce_is_denied_per_partition_and_served_for_the_rest(cluster: Cluster) -> None:
    allow(cluster, "User:alice", "write")
    leader = cluster.leader_of("orders", 0)
    assert leader == cluster.leader_of("payments", 0)  # both first partitions lead on one broker
    batch = build_batch([(None, b"x")], timestamp_ms=cluster.now_ms)
    answer = ask(
        cluster,
        "User:alice",
        p.ProduceRequest(
            acks=-1,
            timeout_ms=5_000,
            partitions={TopicPartition("orders", 0): batch, TopicPartition("payments", 0): batch},
        ),
        broker=leader,
    )
    assert isinstance(answer, p.ProduceResponse)
    assert answer.partitions[TopicPartition("payments", 0)].error == "TOPIC_AUTHORIZATION_FAILED"
    assert answer.partitions[TopicPartition("orders", 0)].error is None
    assert (
        cluster.snapshot()["topics"]["payments"]["partitions"][0]["logs"][str(leader)]["log_end_offset"] == 0
    )


def test_metadata_for_every_topic_leaves_out_what_the_principal_may_not_describe(cluster: Cluster) -> None:
    allow(cluster, "User:alice", "read")
    answer = ask(cluster, "User:alice", p.MetadataRequest(topics=None))
    assert isinstance(answer, p.MetadataResponse)
    assert set(answer.topics) == {"orders"}
    named = ask(cluster, "User:alice", p.MetadataRequest(topics=("orders", "payments")))
    assert isinstance(named, p.MetadataResponse)
    assert named.topics["payments"].error == "TOPIC_AUTHORIZATION_FAILED"
    assert named.topics["orders"].error is None
    # The filtered list is not a denial anyone did (Kafka's logIfDenied off); the named one is.
    assert [t for t in denials(cluster) if "Topic:payments" in t] == [
        "denied User:alice DESCRIBE on Topic:payments (Metadata from 127.0.0.1): "
        "no ACL on Topic:payments; allow.everyone.if.no.acl.found=false"
    ]


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(cluster: Cluster) -> None:
    allow(cluster, "User:alice", "describe", name="fresh")
    asked = p.MetadataRequest(topics=("fresh",), allow_auto_topic_creation=True)
    answer = ask(cluster, "User:alice", asked)
    assert isinstance(answer, p.MetadataResponse)
    assert answer.topics["fresh"].error == "TOPIC_AUTHORIZATION_FAILED"
    assert "fresh" not in cluster.topics()
    allow(cluster, "User:alice", "create", name="fresh")
    answer = ask(cluster, "User:alice", asked)
    assert isinstance(answer, p.MetadataResponse)
    assert answer.topics["fresh"].error == "LEADER_NOT_AVAILABLE"
    cluster.run_for(1_000)
    assert "fresh" in cluster.topics()


def test_a_consumer_group_needs_read_on_the_group_too(cluster: Cluster) -> None:
    allow(cluster, "User:carol", "read")
    consumer = cluster.consumer("billing", principal="User:carol")
    consumer.subscribe(["orders"])
    cluster.run_for(2_000)
    consumer.poll()
    assert consumer.assignment() == []
    assert any(
        t.startswith("denied User:carol DESCRIBE on Group:billing (FindCoordinator") for t in denials(cluster)
    )
    allow(cluster, "User:carol", "read", kind="group", name="billing")
    cluster.run_for(8_000)
    consumer.poll()
    assert sorted(tp.partition for tp in consumer.assignment()) == [0, 1]


def test_a_prefixed_deny_wins_over_a_literal_allow(cluster: Cluster) -> None:
    allow(cluster, "User:bob", "read", kind="group", name="billing")
    allow(cluster, "User:bob", "read", kind="group", name="bill", pattern="prefixed", permission="deny")
    answer = ask(
        cluster,
        "User:bob",
        p.JoinGroupRequest(
            group_id="billing",
            member_id="",
            group_instance_id=None,
            client_id="x",
            session_timeout_ms=6_000,
            rebalance_timeout_ms=6_000,
            protocol_type="consumer",
            protocols=(("range", b""),),
        ),
    )
    assert isinstance(answer, p.JoinGroupResponse)
    assert answer.error == "GROUP_AUTHORIZATION_FAILED"
    assert denials(cluster)[-1].startswith(
        "denied User:bob READ on Group:billing (JoinGroup from 127.0.0.1): DENY User:bob Read from * on Group:bill (prefixed)"
    )


def test_cluster_operations_need_the_cluster_resource(cluster: Cluster) -> None:
    answer = ask(cluster, "User:alice", p.DescribeAclsRequest(filter=AclFilter()))
    assert isinstance(answer, p.DescribeAclsResponse)
    assert answer.error == ClusterAuthorizationFailed.name
    answer = ask(
        cluster,
        "User:alice",
        p.ElectLeadersRequest(election_type=p.PREFERRED, partitions=None, timeout_ms=1_000),
    )
    assert isinstance(answer, p.ElectLeadersResponse)
    assert answer.error == ClusterAuthorizationFailed.name
    answer = ask(cluster, "User:alice", p.InitProducerIdRequest())
    assert isinstance(answer, p.InitProducerIdResponse)
    assert answer.error == ClusterAuthorizationFailed.name
    allow(cluster, "User:alice", "idempotent_write", kind="cluster", name="kafka-cluster")
    answer = ask(cluster, "User:alice", p.InitProducerIdRequest())
    assert isinstance(answer, p.InitProducerIdResponse)
    assert answer.error is None


def test_a_transactional_id_needs_write_on_it(cluster: Cluster) -> None:
    answer = ask(
        cluster, "User:alice", p.InitProducerIdRequest(transactional_id="tx-1", transaction_timeout_ms=60_000)
    )
    assert isinstance(answer, p.InitProducerIdResponse)
    assert answer.error == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_denials_are_summed_up_never_a_flood(cluster: Cluster) -> None:
    for _ in range(40):
        ask(cluster, "User:mallory", p.ListOffsetsRequest(partitions={TopicPartition("orders", 0): -1}))
    cluster.run_for(5_000)
    lines = [t for t in denials(cluster) if "Topic:orders" in t]
    assert lines[0].startswith("denied User:mallory DESCRIBE on Topic:orders (ListOffsets from 127.0.0.1)")
    assert lines[1] == (
        "denied User:mallory DESCRIBE on Topic:orders 39 more times in 5 s: "
        "no ACL on Topic:orders; allow.everyone.if.no.acl.found=false"
    )
    assert len(lines) == 2
    # While it goes on, one line per 5 s; once it stops, none.
    for _ in range(3):
        ask(cluster, "User:mallory", p.ListOffsetsRequest(partitions={TopicPartition("orders", 0): -1}))
        cluster.run_for(5_000)
    cluster.run_for(20_000)
    lines = [t for t in denials(cluster) if "Topic:orders" in t]
    assert len(lines) == 5, lines
    assert all(" more time" in t for t in lines[1:])


def test_deleting_an_acl_takes_the_right_away(cluster: Cluster) -> None:
    allow(cluster, "User:alice", "write")
    removed = cluster.delete_acls([AclFilter(principal="User:alice")])
    assert [str(b) for b in removed] == ["ALLOW User:alice Write from * on Topic:orders"]
    taken_in(cluster)
    assert all(not b.authorizer.bindings for b in cluster.brokers.values())
    f = cluster.producer(principal="User:alice").send("orders", value=b"v")
    cluster.run_for(1_000)
    with pytest.raises((TopicAuthorizationFailed, ClusterAuthorizationFailed)):
        f.result()


def test_allow_everyone_if_no_acl_found_opens_what_no_acl_names() -> None:
    with checked_cluster(3, config={**AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        c.create_topic("secret", partitions=1, replication_factor=3)
        allow(c, "User:bob", "write", name="secret")
        f = c.producer(principal="User:alice").send("orders", value=b"v")
        c.run_for(1_000)
        assert f.result().offset == 0
        g = c.producer(principal="User:alice").send("secret", value=b"v")
        c.run_for(1_000)
        with pytest.raises(TopicAuthorizationFailed):
            g.result()


def test_without_an_authorizer_every_principal_may_do_anything() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        f = c.producer(principal="User:nobody").send("orders", value=b"v")
        c.run_for(1_000)
        assert f.result().offset == 0
        assert denials(c) == []


def test_a_principal_is_checked_where_a_client_is_made(cluster: Cluster) -> None:
    from lab.engine.errors import InvalidRequest

    with pytest.raises(InvalidRequest, match="Type:name"):
        cluster.producer(principal="alice")


def test_transaction_requests_need_write_on_the_transactional_id_and_then_on_what_they_touch(
    cluster: Cluster,
) -> None:
    allow(cluster, "User:alice", "write", kind="transactional_id", name="tx-1")
    allow(cluster, "User:alice", "write")  # orders, not payments
    orders, payments = TopicPartition("orders", 0), TopicPartition("payments", 0)

    def add(transactional_id: str) -> p.AddPartitionsToTxnResponse:
        body = p.AddPartitionsToTxnRequest(
            transactional_id=transactional_id, producer_id=1, producer_epoch=0, partitions=(orders, payments)
        )
        answer = ask(cluster, "User:alice", body)
        assert isinstance(answer, p.AddPartitionsToTxnResponse)
        return answer

    # Kafka adds none of them: the topic denied says why, the other was not attempted.
    assert add("tx-1").partitions == {
        orders: "OPERATION_NOT_ATTEMPTED",
        payments: "TOPIC_AUTHORIZATION_FAILED",
    }
    assert set(add("tx-2").partitions.values()) == {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED"}
    offsets = ask(
        cluster,
        "User:alice",
        p.AddOffsetsToTxnRequest(
            transactional_id="tx-1", producer_id=1, producer_epoch=0, group_id="billing"
        ),
    )
    assert isinstance(offsets, p.AddOffsetsToTxnResponse)
    assert offsets.error == "GROUP_AUTHORIZATION_FAILED"
    end = ask(
        cluster,
        "User:alice",
        p.EndTxnRequest(transactional_id="tx-2", producer_id=1, producer_epoch=0, committed=True),
    )
    assert isinstance(end, p.EndTxnResponse)
    assert end.error == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    commit = ask(
        cluster,
        "User:alice",
        p.TxnOffsetCommitRequest(
            transactional_id="tx-1", group_id="billing", producer_id=1, producer_epoch=0, offsets={orders: 3}
        ),
    )
    assert isinstance(commit, p.TxnOffsetCommitResponse)
    assert commit.error == "GROUP_AUTHORIZATION_FAILED"
    markers = ask(
        cluster,
        "User:alice",
        p.WriteTxnMarkersRequest(
            markers=(
                p.TxnMarkerEntry(
                    producer_id=1, producer_epoch=0, committed=True, coordinator_epoch=0, partitions=(orders,)
                ),
            )
        ),
    )
    assert isinstance(markers, p.WriteTxnMarkersResponse)
    assert markers.results == {1: {orders: "CLUSTER_AUTHORIZATION_FAILED"}}
    described = ask(cluster, "User:alice", p.DescribeTransactionsRequest(transactional_ids=("tx-2",)))
    assert isinstance(described, p.DescribeTransactionsResponse)
    assert [(t.transactional_id, t.error) for t in described.transactions] == [
        ("tx-2", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    ]
    assert any("WRITE on TransactionalId:tx-2" in d for d in denials(cluster))


def test_a_transactional_producer_with_its_acls_commits_and_a_listing_shows_what_one_may_describe(
    cluster: Cluster,
) -> None:
    allow(cluster, "User:alice", "write", kind="transactional_id", name="tx-1")
    allow(cluster, "User:alice", "write")
    allow(cluster, "User:alice", "describe")
    producer = cluster.producer(principal="User:alice", transactional_id="tx-1")
    producer.init_transactions()
    producer.begin_transaction()
    sent = producer.send("orders", value=b"paid", partition=0)
    producer.commit_transaction()
    assert sent.result().offset == 0
    # Listing transactions without DESCRIBE on the cluster shows only the ones the principal may describe.
    listed = ask(cluster, "User:bob", p.ListTransactionsRequest())
    assert isinstance(listed, p.ListTransactionsResponse)
    assert listed.transactions == ()
    listed = ask(cluster, "User:admin", p.ListTransactionsRequest())
    assert isinstance(listed, p.ListTransactionsResponse)
    assert [t.transactional_id for t in listed.transactions] == ["tx-1"]


def test_scram_credentials_are_altered_and_described_with_the_cluster_resource(cluster: Cluster) -> None:
    from lab.engine.scram_admin import AlterScramRequest, AlterScramResponse, DescribeScramRequest

    altered = ask(cluster, "User:alice", AlterScramRequest(deletions=(("bob", "SCRAM-SHA-256"),)))
    assert isinstance(altered, AlterScramResponse)
    assert [(r.user, r.error) for r in altered.results] == [("bob", "CLUSTER_AUTHORIZATION_FAILED")]
    described = ask(cluster, "User:alice", DescribeScramRequest())
    assert getattr(described, "error", None) == "CLUSTER_AUTHORIZATION_FAILED"


def test_transactional_records_need_write_on_their_transactional_id_before_the_topic(
    cluster: Cluster,
) -> None:
    allow(cluster, "User:alice", "write")  # on orders: enough for plain records, not transactional ones
    orders = TopicPartition("orders", 0)
    batch = build_batch(
        [(None, b"x")],
        timestamp_ms=cluster.now_ms,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    for transactional_id in ("tx-9", None):
        request = p.ProduceRequest(
            acks=-1, timeout_ms=1_000, partitions={orders: batch}, transactional_id=transactional_id
        )
        answer = ask(cluster, "User:alice", request)
        assert isinstance(answer, p.ProduceResponse)
        assert answer.partitions[orders].error == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert cluster.partition_state("orders", 0)["logs"]["1"]["log_end_offset"] == 0


def test_a_consumer_without_read_on_the_topic_is_told_by_poll_and_reads_once_allowed(
    cluster: Cluster,
) -> None:
    cluster.producer().send("orders", value=b"paid", partition=0)
    cluster.run_for(500)
    allow(cluster, "User:carol", "describe")  # it may see the topic, not read it
    consumer = cluster.consumer(principal="User:carol", auto_offset_reset="earliest")
    consumer.assign([TopicPartition("orders", 0)])
    with pytest.raises(TopicAuthorizationFailed, match=r"Not authorized to access topics: \[orders\]"):
        consumer.poll(2_000)
    allow(cluster, "User:carol", "read")
    read: list[bytes | None] = []

    def poll() -> bool:
        with contextlib.suppress(TopicAuthorizationFailed):  # fetched before the brokers took the ACL in
            read.extend(r.value for r in consumer.poll(100))
        return bool(read)

    assert any(poll() for _ in range(50))  # each poll drives the clock up to 100 ms
    assert read == [b"paid"]
