"""One sentence for each marker the dashboard draws, with the config that governs it.

A tooltip reads: what the marker means, then the config key with the lab's value beside
Kafka's default ("replica.lag.time.max.ms: lab 10000, Kafka 30000"). The sentences are the
lab's; the keys, defaults and docs come from the engine's config registry, so a tooltip
never states a default the engine does not use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lab.engine.config import BROKER_KEYS, CONSUMER_KEYS, PRODUCER_KEYS, TOPIC_KEYS, ConfigKey


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    sentence: str
    config: str | None = None  # the key that governs it (broker or topic scope)


ENTRIES: Mapping[str, Entry] = {
    "leader": Entry(
        sentence="The leader: every produce and every consumer fetch for this partition goes to this replica; "
        "the first replica listed is the preferred one.",
        config="auto.leader.rebalance.enable",
    ),
    "follower": Entry(
        sentence="A follower: it fetches from the leader and appends what it gets, ready to take over.",
        config="replica.fetch.wait.max.ms",
    ),
    "in_isr": Entry(
        sentence="In the ISR: this replica has caught up with the leader's log end recently enough.",
        config="replica.lag.time.max.ms",
    ),
    "out_of_isr": Entry(
        sentence="Out of the ISR: it fell behind for too long, so the high watermark no longer waits for it.",
        config="replica.lag.time.max.ms",
    ),
    "offline": Entry(
        sentence="Offline: no live leader, so nobody can write or read this partition until an ISR replica returns.",
        config="unclean.leader.election.enable",
    ),
    "not_hosted": Entry(
        sentence="This broker holds no replica of the partition (placement: replica j of partition i on the broker "
        "at index (i + j) mod n of the brokers in id order, counting from 0).",
    ),
    "controller": Entry(
        sentence="The controller: elected through the /controller znode, it chooses leaders and tells every broker.",
        config="zookeeper.session.timeout.ms",
    ),
    "session": Entry(
        sentence="The broker's ZooKeeper session: when it expires, /brokers/ids/<id> vanishes and the controller moves its leaderships.",
        config="zookeeper.session.timeout.ms",
    ),
    "log_start_offset": Entry(
        sentence="Log start: the oldest offset this replica still keeps; retention moves it forward "
        "(not the LSO, which in Kafka is the last stable offset of transactions).",
        config="retention.ms",
    ),
    "high_watermark": Entry(
        sentence="High watermark: every ISR replica has the records below it; consumers read only below it.",
        config="min.insync.replicas",
    ),
    "last_stable_offset": Entry(
        sentence="LSO, the last stable offset: the first offset of a transaction not yet committed or aborted "
        "(else the HW); read_committed consumers read only below it.",
        config="transaction.max.timeout.ms",
    ),
    "control_marker": Entry(
        sentence="A control batch: a transaction's commit or abort marker, written by the coordinator's "
        "WriteTxnMarkers; it takes an offset but no consumer ever gets it.",
        config="transaction.max.timeout.ms",
    ),
    "under_min_isr": Entry(
        sentence="Under min ISR: the ISR is smaller than min.insync.replicas, so every acks=all write to this "
        "partition fails with NOT_ENOUGH_REPLICAS (acks=1 and acks=0 writes still succeed).",
        config="min.insync.replicas",
    ),
    "log_end_offset": Entry(
        sentence="Log end offset: the offset the next record appended to this replica will get; followers advance it by fetching.",
        config="replica.fetch.wait.max.ms",
    ),
    "uncommitted": Entry(
        sentence="Above the high watermark: written here but not yet on every ISR replica, so consumers cannot see it yet.",
        config="replica.lag.time.max.ms",
    ),
    "leader_epoch": Entry(
        sentence="Leader epoch: it grows at every leader change; a follower truncates by it after a failover (KIP-101).",
        config="lab.leader.epochs",
    ),
    "producer_state": Entry(
        sentence="Idempotent producers (enable.idempotence, Kafka's default since 3.0): each has a producer id and "
        "epoch and numbers its batches per partition; the leader keeps each one's last five batches, so a retry "
        "is answered with the offset it got instead of being written twice, and a gap in the numbers is refused "
        "(OUT_OF_ORDER_SEQUENCE_NUMBER).",
    ),
    "transactional_id": Entry(
        sentence="transactional.id: a producer's name that outlives it: init_transactions gives it a producer "
        "id and a new epoch; the coordinator keeps its state in __transaction_state, so a producer that "
        "restarts with the same id finishes or aborts what the last one left open.",
    ),
    "txn_state": Entry(
        sentence="The coordinator's state of a transactional id (Kafka's TransactionState): Empty, Ongoing "
        "(partitions added), PrepareCommit or PrepareAbort (EndTxn written: it will end that way whatever "
        "happens), CompleteCommit or CompleteAbort (every marker written); PrepareEpochFence while a newer "
        "producer fences an open transaction.",
    ),
    "txn_coordinator": Entry(
        sentence="The transaction coordinator: the leader of the __transaction_state partition the "
        "transactional.id hashes to (Java's hashCode % partitions); each state is written there before it "
        "takes effect, so a new leader of that partition completes what was prepared.",
        config="transaction.state.log.num.partitions",
    ),
    "txn_timeout": Entry(
        sentence="transaction.timeout.ms (the producer's: lab "
        f"{PRODUCER_KEYS['transaction.timeout.ms'].default}, Kafka {PRODUCER_KEYS['transaction.timeout.ms'].kafka_default}; "
        "at most the broker's transaction.max.timeout.ms): an open transaction older than this is aborted by its coordinator, "
        "under a bumped epoch, so the producer that left it open is fenced; the coordinator looks this often.",
        config="transaction.abort.timed.out.transaction.cleanup.interval.ms",
    ),
    "producer_fenced": Entry(
        sentence="Fenced (PRODUCER_FENCED): a newer producer called init_transactions with the same "
        "transactional.id and got a higher epoch; the coordinator and the partitions' leaders refuse the old "
        "epoch, so a zombie cannot write or commit; the fenced producer can only be closed.",
    ),
    "in_flight": Entry(
        sentence="A request or response travelling between brokers, drawn from when it was sent to when it arrives.",
        config="lab.network.latency.ms",
    ),
    "broker_alive": Entry(
        sentence="Running: registered in ZooKeeper and serving its partitions.",
        config="zookeeper.session.timeout.ms",
    ),
    "broker_killed": Entry(
        sentence="Killed: a hard stop with no goodbye; ZooKeeper notices only when its session times out.",
        config="zookeeper.session.timeout.ms",
    ),
    "broker_stopped": Entry(
        sentence="Stopped by a controlled shutdown: it handed its leaderships over first, then left.",
        config="controlled.shutdown.enable",
    ),
    "broker_paused": Entry(
        sentence="Paused, like a long garbage-collection pause: it holds everything it receives and sends no heartbeats.",
        config="zookeeper.session.timeout.ms",
    ),
    "broker_slow": Entry(
        sentence="Slow network: every message to and from it is delayed, so it may fall out of the ISR.",
        config="replica.lag.time.max.ms",
    ),
    "broker_isolated": Entry(
        sentence="Cut off: from ZooKeeper its session expires; from the other brokers its followers stop fetching.",
        config="zookeeper.session.timeout.ms",
    ),
    "broker_starting": Entry(
        sentence="Starting: recovering its logs from disk, then registering in ZooKeeper.",
        config="zookeeper.session.timeout.ms",
    ),
    "ephemeral": Entry(
        sentence="Ephemeral znode: it lives as long as the ZooKeeper session that created it.",
        config="zookeeper.session.timeout.ms",
    ),
    "group_generation": Entry(
        sentence="Generation: the group's rebalance counter; each completed rebalance starts a new one.",
        config="group.initial.rebalance.delay.ms",
    ),
    "lag": Entry(
        sentence="Lag: the partition's high watermark minus the group's committed offset: records not yet processed.",
    ),
    "committed": Entry(
        sentence="Committed offset: where the group resumes this partition after a rebalance or a restart, kept in __consumer_offsets.",
        config="offsets.topic.num.partitions",
    ),
    "coordinator": Entry(
        sentence="The group coordinator: the leader of the __consumer_offsets partition this group hashes to.",
        config="offsets.topic.num.partitions",
    ),
}


def config_key(name: str) -> ConfigKey | None:
    return BROKER_KEYS.get(name) or TOPIC_KEYS.get(name) or CONSUMER_KEYS.get(name)


def lab_value(name: str, config: Mapping[str, str]) -> str | None:
    """The value this lab runs with: its own setting, else the broker-level fallback, else the lab default."""
    if name in config:
        return config[name]
    key = config_key(name)
    if key is None:
        return None
    if key.broker_name is not None and key.broker_name in config:
        return config[key.broker_name]
    return key.default


def effective_value(name: str, config: Mapping[str, str], topic: Mapping[str, str] | None = None) -> str:
    """What a topic runs with: its own override, else the lab's value (the broker's)."""
    if topic and name in topic and name in TOPIC_KEYS:
        return topic[name]
    value = lab_value(name, config)
    if value is None:
        raise KeyError(f"no config key {name!r} in the engine's registry")
    return value


def governed_by(name: str, config: Mapping[str, str], topic: Mapping[str, str] | None = None) -> str:
    """``"replica.lag.time.max.ms: lab 10000, Kafka 30000"``; with a topic's override of a topic key,
    ``"min.insync.replicas: topic 2 (lab 1, Kafka 1)"``, the value that topic really runs with first."""
    key = config_key(name)
    if key is None:
        raise KeyError(f"no config key {name!r} in the engine's registry")
    both = f"lab {lab_value(name, config)}, Kafka {key.kafka_default}"
    if topic and name in topic and name in TOPIC_KEYS:
        return f"{name}: topic {topic[name]} ({both})"
    return f"{name}: {both}"


def tip(marker: str, config: Mapping[str, str], topic: Mapping[str, str] | None = None) -> str:
    """The tooltip for a marker: its sentence, then the governing config with both values
    (and the topic's own value, for a marker of one topic that overrides it)."""
    entry = ENTRIES[marker]
    if entry.config is None:
        return entry.sentence
    return f"{entry.sentence} ({governed_by(entry.config, config, topic)})"


def tips(config: Mapping[str, str], topic: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every marker's tooltip, for templates."""
    return {marker: tip(marker, config, topic) for marker in ENTRIES}
