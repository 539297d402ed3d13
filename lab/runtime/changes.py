"""Has anything a page shows changed? A cheap key of the engine's state, read instead of a snapshot.

A frame (snapshot, view models, fragments) costs milliseconds; the driver reads this key every
frame slot instead, and builds a frame only when it differs from the last frame's. The key holds
what the page draws from, and nothing that moves on its own with time: the clock is advanced by
the page itself between frames. It is read on the driver thread, from plain attributes: a few
microseconds per partition replica.

What it covers (``tests/runtime/test_changes.py`` checks it against the snapshot over a busy run):
the journal's cursor (every state change the engine tells about: brokers, elections, ISRs,
sessions, groups, topics, configs), every replica's offsets, leader and ISR, the brokers' states
and faults, the clients' counters, the groups' members, the coordinators' transactions (an open
one's timeout in whole seconds), the losses, the messages in flight, and
the sessions the server no longer hears (their countdown is drawn from the snapshot).

``tree_key`` is the same for what the lab writes to ZooKeeper: brokers, sessions, leaders, ISRs and
the journal (topics, configs, elections, groups coming and going), not the offsets and counters a
record moves. The driver reads the ZooKeeper tree again when it moved: a lab whose producers write
records but nothing else happens reads the tree every ``TREE_QUIET_INTERVAL_S``, not every second
(``tests/runtime/test_changes.py`` checks it against the tree read from the store).
"""

from __future__ import annotations

from typing import Any

from lab.engine.cluster import Cluster
from lab.engine.snapshot import broker_state, clients_view
from lab.engine.transactions import TxnState


def state_key(cluster: Cluster) -> tuple[Any, ...]:
    """Equal for two moments between which nothing a frame draws changed (except time itself)."""
    brokers = []
    for broker_id, broker in cluster.brokers.items():
        replicas = tuple(
            (
                tp,
                p.log.log_start_offset,
                p.log.log_end_offset,
                p.high_watermark,
                p.leader,
                p.leader_epoch,
                p.isr,
            )
            for tp, p in broker.partitions.items()
        )
        groups = tuple(
            (group_id, group.state, group.generation, tuple(group.members), len(group.offsets))
            for group_id, group in broker.groups.groups.items()
        )
        now = cluster.now_ms
        transactions = tuple(
            (
                meta.transactional_id,
                meta.state,
                meta.producer_id,
                meta.producer_epoch,
                len(meta.partitions),
                meta.pending,
                # An open transaction's timeout is drawn in whole seconds of virtual time.
                (meta.start_ms + meta.timeout_ms - now) // 1000 if meta.state is TxnState.ONGOING else None,
            )
            for meta in broker.transactions.transactions.values()
        )
        brokers.append(
            (
                broker_id,
                id(broker),
                broker_state(cluster, broker),
                broker.broker_epoch,
                broker.gate.backlog,
                broker.refused,
                _session(broker.session),
                _session(broker.previous_session),
                replicas,
                groups,
                transactions,
            )
        )
    return (
        cluster.journal.last_seq,
        tuple(brokers),
        tuple(sorted((b, tuple(sorted(s))) for b, s in cluster.isolation.items())),
        tuple(sorted(cluster.slow.items())),
        tuple(tuple(sorted(c.items(), key=str)) for c in clients_view(cluster)),
        tuple(env.id for env in cluster.network.in_flight()),
        tuple((tp, losses.count) for tp, losses in cluster.ledger.losses.items()),
    )


def _session(session: Any) -> tuple[Any, ...] | None:
    if session is None:
        return None
    expires_in = session.expires_in_ms
    # A session the server hears has no countdown; one it does not hear is drawn in tenths of a second.
    return (session.session_id, session.state, None if expires_in is None else expires_in // 100)


def tree_key(cluster: Cluster) -> tuple[Any, ...]:
    """Equal for two moments between which the lab wrote nothing to ZooKeeper, nor lost a session's
    ephemeral znodes: ``state_key`` without what records move (offsets, clients' counters, messages in
    flight) and without a session's countdown (only whether the server still hears it)."""
    brokers = []
    for broker_id, broker in cluster.brokers.items():
        replicas = tuple((tp, p.leader, p.leader_epoch, p.isr) for tp, p in broker.partitions.items())
        groups = tuple(
            (group_id, group.state, group.generation, tuple(group.members))
            for group_id, group in broker.groups.groups.items()
        )
        brokers.append(
            (
                broker_id,
                id(broker),
                broker_state(cluster, broker),
                broker.broker_epoch,
                _heard(broker.session),
                _heard(broker.previous_session),
                replicas,
                groups,
            )
        )
    return (cluster.journal.last_seq, tuple(brokers))


def _heard(session: Any) -> tuple[Any, ...] | None:
    if session is None:
        return None
    expires_in = session.expires_in_ms
    return (session.session_id, session.state, expires_in is None, expires_in is not None and expires_in <= 0)
