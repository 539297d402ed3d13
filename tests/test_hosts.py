"""Where the lab listens and the addresses a class reaches it by (lab/hosts.py)."""

from __future__ import annotations

import socket

from lab.hosts import (
    Listen,
    classroom_lines,
    is_loopback,
    machine_addresses,
    parse_listen,
    served_hosts,
    student_addresses,
    student_urls,
    wire_hosts,
)


def _outbound_address() -> str:
    """This machine's address on its default route, found without the lab's code."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))
        address: str = sock.getsockname()[0]
    return address


def test_listen_addresses_parse_with_ipv6_in_brackets() -> None:
    assert parse_listen("0.0.0.0:8080") == Listen(host="0.0.0.0", port=8080)
    assert parse_listen("[::]:8000") == Listen(host="::", port=8000)
    assert parse_listen("lab.example.org:80") == Listen(host="lab.example.org", port=80)
    for bad in ("", "8080", "host:", ":8080", "host:port"):
        assert parse_listen(bad) is None, bad


def test_loopback_is_this_machine_only() -> None:
    for host in ("127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost", "LOCALHOST", "app.localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.0.2.2", "lab.example.org", "fd00::2"):
        assert not is_loopback(host), host


def test_the_machines_addresses_leave_loopback_out_and_put_the_default_route_first() -> None:
    addresses = machine_addresses()
    assert addresses[0] == _outbound_address()
    assert not any(is_loopback(a) for a in addresses)
    assert all(":" not in a for a in machine_addresses(ipv6=False))


def test_students_reach_every_address_of_a_wildcard_listen_and_nothing_on_loopback() -> None:
    assert student_addresses(Listen(host="127.0.0.1", port=8000)) == []
    assert student_addresses(None) == []  # not started by lab.serve: nobody knows
    assert student_addresses(Listen(host="0.0.0.0", port=8080))[0] == f"{_outbound_address()}:8080"
    assert student_addresses(Listen(host="10.1.2.3", port=80)) == ["10.1.2.3"]
    assert student_addresses(Listen(host="fd00::9", port=8080)) == ["[fd00::9]:8080"]


def test_served_hosts_are_loopback_names_plus_the_machines_for_a_class() -> None:
    assert served_hosts(Listen(host="127.0.0.1", port=8000)) == ["127.0.0.1", "localhost", "[::1]"]
    hosts = served_hosts(Listen(host="0.0.0.0", port=8000))
    assert {"127.0.0.1", "localhost", _outbound_address(), socket.gethostname().lower()} <= set(hosts)
    assert f"{socket.gethostname().lower()}.local" in hosts
    assert len(hosts) == len(set(hosts))


def test_make_run_says_who_can_reach_it() -> None:
    (alone,) = classroom_lines("127.0.0.1", 8000)
    assert "Only this machine can open it" in alone
    assert "make run HOST=0.0.0.0 PORT=8000" in alone
    lines = classroom_lines("0.0.0.0", 8080)
    assert lines[0].startswith(f"Classroom: students open http://{_outbound_address()}:8080/")
    assert "DEBUG is off" in lines[1]
    assert len(classroom_lines("0.0.0.0", 8080, debug="1")) == 1  # the operator turned DEBUG on


def test_students_open_the_address_the_page_was_opened_at_unless_it_is_loopback() -> None:
    everywhere = Listen(host="0.0.0.0", port=8080)
    assert student_urls("http", "10.1.2.3:8080", everywhere) == ["http://10.1.2.3:8080"]
    assert student_urls("https", "lab.example.org", None) == ["https://lab.example.org"]
    assert student_urls("http", "[fd00::2]:8080", everywhere) == ["http://[fd00::2]:8080"]
    for loopback in ("127.0.0.1:8080", "localhost:8080", "localhost", "[::1]:8080", "[::1]"):
        assert student_urls("http", loopback, everywhere)[0] == f"http://{_outbound_address()}:8080", loopback
        assert student_urls("http", loopback, Listen(host="127.0.0.1", port=8080)) == [], loopback


def test_kafka_listeners_advertise_what_a_client_reaches() -> None:
    """Loopback binds and advertises 127.0.0.1; a class binds everywhere and advertises this machine's
    primary address (a student's client given 127.0.0.1 would look on its own machine); an address
    binds and advertises itself; LAB_ADVERTISED_HOST names another (a DNS name, a NAT's address)."""
    loopback = wire_hosts(Listen(host="127.0.0.1", port=8000))
    assert (loopback.bind, loopback.advertised) == ("127.0.0.1", "127.0.0.1")
    assert wire_hosts(None) == loopback  # not started by lab.serve
    classroom = wire_hosts(Listen(host="0.0.0.0", port=8000))
    assert (classroom.bind, classroom.advertised) == ("0.0.0.0", _outbound_address())
    one = wire_hosts(Listen(host="10.1.2.3", port=8000))
    assert (one.bind, one.advertised) == ("10.1.2.3", "10.1.2.3")
    named = wire_hosts(Listen(host="0.0.0.0", port=8000), " kafka.lab.example.org ")
    assert (named.bind, named.advertised) == ("0.0.0.0", "kafka.lab.example.org")
    assert wire_hosts(Listen(host="::", port=8000), "[fd00::5]").advertised == "fd00::5"
