"""A JSON-safe picture of a cluster at one instant: what the dashboard draws and the API returns.

Partition state comes from the controller (what ZooKeeper says), refreshed by
the leader's own view where the leader is ahead (an ISR change the controller
has not heard of yet). Each replica's log markers come from that broker's own
log. Nothing here is invented for the picture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.engine.broker import Broker, BrokerState
from lab.engine.ids import TopicPartition

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster


def broker_state(cluster: Cluster, broker: Broker) -> str:
    if broker.state is BrokerState.DEAD:
        return "killed"
    if broker.state is BrokerState.STOPPED:
        return "stopped"
    if broker.state is BrokerState.PAUSED:
        return "paused"
    if cluster.isolation.get(broker.id):
        return "isolated"
    if broker.id in cluster.slow:
        return "slow"
    if broker.state is BrokerState.STARTING:
        return "starting"
    return "alive"


def _controller_view(
    cluster: Cluster,
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, Any], dict[str, dict[str, str]], int]:
    """What the newest controller knows (or knew, if it is gone): assignments, states, configs, epoch."""
    ctx = cluster.ctx.controller_context
    if ctx is None:
        return {}, {}, {}, 0
    return ctx.assignments, ctx.states, ctx.topic_configs, ctx.epoch


ABORTED_SHOWN = 20  # the latest aborted transactions a replica's view lists


def transactions_view(cluster: Cluster) -> dict[str, Any]:
    """Each transactional id as its coordinator has it now (state, producer id and epoch, partitions,
    the coordinator and when it would abort the transaction)."""
    out: dict[str, Any] = {}
    for broker in cluster.brokers.values():
        coordinator = broker.transactions
        if not broker.alive:
            continue
        for transactional_id, meta in coordinator.transactions.items():
            if coordinator._partition_of(transactional_id) in coordinator.partitions:
                out[transactional_id] = coordinator.describe(meta)
    return dict(sorted(out.items()))


def replica_log(broker: Broker, tp: TopicPartition, *, segments: bool = False) -> dict[str, Any] | None:
    partition = broker.partitions.get(tp)
    if partition is None:
        return None
    log = partition.log
    latest = log.leader_epoch_cache.latest_epoch
    out: dict[str, Any] = {
        "log_start_offset": log.log_start_offset,
        "high_watermark": partition.high_watermark,
        # The last stable offset: read_committed consumers read below it (an open transaction holds it).
        "last_stable_offset": partition.last_stable_offset,
        "log_end_offset": log.log_end_offset,
        "leader_epoch": -1 if latest is None else latest,
        "online": broker.alive,
        "role": "leader" if partition.is_leader else ("follower" if partition.leader >= 0 else "none"),
        # Idempotent producers as this replica's producer state has them (a follower rebuilds it too).
        "producers": [
            {
                "producer_id": p.producer_id,
                "producer_epoch": p.producer_epoch,
                "first_sequence": p.first_sequence,
                "last_sequence": p.last_sequence,
                "last_offset": p.last_offset,
                "txn_first_offset": p.current_txn_first_offset,
            }
            for p in log.producer_state.views()
        ],
        # Transactions on this replica: the open ones (where each began), the control batches
        # (commit and abort markers) it last wrote, and the aborted ones its .txnindex files hold.
        "transactions": {
            "ongoing": [
                {"producer_id": pid, "first_offset": first}
                for pid, first in sorted(log.producer_state.ongoing.items(), key=lambda kv: kv[1])
            ],
            "markers": [
                {"offset": offset, "type": "COMMIT" if commit else "ABORT", "producer_id": pid}
                for offset, commit, pid in log.recent_markers
            ],
            "aborted": [
                {"producer_id": t.producer_id, "first_offset": t.first_offset, "last_offset": t.last_offset}
                for t in log.aborted_transactions()[-ABORTED_SHOWN:]
            ],
        },
    }
    if segments:
        out["segments"] = [
            {"base_offset": s.base_offset, "next_offset": s.next_offset, "size": s.size_in_bytes}
            for s in log.segments
        ]
    return out


def partition_view(cluster: Cluster, tp: TopicPartition, *, segments: bool = False) -> dict[str, Any]:
    assignments, states, _, _ = _controller_view(cluster)
    replicas = list(assignments.get(tp, ()))
    state = states.get(tp)
    leader = state.leader if state is not None else -1
    epoch = state.leader_epoch if state is not None else -1
    isr = list(state.isr) if state is not None else []
    # The leader may have changed the ISR more recently than the controller heard.
    if leader >= 0 and leader in cluster.brokers:
        lb = cluster.brokers[leader]
        lp = lb.partitions.get(tp)
        if lb.alive and lp is not None and lp.is_leader and lp.leader_epoch == epoch:
            isr = list(lp.isr)
    live = {b.id for b in cluster.brokers.values() if b.alive}
    logs: dict[str, Any] = {}
    for r in replicas:
        broker = cluster.brokers.get(r)
        if broker is not None:
            view = replica_log(broker, tp, segments=segments)
            if view is not None:
                logs[str(r)] = view
    return {
        "partition": tp.partition,
        "replicas": replicas,
        "leader": leader,
        "leader_epoch": epoch,
        "isr": isr,
        "offline": leader < 0 or leader not in live,
        "under_replicated": len(isr) < len(replicas),
        "logs": logs,
    }


def session_view(broker: Broker) -> dict[str, Any]:
    """A broker's ZooKeeper session as the server sees it: its id (the ephemeral owner of the broker's
    /brokers/ids znode), its timeout, and how long until the server expires it while it hears
    nothing (None while heard); the same for a killed run's session a restarted broker waits out."""
    session, previous = broker.session, broker.previous_session
    return {
        "session_id": None if session is None else session.session_id,
        "session_timeout_ms": broker.config.int("zookeeper.session.timeout.ms"),
        "session_expires_in_ms": None if session is None else session.expires_in_ms,
        "previous_session_id": None if previous is None else previous.session_id,
        "previous_session_expires_in_ms": None if previous is None else previous.expires_in_ms,
    }


def take(cluster: Cluster, *, segments: bool = False) -> dict[str, Any]:
    assignments, _, configs, controller_epoch = _controller_view(cluster)
    ctx = cluster.ctx.controller_context
    moving = {} if ctx is None else dict(ctx.reassignments)
    topics: dict[str, Any] = {}
    for tp in sorted(assignments):
        topic = topics.setdefault(
            tp.topic, {"config": configs.get(tp.topic, {}), "partitions": [], "reassigning": {}}
        )
        topic["partitions"].append(partition_view(cluster, tp, segments=segments))
        if tp in moving:
            # A reassignment under way: the replicas it is moving to (the partition lists both sets meanwhile).
            topic["reassigning"][str(tp.partition)] = list(moving[tp])
    controller = cluster.controller_id()
    brokers = []
    for broker_id in cluster.broker_ids:
        broker = cluster.brokers[broker_id]
        brokers.append(
            {
                "id": broker_id,
                "state": broker_state(cluster, broker),
                "controller": broker_id == controller,
                "stale_controller": broker.alive
                and broker.controller is not None
                and broker_id != controller,
                "isolated_from": sorted(cluster.isolation.get(broker_id, set())),
                "slow_ms": cluster.slow.get(broker_id, 0),
                "session": None if broker.session is None else broker.session.state.value,
                **session_view(broker),
                "broker_epoch": broker.broker_epoch,
                "backlog": broker.gate.backlog,
                "refused": broker.refused,  # why it would not start (a log directory of another cluster)
            }
        )
    snapshot: dict[str, Any] = {
        "name": cluster.name,
        "time_ms": cluster.now_ms,
        "store": "zookeeper" if cluster.store.realtime else "memory",
        "controller": controller,
        "controller_epoch": controller_epoch,
        "brokers": brokers,
        "topics": topics,
        "groups": groups_view(cluster),
        "transactions": transactions_view(cluster),
        "clients": clients_view(cluster),
        "acls": acls_view(cluster),
        "in_flight": [
            {
                "id": env.id,
                "kind": env.kind,
                "src": env.src,
                "dst": env.dst,
                "sent_ms": env.sent_ms,
                "deliver_ms": env.deliver_ms,
                "response": env.is_response,
            }
            for env in cluster.network.in_flight()
        ],
        "journal_seq": cluster.journal.last_seq,
        "lost_records": lost_records_view(cluster),
    }
    for hook in cluster.snapshot_hooks:
        hook(snapshot)
    return snapshot


def groups_view(cluster: Cluster) -> dict[str, Any]:
    """Each group as its coordinator (the live leader of its __consumer_offsets partition) sees it."""
    out: dict[str, Any] = {}

    def high_watermark(tp: TopicPartition) -> int | None:
        leader = cluster.leader_of(tp.topic, tp.partition)
        return None if leader is None else cluster.brokers[leader].partitions[tp].high_watermark

    from lab.engine.groups import OFFSETS_TOPIC

    for broker in cluster.brokers.values():
        coordinator = broker.groups
        for group_id, group in sorted(coordinator.groups.items()):
            if group_id in out:
                continue
            from lab.engine.groups import partition_for_group

            tp = TopicPartition(OFFSETS_TOPIC, partition_for_group(group_id, coordinator.num_partitions))
            if cluster.leader_of(tp.topic, tp.partition) != broker.id:
                continue
            out[group_id] = coordinator.describe(group, high_watermark)
    return out


def acls_view(cluster: Cluster) -> dict[str, Any]:
    """What the brokers' authorizers enforce: a running broker's ACL cache (the change nodes read), and
    the terms (super.users, allow.everyone.if.no.acl.found)."""
    config = cluster.ctx.config
    held = next(
        (b.authorizer.bindings for b in cluster.brokers.values() if b.alive and b.authorizer.loaded), set()
    )
    return {
        "enforced": bool(config.values.get("authorizer.class.name")),
        "super_users": [s.strip() for s in str(config.values.get("super.users", "")).split(";") if s.strip()],
        "allow_everyone_if_no_acl_found": config.bool("allow.everyone.if.no.acl.found"),
        "bindings": sorted(
            (
                {
                    "resource_type": b.resource.type.value,
                    "name": b.resource.name,
                    "pattern": b.resource.pattern.value,
                    "principal": b.entry.principal,
                    "host": b.entry.host,
                    "operation": b.entry.operation.value,
                    "permission": b.entry.permission.value,
                }
                for b in held
            ),
            key=lambda d: tuple(d.values()),
        ),
    }


def clients_view(cluster: Cluster) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [sim.describe() for sim in cluster.simulated.values()]
    simulated = set(cluster.simulated)
    from lab.engine.clients import Producer
    from lab.engine.membership import GroupConsumer

    for name, client in cluster.clients.items():
        if name in simulated:
            continue
        if isinstance(client, Producer):
            out.append(
                {
                    "name": name,
                    "kind": "producer",
                    "state": "closed" if client.closed else "running",
                    "topics": list(client.topics),
                    "acks": {-1: "all", 0: "0", 1: "1"}[client.acks],
                    "sent": client.sent,
                    "acked": client.acked,
                    "failed": client.failed,
                    "retried": client.retried,
                    # A transactional producer's state (transactional.id, Kafka's client state, its partitions).
                    "transaction": None if client.txn is None else client.txn.describe(),
                    "principal": client.principal,
                }
            )
        else:
            view: dict[str, Any] = {
                "name": name,
                "kind": "consumer",
                "state": "closed" if client.closed else "running",
                "assignment": [[tp.topic, tp.partition] for tp in client.assignment()],
                "consumed": client.consumed,
                "principal": client.principal,
            }
            if isinstance(client, GroupConsumer):
                view.update(group=client.group_id, member_id=client.member_id, member_state=client.state)
            out.append(view)
    return out


LOST_SHOWN = 20  # lost records shown in full per partition (all are counted)


def lost_records_view(cluster: Cluster) -> list[dict[str, Any]]:
    """Every partition that lost acknowledged records, for the life of the cluster: how many, at
    which offsets, and the newest of them in full."""
    from lab.engine.invariants import ranges

    out: list[dict[str, Any]] = []
    for tp, losses in sorted(cluster.ledger.losses.items()):
        if not losses.count:
            continue
        # The newest found first; one finding's records in offset order.
        newest = sorted(
            list(losses.newest)[-LOST_SHOWN:], key=lambda lost: (-lost.detected_ms, lost.record.offset)
        )
        out.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "count": losses.count,
                "offsets": ranges(losses.offsets()),
                "records": [
                    {
                        "offset": lost.record.offset,
                        "key": _text(lost.record.key),
                        "value": _text(lost.record.value),
                        "acks": "all" if lost.record.acks == -1 else str(lost.record.acks),
                        "producer": lost.record.producer,
                        "acked_ms": lost.record.time_ms,
                        "detected_ms": lost.detected_ms,
                        "why": lost.why,
                    }
                    for lost in newest
                ],
            }
        )
    return out


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")
