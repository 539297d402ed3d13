"""The lab's network: latency, slow nodes, cuts, refused connections, lost messages, and endpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.engine.errors import NetworkException, RequestTimedOut
from lab.engine.gate import Gate
from lab.engine.network import Endpoint, Envelope, Network
from lab.engine.scheduler import Scheduler


@dataclass(frozen=True, slots=True, kw_only=True)
class PingRequest:
    n: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PingResponse:
    n: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    n: int = 0


def _net(latency_ms: int = 10) -> tuple[Scheduler, Network, dict[Any, list[Envelope]]]:
    s = Scheduler()
    net = Network(s, latency_ms=latency_ms)
    inbox: dict[Any, list[Envelope]] = {1: [], 2: [], 3: []}
    for node, box in inbox.items():
        net.attach(node, box.append)
    return s, net, inbox


def _run_all(s: Scheduler) -> None:
    while s.step():
        pass


# Delivery


def test_a_message_arrives_after_the_latency() -> None:
    s, net, inbox = _net(latency_ms=10)
    env = net.send(1, 2, PingRequest(n=1))
    assert (env.sent_ms, env.deliver_ms) == (0, 10)
    s.run_until(9)
    assert inbox[2] == []
    s.run_until(10)
    assert [e.body for e in inbox[2]] == [PingRequest(n=1)]
    assert inbox[2][0].kind == "Ping"
    assert net.stats.delivered == 1


def test_a_slow_node_adds_its_delay_to_what_it_sends_and_receives() -> None:
    _, net, _ = _net(latency_ms=10)
    net.set_delay(2, 500)
    assert net.delay_of(2) == 500
    assert net.send(1, 2, PingRequest()).deliver_ms == 510
    assert net.send(2, 3, PingRequest()).deliver_ms == 510
    assert net.send(1, 3, PingRequest()).deliver_ms == 10  # not through node 2
    net.set_delay(3, 100)
    assert net.send(2, 3, PingRequest()).deliver_ms == 610  # both ends slow: both delays
    net.set_delay(2, 0)
    assert net.delay_of(2) == 0
    assert net.send(1, 2, PingRequest()).deliver_ms == 10


def test_messages_on_one_link_arrive_in_the_order_they_were_sent() -> None:
    s, net, inbox = _net(latency_ms=5)
    for i in range(5):
        net.send(1, 2, PingRequest(n=i))
    _run_all(s)
    assert [e.body.n for e in inbox[2]] == [0, 1, 2, 3, 4]


def test_in_flight_lists_messages_until_they_arrive() -> None:
    s, net, _ = _net(latency_ms=10)
    a = net.send(1, 2, PingRequest(n=1))
    s.run_until(4)
    b = net.send(2, 3, PingRequest(n=2))
    assert net.in_flight() == [a, b]
    s.run_until(10)
    assert net.in_flight() == [b]
    s.run_until(14)
    assert net.in_flight() == []


def test_with_no_latency_a_message_still_arrives_as_a_later_event() -> None:
    s, net, inbox = _net(latency_ms=0)
    net.send(1, 2, PingRequest())
    assert inbox[2] == []  # never delivered inside send()
    assert s.step()
    assert len(inbox[2]) == 1
    assert s.now_ms == 0


# Cuts


def test_a_cut_drops_messages_silently_in_both_directions() -> None:
    s, net, inbox = _net()
    net.cut(1, 2)
    assert net.is_cut(1, 2)
    assert net.is_cut(2, 1)
    assert net.cuts_of(1) == {2}
    net.send(1, 2, PingRequest())
    net.send(2, 1, PingRequest())
    net.send(1, 3, PingRequest())
    assert len(net.in_flight()) == 1
    _run_all(s)
    assert inbox[1] == []
    assert inbox[2] == []
    assert len(inbox[3]) == 1  # other links are untouched
    assert net.stats.dropped == 2
    assert net.stats.refused == 0  # silent: no connection reset


def test_a_message_in_flight_when_the_link_is_cut_is_lost() -> None:
    s, net, inbox = _net(latency_ms=10)
    net.send(1, 2, PingRequest())
    s.run_until(5)
    net.cut(2, 1)  # either order of the pair cuts both ways
    s.run_until(20)
    assert inbox[2] == []
    assert net.in_flight() == []
    assert net.stats.dropped == 1


def test_mending_a_cut_lets_new_messages_through() -> None:
    s, net, inbox = _net()
    net.cut(1, 2)
    net.send(1, 2, PingRequest(n=1))
    net.mend(1, 2)
    assert not net.is_cut(1, 2)
    assert not net.is_cut(2, 1)
    net.send(1, 2, PingRequest(n=2))
    _run_all(s)
    assert [e.body.n for e in inbox[2]] == [2]  # what was dropped stays dropped


# Drop rules


def test_drop_next_loses_exactly_the_next_matching_messages() -> None:
    s, net, inbox = _net()
    net.drop_next(src=1, dst=2, kind="Ping", count=2)
    net.send(1, 2, FetchRequest(n=0))  # another kind: delivered
    net.send(1, 3, PingRequest(n=1))  # another destination: delivered
    net.send(2, 1, PingRequest(n=2))  # the other direction: delivered
    for i in range(3, 6):
        net.send(1, 2, PingRequest(n=i))
    _run_all(s)
    assert [(type(e.body).__name__, e.body.n) for e in inbox[2]] == [("FetchRequest", 0), ("PingRequest", 5)]
    assert [e.body.n for e in inbox[3]] == [1]
    assert [e.body.n for e in inbox[1]] == [2]
    assert net.stats.dropped == 2


def test_a_drop_rule_without_filters_drops_the_next_message_whatever_it_is() -> None:
    s, net, inbox = _net()
    net.drop_next()
    net.send(3, 1, FetchRequest(n=1))
    net.send(3, 1, FetchRequest(n=2))
    _run_all(s)
    assert [e.body.n for e in inbox[1]] == [2]


def test_stats_count_messages_by_kind() -> None:
    _, net, _ = _net()
    net.send(1, 2, PingRequest())
    net.send(2, 1, PingResponse())
    net.send(1, 3, FetchRequest())
    assert net.stats.sent == 3
    assert net.stats.by_kind == {"Ping": 2, "Fetch": 1}


# Endpoints


def _endpoint(
    s: Scheduler, net: Network, node: Any, *, echo: bool = False, gate: Gate | None = None
) -> tuple[Endpoint, list[Envelope]]:
    served: list[Envelope] = []
    holder: list[Endpoint] = []

    def handle(env: Envelope) -> None:
        served.append(env)
        if echo:
            holder[0].respond(env, PingResponse(n=env.body.n))

    ep = Endpoint(net, s, node, handle, gate=gate)
    holder.append(ep)
    return ep, served


def test_a_request_gets_its_response_by_correlation_id() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    _endpoint(s, net, 1, echo=True)
    got: list[Any] = []
    cid = client.request(1, PingRequest(n=7), got.append, timeout_ms=1000)
    assert cid > 0
    assert client.outstanding_to(1) == 1
    s.run_until(19)
    assert got == []
    s.run_until(20)  # there and back
    assert got == [PingResponse(n=7)]
    assert client.outstanding_to(1) == 0
    s.run_until(5000)
    assert got == [PingResponse(n=7)]  # the timeout was cancelled with the answer


def test_responses_that_arrive_out_of_order_reach_the_right_callbacks() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    _endpoint(s, net, 1, echo=True)
    _endpoint(s, net, 2, echo=True)
    net.set_delay(1, 100)  # broker 1 is slow: its answer comes second
    got: dict[str, Any] = {}
    client.request(1, PingRequest(n=1), lambda r: got.setdefault("to 1", r), timeout_ms=5000)
    client.request(2, PingRequest(n=2), lambda r: got.setdefault("to 2", r), timeout_ms=5000)
    s.run_until(20)
    assert got == {"to 2": PingResponse(n=2)}
    _run_all(s)
    assert got == {"to 2": PingResponse(n=2), "to 1": PingResponse(n=1)}


def test_a_request_to_a_node_that_is_not_running_fails_fast_with_network_exception() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    server, _ = _endpoint(s, net, 1, echo=True)
    server.close()  # the broker was killed: nobody listens on its port
    assert not net.is_attached(1)
    got: list[Any] = []
    client.request(1, PingRequest(), got.append, timeout_ms=30_000)
    s.run_until(20)  # one round trip, far sooner than the timeout
    assert len(got) == 1
    assert isinstance(got[0], NetworkException)
    assert got[0].name == "NETWORK_EXCEPTION"
    assert "refused" in str(got[0])
    assert net.stats.refused == 1
    s.run_until(60_000)
    assert len(got) == 1  # no second answer when the timeout would have passed


def test_a_node_that_goes_fails_what_it_was_asked_at_once_as_its_connections_close() -> None:
    # A killed broker's operating system closes its sockets: a client waiting on a fetch it held
    # hears at once (NETWORK_EXCEPTION), not after its request.timeout.ms.
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    server, served = _endpoint(s, net, 1)  # holds every request unanswered, as a fetch waiting for data
    got: list[Any] = []
    client.request(1, PingRequest(n=1), got.append, timeout_ms=30_000)
    s.run_until(100)
    assert len(served) == 1
    assert got == []
    server.close()
    s.run_until(110)  # the close travels like any packet
    assert [type(r) for r in got] == [NetworkException]
    assert "closed before it answered" in str(got[0])
    s.run_until(60_000)
    assert len(got) == 1  # its timeout was cancelled


def test_a_request_travelling_to_a_node_that_goes_is_lost_not_served_by_its_next_life() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    server, _ = _endpoint(s, net, 1, echo=True)
    got: list[Any] = []
    client.request(1, PingRequest(n=1), got.append, timeout_ms=30_000)
    s.run_until(5)
    server.close()
    _, served_again = _endpoint(s, net, 1, echo=True)  # restarted at once, on the same port
    _run_all(s)
    assert served_again == []  # the old connection's request never reaches the new process
    assert [type(r) for r in got] == [NetworkException]


def test_answers_a_node_sent_before_it_went_still_arrive() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    server, _ = _endpoint(s, net, 1, echo=True)
    got: list[Any] = []
    client.request(1, PingRequest(n=1), got.append, timeout_ms=30_000)
    s.run_until(15)  # served at 10; its answer is on the way
    server.close()
    _run_all(s)
    assert got == [PingResponse(n=1)]


def test_a_paused_or_cut_off_node_keeps_its_peers_waiting_until_their_timeout() -> None:
    # Only a process that is gone closes its connections; a paused one (a long GC) and one behind a
    # cut say nothing, so their peers wait out request.timeout.ms, as Kafka's clients do.
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    gate = Gate()
    _endpoint(s, net, 1, echo=True, gate=gate)
    _endpoint(s, net, 2, echo=True)
    got: dict[int, Any] = {}
    gate.hold()
    client.request(1, PingRequest(n=1), lambda r: got.setdefault(1, r), timeout_ms=3000)
    net.cut("client", 2)
    client.request(2, PingRequest(n=2), lambda r: got.setdefault(2, r), timeout_ms=3000)
    s.run_until(2999)
    assert got == {}
    s.run_until(3000)
    assert [type(got[n]) for n in (1, 2)] == [RequestTimedOut, RequestTimedOut]


def test_a_silently_dropped_request_times_out_with_request_timed_out() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    _, served = _endpoint(s, net, 1, echo=True)
    net.cut("client", 1)
    got: list[Any] = []
    client.request(1, PingRequest(), got.append, timeout_ms=3000)
    s.run_until(2999)
    assert got == []  # a cut gives no sign: the sender waits
    s.run_until(3000)
    assert len(got) == 1
    assert isinstance(got[0], RequestTimedOut)
    assert got[0].name == "REQUEST_TIMED_OUT"
    assert served == []


def test_a_lost_response_times_out_although_the_request_was_served() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    _, served = _endpoint(s, net, 1, echo=True)
    net.drop_next(dst="client", kind="Ping")
    got: list[Any] = []
    client.request(1, PingRequest(), got.append, timeout_ms=1000)
    _run_all(s)
    assert len(served) == 1  # the broker did the work...
    assert [type(r) for r in got] == [RequestTimedOut]  # ...but the client never heard


def test_an_answer_after_the_timeout_is_ignored() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, _ = _endpoint(s, net, "client")
    _endpoint(s, net, 1, echo=True)
    net.set_delay(1, 1000)
    got: list[Any] = []
    client.request(1, PingRequest(), got.append, timeout_ms=500)
    _run_all(s)
    assert [type(r) for r in got] == [RequestTimedOut]


def test_one_way_messages_get_no_response() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    client, client_served = _endpoint(s, net, "client")
    _, served = _endpoint(s, net, 1, echo=True)
    client.send_oneway(1, PingRequest(n=3))
    _run_all(s)
    assert [e.body for e in served] == [PingRequest(n=3)]
    assert served[0].correlation_id == 0
    assert net.stats.sent == 1  # respond() to correlation id 0 sends nothing
    assert client_served == []


def test_closing_an_endpoint_fails_or_drops_its_outstanding_requests() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    _endpoint(s, net, 1)  # never answers
    failing, _ = _endpoint(s, net, "a")
    dropping, _ = _endpoint(s, net, "b")
    got_a: list[Any] = []
    got_b: list[Any] = []
    failing.request(1, PingRequest(), got_a.append, timeout_ms=1000)
    dropping.request(1, PingRequest(), got_b.append, timeout_ms=1000)
    failing.close(NetworkException("client closed"))
    dropping.close()
    assert [type(r) for r in got_a] == [NetworkException]
    assert got_b == []
    _run_all(s)
    assert [type(r) for r in got_a] == [NetworkException]  # the timeouts were cancelled
    assert got_b == []


# The gate


def test_a_held_gate_keeps_requests_and_answers_until_it_is_released() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    gate = Gate()
    _, served = _endpoint(s, net, 1, echo=True, gate=gate)
    client, _ = _endpoint(s, net, "client")
    gate.hold()
    got: list[Any] = []
    for i in range(3):
        client.request(1, PingRequest(n=i), got.append, timeout_ms=10_000)
    s.run_until(1000)
    assert served == []  # delivered to the socket, but the paused broker runs nothing
    assert gate.backlog == 3
    assert net.in_flight() == []
    gate.release()
    assert [e.body.n for e in served] == [0, 1, 2]  # in arrival order
    s.run_until(2000)
    assert got == [PingResponse(n=0), PingResponse(n=1), PingResponse(n=2)]


def test_a_paused_nodes_own_timeouts_wait_behind_its_gate() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    gate = Gate()
    paused, _ = _endpoint(s, net, 1, gate=gate)
    _endpoint(s, net, 2)  # never answers
    got: list[Any] = []
    paused.request(2, PingRequest(), got.append, timeout_ms=100)
    gate.hold()
    s.run_until(1000)
    assert got == []  # the timeout fired, but the paused node does not run it yet
    gate.release()
    assert [type(r) for r in got] == [RequestTimedOut]


def test_a_closed_gate_drops_what_arrives() -> None:
    s = Scheduler()
    net = Network(s, latency_ms=10)
    gate = Gate()
    _, served = _endpoint(s, net, 1, echo=True, gate=gate)
    client, _ = _endpoint(s, net, "client")
    gate.close()
    got: list[Any] = []
    client.request(1, PingRequest(), got.append, timeout_ms=500)
    _run_all(s)
    assert served == []
    assert [type(r) for r in got] == [RequestTimedOut]


def test_a_node_made_again_never_takes_an_answer_meant_for_its_previous_life() -> None:
    # A client closed and made again under the same name (or a restarted broker) asks anew; the
    # answer to what its previous life asked, still in flight, must not resolve the new request.
    s = Scheduler()
    net = Network(s, latency_ms=10)
    asked: list[Envelope] = []
    server = Endpoint(net, s, 2, asked.append)  # it answers when the test says
    first = Endpoint(net, s, "client", lambda env: None)
    first.request(2, PingRequest(n=1), lambda body: None, timeout_ms=1_000)
    s.run_until(10)
    first.close()
    again = Endpoint(net, s, "client", lambda env: None)
    answers: list[Any] = []
    again.request(2, PingRequest(n=2), answers.append, timeout_ms=1_000)
    s.run_until(20)
    for env in asked:
        server.respond(env, PingResponse(n=env.body.n))
    _run_all(s)
    assert answers == [PingResponse(n=2)]
