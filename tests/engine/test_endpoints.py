"""Kafka's listener strings, IPv6 hosts in brackets as Kafka writes them."""

from __future__ import annotations

import pytest

from lab.engine.endpoints import (
    ListenerEndpoint,
    format_address,
    format_endpoint,
    parse_endpoint,
    parse_endpoints,
)
from lab.engine.errors import InvalidConfig


def test_an_ipv6_host_is_written_in_brackets_and_a_name_or_ipv4_address_as_it_is() -> None:
    assert format_endpoint("PLAINTEXT", "::1", 9092) == "PLAINTEXT://[::1]:9092"
    assert format_endpoint("SASL_SSL", "fe80::1%eth0", 9096) == "SASL_SSL://[fe80::1%eth0]:9096"
    assert format_endpoint("PLAINTEXT", "broker-1.lab", 9092) == "PLAINTEXT://broker-1.lab:9092"
    assert format_endpoint("PLAINTEXT", "10.0.0.5", 9092) == "PLAINTEXT://10.0.0.5:9092"
    assert format_address("::", 19092) == "[::]:19092"


def test_reading_takes_the_brackets_off_again() -> None:
    assert parse_endpoint("PLAINTEXT://[::1]:9092") == ListenerEndpoint(
        listener="PLAINTEXT", host="::1", port=9092
    )
    assert parse_endpoint("PLAINTEXT://broker-1.lab:9092") == ListenerEndpoint(
        listener="PLAINTEXT", host="broker-1.lab", port=9092
    )
    assert parse_endpoint("PLAINTEXT://:9092").host == ""  # Kafka's null host: every interface
    # Kafka also reads an IPv6 host without brackets: the last colon starts the port.
    assert parse_endpoint("PLAINTEXT://::1:9092").host == "::1"
    both = parse_endpoints("PLAINTEXT://[::1]:19092, SASL_SSL://[::1]:19095")
    assert [str(e) for e in both] == ["PLAINTEXT://[::1]:19092", "SASL_SSL://[::1]:19095"]


@pytest.mark.parametrize(
    "bad", ["[::1]:9092", "PLAINTEXT://[::1]", "PLAINTEXT://host", "PLAINTEXT://host:port"]
)
def test_what_is_not_an_endpoint_is_refused_saying_what_one_looks_like(bad: str) -> None:
    with pytest.raises(InvalidConfig, match=r"LISTENER://host:port"):
        parse_endpoint(bad)
