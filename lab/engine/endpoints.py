"""Kafka's listener strings: ``PLAINTEXT://host:port``, as ``listeners``, ``advertised.listeners`` and
``/brokers/ids/<id>``'s ``endpoints`` hold them.

An IPv6 host goes in brackets (``PLAINTEXT://[::1]:9092``, Kafka's ``Utils.formatAddress``), else its
port could not be told from its address; parsing takes the brackets off again, as Kafka's
``EndPoint.createEndPoint`` does. An empty host (``PLAINTEXT://:9092``) is Kafka's null host: every
interface.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lab.engine.errors import InvalidConfig

# The listener name, "://", a host (an IPv6 one in brackets; without them, as Kafka reads it, the
# last colon starts the port), ":" and the port.
_ENDPOINT = re.compile(
    r"(?P<listener>[A-Za-z0-9_.-]+)://(?:\[(?P<v6>[0-9a-zA-Z%.:]+)\]|(?P<host>[0-9a-zA-Z\-%._:]*)):(?P<port>-?[0-9]+)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerEndpoint:
    listener: str  # its name, here its security protocol: PLAINTEXT, SASL_SSL...
    host: str  # "" for every interface (Kafka's null host)
    port: int

    def __str__(self) -> str:
        return format_endpoint(self.listener, self.host, self.port)


def format_address(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets (``[::1]:9092``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def format_endpoint(listener: str, host: str, port: int) -> str:
    return f"{listener}://{format_address(host, port)}"


def parse_endpoint(text: str) -> ListenerEndpoint:
    """``LISTENER://host:port`` (``[v6]`` in brackets); INVALID_CONFIG, saying why, otherwise."""
    found = _ENDPOINT.fullmatch(text.strip())
    if found is None:
        raise InvalidConfig(
            f"Unable to parse {text!r} to a broker endpoint: expected LISTENER://host:port "
            "(an IPv6 host in brackets: PLAINTEXT://[::1]:9092)"
        )
    host = found["v6"] if found["v6"] is not None else found["host"]
    return ListenerEndpoint(listener=found["listener"], host=host, port=int(found["port"]))


def parse_endpoints(text: str) -> tuple[ListenerEndpoint, ...]:
    """A comma-separated list, as ``listeners`` and ``advertised.listeners`` hold it."""
    return tuple(parse_endpoint(part) for part in text.split(",") if part.strip())
