"""What a live lab is made of, as plain data: enough to rebuild it after a restart.

The Django side stores a ``LabSpec`` in the ``Lab`` row's ``settings`` (JSON) and the
runtime builds the cluster from it. Topics and simulated clients a person adds are
recorded here too, so a lab on the memory store (which forgets its metadata when the
server stops) and a reset lab come back with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lab.engine.acl import AclBinding
from lab.engine.config import CONSUMER_KEYS, validate_broker_config
from lab.engine.errors import IllegalArgument
from lab.engine.limits import BROKERS, CLOCK_RATE

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster

SECURED = ("SASL_PLAINTEXT", "SSL", "SASL_SSL")  # the listeners a lab may have beside PLAINTEXT


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 1
    config: Mapping[str, str] = field(default_factory=dict)
    # Each partition's replicas, once a reassignment placed them by hand (partition i's at index i);
    # empty: placed as Kafka places a new topic's.
    replicas: tuple[tuple[int, ...], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "config": dict(self.config),
            **({"replicas": [list(r) for r in self.replicas]} if self.replicas else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicSpec:
        return cls(
            name=str(data["name"]),
            partitions=int(data.get("partitions", 1)),
            replication_factor=int(data.get("replication_factor", 1)),
            config={str(k): str(v) for k, v in (data.get("config") or {}).items()},
            replicas=tuple(tuple(int(b) for b in r) for r in data.get("replicas") or ()),
        )

    def assignment(self, brokers: int) -> dict[int, list[int]] | None:
        """The replicas to make it with: those a reassignment chose, while every one of them is a
        broker the lab has (1..``brokers``); None: Kafka's placement."""
        if (
            not self.replicas
            or len(self.replicas) != self.partitions
            or not all(r and all(1 <= b <= brokers for b in r) for r in self.replicas)
        ):
            return None
        return {q: list(r) for q, r in enumerate(self.replicas)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSpec:
    kind: str  # producer | consumer
    name: str
    topics: tuple[str, ...]
    group: str = ""
    rate_per_s: float = 10.0
    processing_ms: int = 50
    acks: str = "all"
    session_timeout_ms: int = 0  # a consumer's session.timeout.ms; 0: the lab's default (Kafka's is 45 s)
    principal: str = ""  # who its requests come from (User:alice); "": the lab's super user, User:admin

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "topics": list(self.topics),
            "group": self.group,
            "rate_per_s": self.rate_per_s,
            "processing_ms": self.processing_ms,
            "acks": self.acks,
            "session_timeout_ms": self.session_timeout_ms,
            **({"principal": self.principal} if self.principal else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientSpec:
        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            topics=tuple(str(t) for t in data.get("topics") or ()),
            group=str(data.get("group") or ""),
            rate_per_s=float(data.get("rate_per_s", 10.0)),
            processing_ms=int(data.get("processing_ms", 50)),
            acks=str(data.get("acks", "all")),
            session_timeout_ms=int(data.get("session_timeout_ms", 0)),
            principal=str(data.get("principal") or ""),
        )

    def start(self, cluster: Cluster) -> str:
        """Add this simulated client to ``cluster``; its name (given, or the one the cluster chose)."""
        name = self.name or None
        principal = self.principal or None
        if self.kind not in ("producer", "consumer"):
            raise IllegalArgument(f"a simulated client is a producer or a consumer, not {self.kind!r}")
        if self.kind == "producer":
            return cluster.simulated_producer(
                self.topics[0], rate_per_s=self.rate_per_s, acks=self.acks, name=name, principal=principal
            ).name
        config: dict[str, object] = {}
        if self.session_timeout_ms:
            # Heartbeats at a third of the session, as Kafka advises (and as the lab's defaults are).
            config["session_timeout_ms"] = str(self.session_timeout_ms)
            config["heartbeat_interval_ms"] = str(max(1, self.session_timeout_ms // 3))
        return cluster.simulated_consumer(
            self.group,
            list(self.topics),
            processing_ms=self.processing_ms,
            name=name,
            principal=principal,
            **config,
        ).name


@dataclass(frozen=True, slots=True, kw_only=True)
class LabSpec:
    slug: str
    name: str
    data_dir: str
    chroot: str
    brokers: int = 3
    config: Mapping[str, str] = field(default_factory=dict)  # broker config overrides
    rate: float = 1.0
    seed: int = 7
    topics: tuple[TopicSpec, ...] = ()
    clients: tuple[ClientSpec, ...] = ()
    # Each broker's Kafka listener port, kept so clients find the lab at the same address after
    # a restart. Empty: the lab has no listeners.
    ports: Mapping[int, int] = field(default_factory=dict)
    # The ACLs a person added (``commands.acls.as_json`` without its text), so a lab rebuilt from its
    # spec (a reset, the memory store after a restart) has them again, as it has its topics.
    acls: tuple[Mapping[str, str], ...] = ()
    # The listeners beside PLAINTEXT, by Kafka's security protocol (SASL_PLAINTEXT, SSL, SASL_SSL),
    # each broker's port on each: what the lab was made with (``create_lab(listeners=...)``).
    listeners: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    # SASL users a person made (the admin panel, the API): user -> mechanism -> Kafka's credential text
    # (salt, StoredKey, ServerKey, iterations; never the password), written again to a fresh cluster.
    users: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not BROKERS.low <= self.brokers <= BROKERS.high:
            raise IllegalArgument(f"a lab has {BROKERS.low} to {BROKERS.high} brokers, not {self.brokers}")
        check_rate(self.rate)
        validate_broker_config(self.config)
        for protocol in self.listeners:
            if protocol not in SECURED:
                raise IllegalArgument(
                    f"a lab's listeners beside PLAINTEXT are {', '.join(SECURED)}, not {protocol!r}"
                )

    def settings(self) -> dict[str, Any]:
        """The JSON the ``Lab`` row keeps (everything but the columns of its own)."""
        return {
            "config": dict(self.config),
            "rate": self.rate,
            "seed": self.seed,
            "topics": [t.to_json() for t in self.topics],
            "clients": [c.to_json() for c in self.clients],
            "ports": {str(b): port for b, port in sorted(self.ports.items())},
            **({"acls": [dict(a) for a in self.acls]} if self.acls else {}),
            "listeners": {
                p: {str(b): port for b, port in sorted(ports.items())} for p, ports in self.listeners.items()
            },
            "users": {u: dict(sorted(found.items())) for u, found in sorted(self.users.items())},
        }

    @classmethod
    def from_settings(
        cls, *, slug: str, name: str, data_dir: str, chroot: str, brokers: int, settings: Mapping[str, Any]
    ) -> LabSpec:
        return cls(
            slug=slug,
            name=name,
            data_dir=data_dir,
            chroot=chroot,
            brokers=brokers,
            config={str(k): str(v) for k, v in (settings.get("config") or {}).items()},
            rate=float(settings.get("rate", 1.0)),
            seed=int(settings.get("seed", 7)),
            topics=tuple(TopicSpec.from_json(t) for t in settings.get("topics") or ()),
            clients=tuple(ClientSpec.from_json(c) for c in settings.get("clients") or ()),
            ports={int(b): int(port) for b, port in (settings.get("ports") or {}).items()},
            acls=tuple({str(k): str(v) for k, v in a.items()} for a in settings.get("acls") or ()),
            listeners={
                str(p): {int(b): int(port) for b, port in ports.items()}
                for p, ports in (settings.get("listeners") or {}).items()
            },
            users={
                str(u): {str(m): str(t) for m, t in found.items()}
                for u, found in (settings.get("users") or {}).items()
            },
        )

    def with_topic(self, topic: TopicSpec) -> LabSpec:
        return replace(self, topics=(*[t for t in self.topics if t.name != topic.name], topic))

    def with_client(self, client: ClientSpec) -> LabSpec:
        return replace(self, clients=(*[c for c in self.clients if c.name != client.name], client))

    def without_client(self, name: str) -> LabSpec:
        return replace(self, clients=tuple(c for c in self.clients if c.name != name))

    def with_acl(self, acl: Mapping[str, str]) -> LabSpec:
        return replace(self, acls=(*[a for a in self.acls if a != acl], dict(acl)))

    def without_acls(self, gone: Sequence[Mapping[str, str]]) -> LabSpec:
        return replace(self, acls=tuple(a for a in self.acls if a not in gone))

    def with_ports(self, ports: Mapping[int, int]) -> LabSpec:
        return replace(self, ports=dict(ports))

    def with_listeners(self, listeners: Mapping[str, Mapping[int, int]]) -> LabSpec:
        return replace(self, listeners={p: dict(ports) for p, ports in listeners.items()})

    def with_user(self, user: str, mechanism: str, credential: str) -> LabSpec:
        return replace(self, users={**self.users, user: {**self.users.get(user, {}), mechanism: credential}})

    def without_user(self, user: str, mechanism: str = "") -> LabSpec:
        left = {m: t for m, t in self.users.get(user, {}).items() if mechanism and m != mechanism}
        users = {u: found for u, found in self.users.items() if u != user}
        return replace(self, users={**users, user: left} if left else users)

    def with_rate(self, rate: float) -> LabSpec:
        return replace(self, rate=check_rate(rate))


def acl_entry(binding: AclBinding) -> dict[str, str]:
    """An ACL as ``LabSpec.acls`` keeps it (``lab.engine.acl.parse_binding`` reads it back)."""
    r, e = binding.resource, binding.entry
    return {
        "resource_type": r.type.value,
        "name": r.name,
        "pattern": r.pattern.value,
        "principal": e.principal,
        "host": e.host,
        "operation": e.operation.value,
        "permission": e.permission.value,
    }


def check_rate(rate: float) -> float:
    try:
        return CLOCK_RATE.check(rate)
    except IllegalArgument:
        raise IllegalArgument(
            f"the clock runs at {CLOCK_RATE.low:g}x to {CLOCK_RATE.high:g}x, not {rate:g}x"
        ) from None


# The demo lab ``make run`` makes (lab/labs.py). Tests build the same lab on the memory store.
DEMO_BROKERS = 3
DEMO_CONFIG: Mapping[str, str] = {"zookeeper.session.timeout.ms": "3000"}
DEMO_TOPICS = (
    TopicSpec(name="orders", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}),
)
DEMO_CLIENTS = (
    ClientSpec(kind="producer", name="checkout", topics=("orders",), rate_per_s=5, acks="all"),
    # The lab's 6 s session (Kafka's default is 45 s), so a crash shows as a rebalance while a class watches.
    *(
        ClientSpec(
            kind="consumer",
            name=f"billing-{n}",
            topics=("orders",),
            group="billing",
            processing_ms=50,
            session_timeout_ms=int(CONSUMER_KEYS["session.timeout.ms"].default),
        )
        for n in (1, 2)
    ),
)
