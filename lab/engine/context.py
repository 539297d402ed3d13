"""What every broker of one cluster shares: the clock, the network, the metadata store, the journal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from random import Random  # seeded instances only: never the global generator
from typing import Any

from lab.engine.config import BrokerConfig
from lab.engine.events import Journal
from lab.engine.ids import kafka_uuid
from lab.engine.metadata.store import MetadataStore
from lab.engine.network import Network
from lab.engine.scheduler import Scheduler


@dataclass(slots=True)
class EngineContext:
    scheduler: Scheduler
    network: Network
    store: MetadataStore
    journal: Journal
    config: BrokerConfig
    data_dir: Path
    # What the newest controller knew (ControllerContext), kept after it dies: the pictures'
    # and the invariants' view of which broker should lead each partition.
    controller_context: Any = None
    broker_ids: list[int] = field(default_factory=list)  # the brokers the cluster was made with
    # Each broker's listener (host, port), when the runtime serves the Kafka protocol: what a
    # broker registers in /brokers/ids and what Metadata tells clients.
    advertised: dict[int, tuple[str, int]] = field(default_factory=dict)
    # Each broker's listener settings as its server.properties would say them (``listeners``,
    # ``advertised.listeners``...: config.LISTENER_KEYS), set by the runtime that opens its sockets.
    listener_config: dict[int, dict[str, str]] = field(default_factory=dict)
    # Called with a topic's name when the controller starts deleting it, whoever asked.
    on_topic_deletion: list[Any] = field(default_factory=list)
    # Wall-clock milliseconds at virtual time zero: what Kafka's time.milliseconds() would read,
    # for the timestamps Kafka writes into znodes. Given from outside (the engine reads no clock).
    epoch_ms: int = 0
    # The id a broker proposes for /cluster/id (the first to write it wins), from the seed alone,
    # so a cluster rebuilt from its seed and data directory finds the id its meta.properties keep.
    cluster_id_proposal: str = ""
    # Topic ids (KIP-516): from the seed and the epoch, so each cluster's differ.
    # Never the global random nor an entropy-seeded one: a context made without one stays reproducible.
    topic_ids: Random = field(default_factory=lambda: Random("topic.id"))
    # The authorizer's denials, summed up for the timeline (authorizer.DenialLog, made on first use).
    denials: Any = None
    # Told of every ACL and SCRAM credential ZooKeeper took, whoever wrote it (the lab's admin client, a
    # broker serving CreateAcls, DeleteAcls or AlterUserScramCredentials): the runtime keeps them in the
    # lab's spec, so what a person was told is stored survives a reset whichever way it came.
    acl_watchers: list[Any] = field(default_factory=list)  # f(added, removed): AclBindings
    credential_watchers: list[Any] = field(default_factory=list)  # f(user, mechanism, credential | None)
    topic_watchers: list[Any] = field(default_factory=list)  # f(admin.TopicChange): topics, the same way

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    @property
    def wall_ms(self) -> int:
        """The time a Kafka broker would read now (epoch milliseconds)."""
        return self.epoch_ms + self.scheduler.now_ms

    def acls_changed(self, added: Sequence[Any], removed: Sequence[Any]) -> None:
        for watcher in list(self.acl_watchers):
            watcher(added, removed)

    def credential_changed(self, user: str, mechanism: str, credential: Any) -> None:
        for watcher in list(self.credential_watchers):
            watcher(user, mechanism, credential)

    def topics_changed(self, change: Any) -> None:
        for watcher in list(self.topic_watchers):
            watcher(change)

    def new_topic_id(self) -> str:
        return kafka_uuid(self.topic_ids)
