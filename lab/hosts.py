"""Where the lab listens, and the addresses a class uses to reach it.

``make run`` listens on loopback (127.0.0.1) for one person's development; ``make run HOST=0.0.0.0``
(or a machine's own address) serves a class, which reaches it by this machine's network address or
name. Settings read this to decide the classroom's defaults (DEBUG off, the hosts allowed), and the
demo panel to show students a URL they can open. Pure standard library: settings import it.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

LISTEN_ENV_VAR = "LAB_LISTEN"  # "host:port" daphne listens on, set by lab.serve
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address
_IF_INET6 = Path("/proc/net/if_inet6")


@dataclass(frozen=True, slots=True, kw_only=True)
class Listen:
    host: str  # as given: "0.0.0.0", "::", "127.0.0.1", "10.0.0.5"
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def everywhere(self) -> bool:
        """Every interface (0.0.0.0 or ::)."""
        ip = _ip(self.host)
        return ip is not None and ip.is_unspecified

    def addresses(self) -> list[str]:
        """The addresses it answers at, loopback aside: every one of this machine's for 0.0.0.0 (IPv4)
        or :: (both, on Linux's dual-stack sockets), else the one it was given."""
        if not self.everywhere:
            return [self.host]
        return machine_addresses(ipv6=":" in self.host)


def parse_listen(text: str) -> Listen | None:
    """``Listen(host="0.0.0.0", port=8080)`` from ``0.0.0.0:8080`` or ``[::]:8080``; None if empty or bad."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit():
        return None
    host = host.removeprefix("[").removesuffix("]")
    return Listen(host=host, port=int(port)) if host else None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip().removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost: reachable from this machine only."""
    name = host.strip().lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    ip = _ip(name)
    return ip is not None and ip.is_loopback


def url_host(address: str) -> str:
    """An address as it goes in a URL (IPv6 in brackets)."""
    return f"[{address}]" if ":" in address else address


def _ipv4_addresses() -> list[str]:
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # down, or no IPv4 address
                continue
            found.append(socket.inet_ntoa(packed[20:24]))
    return found


def _ipv6_addresses() -> list[str]:
    """Global IPv6 addresses (link-local ones need a zone, which no student types)."""
    try:
        lines = _IF_INET6.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[3] == "00":  # scope: global
            found.append(str(ipaddress.IPv6Address(bytes.fromhex(fields[0]))))
    return found


def _outbound_address() -> str | None:
    """The address this machine's default route leaves from (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
        except OSError:
            return None
        address: str = sock.getsockname()[0]
    return address


def machine_addresses(*, ipv6: bool = True) -> list[str]:
    """This machine's network addresses, loopback left out, the default route's first; IPv4 only
    unless ``ipv6``."""
    addresses = []
    for address in (_outbound_address(), *_ipv4_addresses(), *(_ipv6_addresses() if ipv6 else ())):
        ip = _ip(address or "")
        if ip is not None and not ip.is_loopback and not ip.is_unspecified and address not in addresses:
            addresses.append(str(address))
    return addresses


def machine_names() -> list[str]:
    """This machine's names: its host name, its mDNS name (``name.local``) and its full name."""
    hostname = socket.gethostname().strip().lower()
    names = [hostname, f"{hostname}.local", socket.getfqdn().strip().lower()] if hostname else []
    out: list[str] = []
    for name in names:
        if name and not is_loopback(name) and name not in out:
            out.append(name)
    return out


def served_hosts(listen: Listen) -> list[str]:
    """Host names (for ALLOWED_HOSTS) a class may use to reach a server listening on ``listen``."""
    if listen.loopback:
        return list(LOOPBACK_NAMES)
    hosts = [*LOOPBACK_NAMES, *(url_host(a) for a in listen.addresses()), *machine_names()]
    return list(dict.fromkeys(hosts))


def student_addresses(listen: Listen | None) -> list[str]:
    """Host parts (``10.0.0.5:8080``) other machines can reach the lab at; none when it listens on
    loopback only (or was not started by lab.serve, so nobody knows)."""
    if listen is None or listen.loopback:
        return []
    suffix = "" if listen.port == 80 else f":{listen.port}"
    return [url_host(a) + suffix for a in listen.addresses()]


def student_urls(scheme: str, host: str, listen: Listen | None) -> list[str]:
    """Base URLs students open, for a page at ``scheme://host``: that one, unless it is loopback (the
    instructor at the lab's machine); then this machine's addresses the lab listens on (none if it
    listens on loopback only)."""
    if host.startswith("["):
        name = host[1 : host.find("]")]
    else:
        name = host.split(":")[0] if host.count(":") == 1 else host
    if not is_loopback(name):
        return [f"{scheme}://{host}"]
    return [f"http://{a}" for a in student_addresses(listen)]


def classroom_lines(host: str, port: int, *, debug: str = "") -> list[str]:
    """What ``make run`` says about who can reach it (``debug``: DJANGO_DEBUG as set, if at all)."""
    listen = Listen(host=host, port=port)
    if listen.loopback:
        return [
            f"Only this machine can open it; to serve a class on this network: make run HOST=0.0.0.0 PORT={port}"
        ]
    reachable = student_addresses(listen)
    lines = [
        "Classroom: students open " + ", ".join(f"http://{a}/" for a in reachable)
        if reachable
        else "Classroom: this machine has no network address: students cannot reach it"
    ]
    if not debug.strip():
        lines.append(
            "Classroom: DEBUG is off (students see no tracebacks), plain HTTP (no https redirect); "
            f"also answers to {', '.join(machine_names()) or 'no name'}; for another name students use: "
            "DJANGO_ALLOWED_HOSTS=name make run HOST=..."
        )
    return lines


@dataclass(frozen=True, slots=True, kw_only=True)
class WireHosts:
    """Where labs' Kafka listeners bind, and the host their brokers advertise to clients."""

    bind: str
    advertised: str


def wire_hosts(listen: Listen | None, advertised: str = "") -> WireHosts:
    """The Kafka listeners follow the site: on loopback (or not started by lab.serve) they bind
    127.0.0.1 and advertise it; for a class (``0.0.0.0`` or ``::``) they bind every interface and
    advertise this machine's primary address, which a student's client can reach (a client
    connects to the advertised host of every broker, so 127.0.0.1 would send it to its own
    machine); at one address they bind and advertise that one. ``advertised`` (LAB_ADVERTISED_HOST)
    names another host: a DNS name, or the address a NAT forwards."""
    advertised = advertised.strip().removeprefix("[").removesuffix("]")
    if listen is None or listen.loopback:
        return WireHosts(bind="127.0.0.1", advertised=advertised or "127.0.0.1")
    if listen.everywhere:
        primary = machine_addresses(ipv6=":" in listen.host)
        return WireHosts(bind=listen.host, advertised=advertised or (primary[0] if primary else "127.0.0.1"))
    return WireHosts(bind=listen.host, advertised=advertised or listen.host)
