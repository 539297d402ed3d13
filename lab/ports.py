"""Each broker of a lab listens for Kafka clients on a TCP port of its own, for the life of the lab.

Ports come from ``LAB_WIRE_PORTS`` (default ``19092-19999``), the lowest free one first, so the demo
lab of a fresh ``make run`` is at 19092, 19093, 19094. ``allocate`` runs inside the transaction that
makes the lab (``lab.labs.create_lab``), after the makers' lock (``lab.limits``), so two labs made at
once take turns; ``LabPort.port`` being unique is the database's last word even so. A port something
on this machine already listens on is passed over. The rows live as long as the lab and the lab's
settings keep a copy (``ports``, what starting it reads, with no query): ``make run`` reopens the same
ports after a restart, so a client's ``bootstrap.servers`` stays right; deleting the lab frees them.

A lab made with secured listeners (SASL_PLAINTEXT, SSL, SASL_SSL beside PLAINTEXT) has a port per
broker on each, allocated the same way: the rows say which listener (``LabPort.listener``), the
settings keep them under ``listeners``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from lab.engine.errors import PolicyViolation
from lab.limits import one_maker_at_a_time
from lab.models import Lab, LabPort


@dataclass(frozen=True, slots=True)
class PortRange:
    low: int
    high: int  # included

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.low, self.high + 1))

    def __len__(self) -> int:
        return self.high - self.low + 1

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


def parse_range(text: str) -> PortRange:
    """``19092-19999`` (or ``19092..19999``): both ends included, 1024 to 65535."""
    low, sep, high = text.strip().replace("..", "-").partition("-")
    try:
        ports = PortRange(int(low), int(high)) if sep else None
    except ValueError:
        ports = None
    if ports is None or not 1024 <= ports.low <= ports.high <= 65535:
        raise ImproperlyConfigured(
            f"LAB_WIRE_PORTS is a range of TCP ports like 19092-19999 (1024 to 65535), not {text!r}"
        )
    return ports


def configured_range() -> PortRange:
    return parse_range(str(settings.LAB_WIRE_PORTS))


class NoFreePorts(PolicyViolation):
    """Every port of ``LAB_WIRE_PORTS`` is another lab's or in use on this machine."""


def port_is_free(host: str, port: int) -> bool:
    """Nothing on this machine listens on ``port`` at ``host`` (a listener's leftover connections in
    TIME_WAIT do not count: the lab's listeners reuse the address, as this check does)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def allocate(
    lab: Lab, brokers: Iterable[int], using: str = "default", *, listener: str = "PLAINTEXT"
) -> dict[int, int]:
    """Give each of ``brokers`` a port of its own on ``listener``, in the transaction that makes (or
    grows) ``lab``."""
    if not transaction.get_connection(using).in_atomic_block:
        raise RuntimeError("ports are allocated inside the transaction that makes the lab")
    one_maker_at_a_time(using)
    ports = configured_range()
    taken = set(LabPort.objects.using(using).values_list("port", flat=True))
    host = str(settings.LAB_WIRE_BIND_HOST)
    candidates = iter(ports)
    given: dict[int, int] = {}
    for broker in sorted(brokers):
        port = next((p for p in candidates if p not in taken and port_is_free(host, p)), None)
        if port is None:
            raise NoFreePorts(
                f"No free port is left for broker {broker}'s {listener} listener in LAB_WIRE_PORTS ({ports}, "
                f"{len(ports)} ports): they are other labs' or in use on this machine. Delete labs "
                "nobody uses, or widen LAB_WIRE_PORTS."
            )
        LabPort.objects.using(using).create(lab=lab, broker=broker, port=port, listener=listener)
        taken.add(port)
        given[broker] = port
    return given


def ports_of(lab: Lab, listener: str = "PLAINTEXT") -> dict[int, int]:
    """Each broker's port on ``listener``, as stored."""
    return dict(LabPort.objects.filter(lab=lab, listener=listener).values_list("broker", "port"))


def ensure_ports(lab: Lab, listener: str = "PLAINTEXT") -> dict[int, int]:
    """The lab's ports on ``listener``, a new one for each broker that has none (a lab made before labs
    had listeners, or one that grew); what was given before never changes."""
    have = ports_of(lab, listener)
    if all(b in have for b in range(1, lab.brokers + 1)):
        return have
    with transaction.atomic():
        one_maker_at_a_time()
        have = ports_of(lab, listener)  # as it is now that no other maker runs
        allocate(lab, [b for b in range(1, lab.brokers + 1) if b not in have], listener=listener)
    return ports_of(lab, listener)
