"""A lab's CA and broker certificates: made once in its data directory, verified by a real TLS handshake,
kept by a reset, and made again for a broker when the advertised host changes."""

from __future__ import annotations

import contextlib
import socket
import ssl
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography import x509

from lab.runtime.tls import LabTls
from tests.walltime import still_lab, until_done


def handshake(tls: LabTls, broker: int, server_name: str, cafile: Path) -> str:
    """A real TLS handshake over a socket pair: the name the server's certificate was checked for."""
    server_context = tls.server_context(broker)
    client_context = ssl.create_default_context(cafile=str(cafile))
    a, b = socket.socketpair()
    with a, b, ThreadPoolExecutor(1) as pool:
        server = pool.submit(lambda: server_context.wrap_socket(a, server_side=True))
        try:
            client_context.wrap_socket(b, server_hostname=server_name).close()
        finally:
            b.close()
            with contextlib.suppress(ssl.SSLError, OSError):
                server.result(10).close()
    return server_name


def test_the_ca_signs_each_brokers_certificate_for_the_advertised_host(tmp_path: Path) -> None:
    tls = LabTls(tmp_path, lab="demo", hosts=["kafka.example"])
    ca = tls.ca_pem()
    assert ca.startswith(b"-----BEGIN CERTIFICATE-----")
    assert handshake(tls, 1, "kafka.example", tls.ca_file) == "kafka.example"
    assert handshake(tls, 2, "127.0.0.1", tls.ca_file) == "127.0.0.1"
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(tls, 1, "elsewhere.example", tls.ca_file)
    assert (tmp_path / "tls" / "ca.key").stat().st_mode & 0o077 == 0  # the CA's key is the lab's alone
    assert LabTls(tmp_path, lab="demo", hosts=["kafka.example"]).ca_pem() == ca  # made once


def test_a_new_advertised_host_gets_a_new_broker_certificate_from_the_same_ca(tmp_path: Path) -> None:
    LabTls(tmp_path, hosts=["10.1.2.3"]).server_context(1)
    first = (tmp_path / "tls" / "broker-1.pem").read_bytes()
    moved = LabTls(tmp_path, hosts=["lab.example"])
    moved.server_context(1)
    again = (tmp_path / "tls" / "broker-1.pem").read_bytes()
    assert again != first
    names = x509.load_pem_x509_certificate(again).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "lab.example" in names.value.get_values_for_type(x509.DNSName)
    assert handshake(moved, 1, "lab.example", moved.ca_file) == "lab.example"


def test_a_reset_keeps_the_labs_ca_and_deletes_the_rest(tmp_path: Path) -> None:
    lab, wall = still_lab(tmp_path, "kept")
    try:
        ca = lab.lab_tls.ca_pem()
        logs = [p for p in (tmp_path / "kept").iterdir() if p.name != "tls"]
        assert logs
        until_done(lab, wall, lab.act("clock-reset", {}))
        assert lab.lab_tls.ca_pem() == ca
    finally:
        lab.stop()
