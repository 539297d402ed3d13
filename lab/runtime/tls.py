"""A lab's own certificate authority and its brokers' certificates, for the SSL and SASL_SSL listeners.

Made with the ``cryptography`` package the first time a lab's TLS listener opens, and kept in the lab's
data directory (``tls/``): ``ca.pem`` (what a client verifies the brokers with: ``ssl.ca.location``,
``ssl_cafile``, the lab page's download), ``ca.key``, and per broker ``broker-<id>.pem`` and its key.
A reset of the lab keeps them (``KEPT_ON_RESET``), so a client's CA file stays good for the lab's life.
A broker's certificate names the advertised host, ``localhost`` and 127.0.0.1 (Kafka's clients check
the host name: ``ssl.endpoint.identification.algorithm=https``); a broker certificate that does not
name the host the lab now advertises is made again, signed by the same CA. Keys are EC P-256: quick
to make, and every client the lab serves speaks it.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DIRECTORY = "tls"
KEPT_ON_RESET = (DIRECTORY,)
CA_FILE = "ca.pem"
VALID_DAYS = 3650


def _name(common: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Kafka Lab"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.touch(mode=0o600)
    path.write_bytes(data)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class LabTls:
    """The CA and broker certificates in ``<data dir>/tls``, made on first use."""

    def __init__(self, data_dir: str | Path, *, lab: str = "lab", hosts: Iterable[str] = ()) -> None:
        self.directory = Path(data_dir) / DIRECTORY
        self.lab = lab
        self.hosts = tuple(dict.fromkeys([*hosts, "localhost", "127.0.0.1"]))

    @property
    def ca_file(self) -> Path:
        return self.directory / CA_FILE

    def ca_pem(self) -> bytes:
        self._ensure_ca()
        return self.ca_file.read_bytes()

    def server_context(self, broker_id: int) -> ssl.SSLContext:
        """What broker ``broker_id``'s TLS listeners serve with (TLS 1.2 and later, no client certificate)."""
        cert, key = self._ensure_broker(broker_id)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert, key)
        return context

    # ------------------------------------------------------------------ files

    def _ensure_ca(self) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key_file = self.directory / "ca.key"
        if self.ca_file.exists() and key_file.exists():
            cert = x509.load_pem_x509_certificate(self.ca_file.read_bytes())
            key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
            assert isinstance(key, ec.EllipticCurvePrivateKey)
            return cert, key
        self.directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        name = _name(f"Kafka Lab CA for {self.lab}")
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(days=1))
            .not_valid_after(_now() + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        _write_key(key_file, key)
        self.ca_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cert, key

    def _ensure_broker(self, broker_id: int) -> tuple[Path, Path]:
        cert_file = self.directory / f"broker-{broker_id}.pem"
        key_file = self.directory / f"broker-{broker_id}.key"
        ca_cert, ca_key = self._ensure_ca()
        if cert_file.exists() and key_file.exists() and self._names_every_host(cert_file, ca_cert):
            return cert_file, key_file
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(f"broker {broker_id} of {self.lab}"))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(days=1))
            .not_valid_after(_now() + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([_san(h) for h in self.hosts]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_key(key_file, key)
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cert_file, key_file

    def _names_every_host(self, cert_file: Path, ca_cert: x509.Certificate) -> bool:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        if cert.issuer != ca_cert.subject:
            return False
        try:
            names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            return False
        return all(_san(h) in names for h in self.hosts)
