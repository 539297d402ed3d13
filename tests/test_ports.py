"""Each broker's Kafka listener port (lab/ports.py): one per broker, never two labs on one, kept for
the life of the lab (across a restart of the server), free again once the lab is deleted.

The race test runs on the suite's database (SQLite in a file, WAL) and, through
tests/test_postgresql.py, on PostgreSQL.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, connections, transaction
from pytest_django.fixtures import Settings

from lab import ports
from lab.cluster import free_ports
from lab.engine.errors import IllegalArgument
from lab.labs import create_lab
from lab.models import Lab, LabPort
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def window(settings: Settings) -> int:
    """Twelve ports nothing on this machine listens on now, as LAB_WIRE_PORTS; the first one."""
    base = free_ports(12, start=20_000, stop=32_000)
    settings.LAB_WIRE_PORTS = f"{base}-{base + 11}"
    settings.LAB_MAX_LABS_PER_USER = 10
    return base


def _listening(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def test_the_range_is_read_as_written_and_a_bad_one_is_named() -> None:
    assert ports.parse_range("19092-19999") == ports.PortRange(19092, 19999)
    assert ports.parse_range(" 20000..20009 ") == ports.PortRange(20000, 20009)
    assert len(ports.parse_range("20000-20009")) == 10
    for bad in ("", "19092", "19999-19092", "80-90", "20000-70000", "a-b", "20000-"):
        with pytest.raises(ImproperlyConfigured, match="LAB_WIRE_PORTS"):
            ports.parse_range(bad)


def test_each_broker_gets_a_port_of_its_own_the_lowest_free_first(window: int) -> None:
    ada = make_user()
    first = create_lab(ada, "First")
    second = create_lab(ada, "Second", brokers=2)
    assert ports.ports_of(first) == {1: window, 2: window + 1, 3: window + 2}
    assert ports.ports_of(second) == {1: window + 3, 2: window + 4}
    # The lab's settings say the same (what an operator sees in the admin or a dump).
    assert first.settings["ports"] == {"1": window, "2": window + 1, "3": window + 2}


def test_secured_listeners_get_ports_of_their_own_after_plaintexts(window: int) -> None:
    lab = create_lab(make_user(), "Secured", brokers=2, listeners=["SASL_SSL", "ssl", "PLAINTEXT"])
    assert ports.ports_of(lab) == {1: window, 2: window + 1}
    assert ports.ports_of(lab, "SSL") == {1: window + 2, 2: window + 3}
    assert ports.ports_of(lab, "SASL_SSL") == {1: window + 4, 2: window + 5}
    assert lab.settings["listeners"] == {
        "SSL": {"1": window + 2, "2": window + 3},
        "SASL_SSL": {"1": window + 4, "2": window + 5},
    }
    with pytest.raises(IllegalArgument, match="not KERBEROS"):
        create_lab(make_user("bob"), "Bad", listeners=["KERBEROS"])
    assert Lab.objects.count() == 1


def test_a_lab_has_plaintext_alone_by_default(window: int) -> None:
    lab = create_lab(make_user(), "Plain")
    assert lab.settings["listeners"] == {}
    assert set(LabPort.objects.filter(lab=lab).values_list("listener", flat=True)) == {"PLAINTEXT"}


def test_a_port_in_use_on_the_machine_is_passed_over(window: int) -> None:
    with _listening(window + 1):
        lab = create_lab(make_user(), "Busy neighbour")
    assert ports.ports_of(lab) == {1: window, 2: window + 2, 3: window + 3}


def test_the_database_keeps_two_labs_off_one_port(window: int) -> None:
    create_lab(make_user(), "Mine")
    other = create_lab(make_user("bob"), "Theirs", brokers=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        LabPort.objects.create(lab=other, broker=2, port=window)


def test_with_no_port_left_the_lab_is_refused_and_nothing_is_made(settings: Settings, window: int) -> None:
    settings.LAB_WIRE_PORTS = f"{window}-{window + 1}"
    with pytest.raises(ports.NoFreePorts, match=r"LAB_WIRE_PORTS \(\d+-\d+, 2 ports\)") as refused:
        create_lab(make_user(), "Too big")
    assert refused.value.name == "POLICY_VIOLATION"
    assert not Lab.objects.exists()
    assert not LabPort.objects.exists()


def test_a_deleted_lab_frees_its_ports_for_the_next(window: int) -> None:
    ada = make_user()
    gone = create_lab(ada, "Gone")
    kept = create_lab(ada, "Kept", brokers=1)
    gone.delete()
    assert list(LabPort.objects.values_list("port", flat=True)) == [window + 3]
    assert ports.ports_of(kept) == {1: window + 3}
    assert ports.ports_of(create_lab(ada, "Next")) == {1: window, 2: window + 1, 3: window + 2}


def test_a_lab_without_ports_gets_them_once_and_keeps_them(window: int) -> None:
    """A lab made before labs had listeners (or one that grew) gets what it lacks at its next start."""
    lab = create_lab(make_user(), "Old")
    LabPort.objects.filter(lab=lab, broker__in=(2, 3)).delete()
    assert ports.ensure_ports(lab) == {1: window, 2: window + 1, 3: window + 2}
    with _listening(window + 5):  # busy now: what the lab has is still its own
        assert ports.ensure_ports(lab) == {1: window, 2: window + 1, 3: window + 2}


@pytest.mark.django_db(transaction=True)
def test_ports_are_allocated_only_inside_the_transaction_that_makes_the_lab(window: int) -> None:
    lab = create_lab(make_user(), "Any")
    with pytest.raises(RuntimeError, match="inside the transaction"):
        ports.allocate(lab, [4])


# ---------------------------------------------------------------------------- labs made at once


def _slow_reads_of_ports(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    """Every read of the ports taken answers, then waits: without the lock, every maker would read
    the same ports taken before any inserts, and all would pick the same ones."""
    result = execute(sql, params, many, context)
    if sql.lstrip().upper().startswith("SELECT") and "lab_labport" in sql:
        time.sleep(0.05)
    return result


@pytest.mark.django_db(transaction=True)
def test_four_labs_made_at_once_get_twelve_different_ports(window: int) -> None:
    people = [make_user(n) for n in ("ada", "bob", "cy", "dee")]
    start = threading.Barrier(len(people))

    def make(owner: Any) -> dict[int, int]:
        try:
            with connection.execute_wrapper(_slow_reads_of_ports):
                start.wait(10)
                return ports.ports_of(create_lab(owner, f"{owner.get_username()}'s lab"))
        finally:
            connections.close_all()

    with ThreadPoolExecutor(len(people)) as pool:
        given = list(pool.map(make, people))
    every = [port for lab in given for port in lab.values()]
    assert sorted(every) == list(range(window, window + 12)), given
    assert LabPort.objects.count() == 12
