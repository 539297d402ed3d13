"""Messages between brokers and clients, with delay, drop and cut faults.

A message in flight is data: an ``Envelope`` with the time it was sent and the
time it will arrive, kept until it does, so the dashboard can draw fetches as
they travel. Faults are what a real network does:

* a node that is gone (killed or stopped) refuses connections: a request to it fails at
  once with NETWORK_EXCEPTION, as a TCP reset would; and when it goes, every connection to it
  closes: what it had been asked and not answered fails at once the same way (its operating
  system closes its sockets), and what was still travelling to it is lost;
* a cut link drops messages silently: the sender learns only by its timeout;
* a slow node adds delay to everything it sends and receives;
* drop rules lose the next N messages that match (a lost acknowledgement).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any, NamedTuple, TypeVar

from lab.engine.acl import RequestContext
from lab.engine.errors import KafkaError, NetworkException, RequestTimedOut
from lab.engine.ids import NodeId
from lab.engine.protocol import kind_of
from lab.engine.scheduler import Scheduler, Timer

N = TypeVar("N", bound=NodeId)


class Envelope(NamedTuple):
    """A message in flight. A NamedTuple, not a frozen dataclass: every request and answer is one."""

    id: int
    src: NodeId
    dst: NodeId
    body: Any
    correlation_id: int
    is_response: bool
    sent_ms: int
    deliver_ms: int
    kind: str  # the body's kind: "Produce", "Fetch"...
    context: RequestContext | None = None  # who sent a request (its principal and host); None on answers


_new_envelope = tuple.__new__  # Envelope(...) without its Python-level __new__
Handler = Callable[[Envelope], None]
PeerGone = Callable[["NodeId"], None]  # an endpoint's hook: this node's connections closed


@dataclass(slots=True)
class DropRule:
    """Drop the next ``count`` messages from ``src`` to ``dst`` of this kind (None: any)."""

    src: NodeId | None
    dst: NodeId | None
    kind: str | None
    count: int

    def matches(self, env: Envelope) -> bool:
        return (
            self.count > 0
            and (self.src is None or self.src == env.src)
            and (self.dst is None or self.dst == env.dst)
            and (self.kind is None or self.kind == env.kind)
        )


@dataclass(slots=True)
class NetworkStats:
    sent: int = 0
    delivered: int = 0
    dropped: int = 0
    refused: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


class Network:
    def __init__(self, scheduler: Scheduler, *, latency_ms: int = 0) -> None:
        self._scheduler = scheduler
        self.latency_ms = latency_ms
        self._handlers: dict[NodeId, Handler] = {}
        self._peer_gone: dict[NodeId, PeerGone] = {}
        self._cuts: set[tuple[NodeId, NodeId]] = set()
        self._cut_from_clients: set[NodeId] = set()  # brokers that no client reaches (nor answers)
        self._delay: dict[NodeId, int] = {}
        # Correlation ids are unique on the whole network, not per endpoint: a node that comes back
        # (a restarted broker, a client made again under the same name) must never take an answer
        # meant for its previous life as the answer to a new request.
        self._correlations = itertools.count(1)
        self._drops: list[DropRule] = []
        self._in_flight: dict[int, Envelope] = {}
        self._next_id = 0
        self.stats = NetworkStats()

    # Membership.

    def next_correlation_id(self) -> int:
        return next(self._correlations)

    def attach(self, node: NodeId, handler: Handler, *, peer_gone: PeerGone | None = None) -> None:
        """``peer_gone(other)`` is told when another node leaves: its requests to it are lost."""
        self._handlers[node] = handler
        if peer_gone is not None:
            self._peer_gone[node] = peer_gone

    def detach(self, node: NodeId) -> None:
        """The node's process is gone: its sockets close, so every connection to it breaks now.

        What was travelling to it is lost, and every node that waits for its answer hears at once
        that the connection closed (a paused or cut-off node is not detached: its peers wait out
        their request.timeout.ms, as Kafka's clients do).
        """
        if self._handlers.pop(node, None) is None:
            return
        self._peer_gone.pop(node, None)
        lost = [env.id for env in self._in_flight.values() if env.dst == node]
        for env_id in lost:
            del self._in_flight[env_id]
        self.stats.refused += len(lost)
        for other, peer_gone in list(self._peer_gone.items()):
            if other != node:
                peer_gone(node)

    def is_attached(self, node: NodeId) -> bool:
        return node in self._handlers

    # Faults.

    def cut(self, a: NodeId, b: NodeId) -> None:
        self._cuts.add((a, b))
        self._cuts.add((b, a))

    def mend(self, a: NodeId, b: NodeId) -> None:
        self._cuts.discard((a, b))
        self._cuts.discard((b, a))

    def cut_from_clients(self, node: NodeId) -> None:
        """Drop everything between ``node`` and every client (a node that is not a broker)."""
        self._cut_from_clients.add(node)

    def mend_clients(self, node: NodeId) -> None:
        self._cut_from_clients.discard(node)

    def is_cut(self, src: NodeId, dst: NodeId) -> bool:
        if (src, dst) in self._cuts:
            return True
        if not self._cut_from_clients:
            return False
        # Brokers are numbered; clients (simulated or real) are named.
        return (src in self._cut_from_clients and isinstance(dst, str)) or (
            dst in self._cut_from_clients and isinstance(src, str)
        )

    def cuts_of(self, node: NodeId) -> set[NodeId]:
        return {b for a, b in self._cuts if a == node}

    def set_delay(self, node: NodeId, delay_ms: int) -> None:
        if delay_ms > 0:
            self._delay[node] = delay_ms
        else:
            self._delay.pop(node, None)

    def delay_of(self, node: NodeId) -> int:
        return self._delay.get(node, 0)

    def drop_next(
        self, *, src: NodeId | None = None, dst: NodeId | None = None, kind: str | None = None, count: int = 1
    ) -> None:
        self._drops.append(DropRule(src, dst, kind, count))

    # Sending.

    def send(
        self,
        src: NodeId,
        dst: NodeId,
        body: Any,
        *,
        correlation_id: int = 0,
        is_response: bool = False,
        context: RequestContext | None = None,
    ) -> Envelope:
        now = self._scheduler.now_ms
        delay = (
            self.latency_ms + self._delay.get(src, 0) + self._delay.get(dst, 0)
            if self._delay
            else self.latency_ms
        )
        self._next_id += 1
        kind = kind_of(body)
        env = _new_envelope(
            Envelope,
            (self._next_id, src, dst, body, correlation_id, is_response, now, now + delay, kind, context),
        )
        stats = self.stats
        stats.sent += 1
        stats.by_kind[kind] = stats.by_kind.get(kind, 0) + 1
        for rule in self._drops:
            if rule.matches(env):
                rule.count -= 1
                self._drops = [r for r in self._drops if r.count > 0]
                self.stats.dropped += 1
                return env
        if (self._cuts or self._cut_from_clients) and self.is_cut(src, dst):
            self.stats.dropped += 1
            return env
        self._in_flight[env.id] = env
        self._scheduler.call_at(env.deliver_ms, self._deliver, env, label=kind)
        return env

    def _deliver(self, env: Envelope) -> None:
        if self._in_flight.pop(env.id, None) is None:
            return  # its destination went away while it travelled (``detach``)
        if (self._cuts or self._cut_from_clients) and self.is_cut(env.src, env.dst):
            self.stats.dropped += 1  # cut while it travelled
            return
        handler = self._handlers.get(env.dst)
        if handler is None:
            self.stats.refused += 1
            if not env.is_response:
                # Nobody listens: the sender's connection is reset.
                reset = Disconnected(node=env.dst)
                self.send(env.dst, env.src, reset, correlation_id=env.correlation_id, is_response=True)
            return
        self.stats.delivered += 1
        handler(env)

    def in_flight(self) -> list[Envelope]:
        return sorted(self._in_flight.values(), key=lambda e: e.id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Disconnected:
    """What a sender gets back when the node it called is not there (``closed``: it went while the
    request waited for its answer)."""

    node: NodeId
    closed: bool = False


ResponseCallback = Callable[[Any], None]


@dataclass(slots=True)
class _Outstanding:
    dst: NodeId
    callback: ResponseCallback
    timer: Timer | None


class Endpoint:
    """A node's side of the network: requests out with timeouts, responses back in.

    The owner gives ``handle_request`` for requests it serves; responses to its
    own requests are matched by correlation id. A callback gets the response
    body, or a KafkaError (NETWORK_EXCEPTION, REQUEST_TIMED_OUT).
    """

    def __init__(
        self,
        network: Network,
        scheduler: Scheduler,
        node: NodeId,
        handle_request: Callable[[Envelope], None],
        *,
        gate: Callable[..., None] | None = None,
        context: RequestContext | None = None,
    ) -> None:
        self.network = network
        self.node = node
        # Who this node's requests come from: every request it sends carries it (Kafka's session
        # principal and client address), for the broker's authorizer.
        self.context = context
        # Answers to finish before they leave (the authorizer's: denied items put back, hidden ones
        # taken out), by (requester, correlation id).
        self.finishers: dict[tuple[NodeId, int], Callable[[Any], Any]] = {}
        self._scheduler = scheduler
        self._handle_request = handle_request
        self._outstanding: dict[int, _Outstanding] = {}
        # Nodes whose connection our last request to them found broken (it timed out, was closed or
        # refused), until one answers again: Kafka's NetworkClient disconnects such a node.
        self.disconnected: set[NodeId] = set()
        # The gate lets a paused broker hold what arrives until it resumes.
        self._gate = gate
        network.attach(node, self._receive, peer_gone=self._peer_gone)

    def close(self, error: KafkaError | None = None) -> None:
        """Detach; outstanding requests fail with ``error`` (or are dropped when None)."""
        self.network.detach(self.node)
        self.finishers.clear()
        outstanding, self._outstanding = self._outstanding, {}
        for out in outstanding.values():
            Scheduler.cancel(out.timer)
            if error is not None:
                out.callback(error)

    def request(self, dst: NodeId, body: Any, callback: ResponseCallback, *, timeout_ms: int) -> int:
        cid = self.network.next_correlation_id()
        timer = self._scheduler.call_later(timeout_ms, self._run, self._timed_out, cid, label="timeout")
        self._outstanding[cid] = _Outstanding(dst, callback, timer)
        self.network.send(self.node, dst, body, correlation_id=cid, context=self.context)
        return cid

    def send_oneway(self, dst: NodeId, body: Any) -> None:
        """acks=0: nobody waits for an answer."""
        self.network.send(self.node, dst, body, correlation_id=0, context=self.context)

    def respond(self, request: Envelope, body: Any) -> None:
        if request.correlation_id == 0:
            return
        if self.finishers:
            finish = self.finishers.pop((request.src, request.correlation_id), None)
            if finish is not None:
                body = finish(body)
        self.network.send(
            self.node, request.src, body, correlation_id=request.correlation_id, is_response=True
        )

    def abort(self, cid: int, error: KafkaError) -> None:
        """Give up on request ``cid`` (its connection is closed): its callback hears ``error`` now,
        and an answer that still arrives is dropped."""
        out = self._outstanding.pop(cid, None)
        if out is None:
            return
        Scheduler.cancel(out.timer)
        out.callback(error)

    def _peer_gone(self, node: NodeId) -> None:
        """``node``'s connection closed: each request to it hears so, after the answers it sent
        before it went (they travel ahead on the connection)."""
        for cid, out in self._outstanding.items():
            if out.dst == node:
                self.network.send(
                    node,
                    self.node,
                    Disconnected(node=node, closed=True),
                    correlation_id=cid,
                    is_response=True,
                )

    def outstanding_to(self, dst: NodeId) -> int:
        return sum(1 for o in self._outstanding.values() if o.dst == dst)

    def least_loaded(self, nodes: Sequence[N], rng: Random) -> N:
        """Kafka's ``NetworkClient.leastLoadedNode``: of ``nodes``, one whose connection works with the
        fewest of our requests waiting on it (a paused broker holding ours is not asked again), a broken
        one only when every other is as bad; ties broken at random."""
        load = {n: (n in self.disconnected, self.outstanding_to(n)) for n in nodes}
        best = min(load.values())
        least = [n for n in nodes if load[n] == best]
        return least[rng.randrange(len(least))]

    def _run(self, fn: Callable[..., None], *args: Any) -> None:
        if self._gate is not None:
            self._gate(fn, *args)
        else:
            fn(*args)

    def _receive(self, env: Envelope) -> None:
        self._run(self._dispatch, env)

    def _dispatch(self, env: Envelope) -> None:
        if not env.is_response:
            self._handle_request(env)
            return
        out = self._outstanding.get(env.correlation_id)
        if out is None or out.dst != env.src:
            return  # timed out already, or the answer to a request we forgot
        del self._outstanding[env.correlation_id]
        Scheduler.cancel(out.timer)
        if isinstance(env.body, Disconnected):
            self.disconnected.add(out.dst)
            how = "closed before it answered" if env.body.closed else "refused"
            out.callback(NetworkException(f"connection to {env.body.node} {how}: it is not running"))
        else:
            self.disconnected.discard(out.dst)
            out.callback(env.body)

    def _timed_out(self, cid: int) -> None:
        out = self._outstanding.pop(cid, None)
        if out is not None:
            self.disconnected.add(out.dst)
            out.callback(RequestTimedOut(f"no answer from {out.dst} in time"))
