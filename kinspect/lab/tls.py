"""The TLS lab: a CA of the lab's own, a certificate per broker, and SSL + SASL_SSL listeners.

On-call users meet TLS on every cluster they run, so the lab speaks it for real. `lab up --tls`
makes LAB_DIR/tls/ca.pem (its key ca-key.pem, mode 600, never leaves the lab dir) and per node
<node>.pem: the node's private key (PKCS#8, unencrypted: Kafka's PEM keystore reads it without a
password) followed by its certificate, whose SANs are the node's IP address and its name, so a
client verifying hostnames accepts the address it connected to. Brokers read PEM directly
(`ssl.keystore.type=PEM`); the PLAINTEXT listener stays for inter-broker traffic and the lab's
own tools. SSL sits at port + SSL_PORT_OFFSET, SASL_SSL at port + SASL_SSL_PORT_OFFSET.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.lab.state import LabState, NodeRecord

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

SSL_PORT_OFFSET = 2000
SASL_SSL_PORT_OFFSET = 3000
CA_FILE = "ca.pem"
CA_KEY_FILE = "ca-key.pem"
VALID_DAYS = 30
CA_NAME = "kinspect lab CA"


@dataclass(frozen=True)
class CertRequest:
    """What one node's certificate says: who it is and the names it answers to."""

    node: str
    ip_addresses: tuple[str, ...]
    dns_names: tuple[str, ...]

    @property
    def file_name(self) -> str:
        return f"{self.node}.pem"


def tls_dir(root: Path) -> Path:
    return root / "tls"


def certificate_plan(nodes: list[NodeRecord]) -> list[CertRequest]:
    """One certificate per broker (controllers talk PLAINTEXT on their own listener)."""
    return [CertRequest(node.name, (node.host,), (node.name,))
            for node in nodes if node.role == "broker"]


def plan(root: Path, nodes: list[NodeRecord]) -> JsonObject:
    """Make the CA and every broker's key and certificate; describe them for the state."""
    directory = tls_dir(root)
    ca_cert, ca_key = make_ca(directory)
    for request in certificate_plan(nodes):
        write_node_files(directory / request.file_name, *issue(request, ca_cert, ca_key))
    return {"dir": str(directory), "ca": str(directory / CA_FILE),
            "ssl_port_offset": SSL_PORT_OFFSET, "sasl_ssl_port_offset": SASL_SSL_PORT_OFFSET}


def _private(path: Path, data: bytes) -> None:
    """Write a file only its owner may read (a key, or a key with its certificate)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def make_ca(directory: Path) -> tuple[Any, Any]:
    """A fresh self-signed CA (EC P-256: small and quick), written as ca.pem and ca-key.pem."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    _private(directory / CA_KEY_FILE, key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (directory / CA_FILE).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def load_ca(directory: Path) -> tuple[Any, Any]:
    """The lab's CA certificate and key, as make_ca wrote them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate((directory / CA_FILE).read_bytes())
    key = serialization.load_pem_private_key((directory / CA_KEY_FILE).read_bytes(), None)
    return cert, key


def issue(request: CertRequest, ca_cert: Any, ca_key: Any) -> tuple[bytes, bytes]:
    """A key and a server certificate signed by the CA for the request's names (PEM each)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(a))
                                     for a in request.ip_addresses]
    names += [x509.DNSName(d) for d in request.dns_names]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, request.node)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def write_node_files(path: Path, key_pem: bytes, cert_pem: bytes) -> None:
    """Kafka's PEM keystore file: the private key, then the certificate (private, 600)."""
    _private(path, key_pem + cert_pem)


def enabled(state: LabState) -> bool:
    return "tls" in state.extra


def ssl_address(node: NodeRecord) -> str:
    return f"{node.host}:{node.port + SSL_PORT_OFFSET}"


def sasl_ssl_address(node: NodeRecord) -> str:
    return f"{node.host}:{node.port + SASL_SSL_PORT_OFFSET}"


def ssl_bootstrap(state: LabState) -> str | None:
    return ",".join(ssl_address(b) for b in state.brokers) if enabled(state) else None


def sasl_ssl_bootstrap(state: LabState) -> str | None:
    return ",".join(sasl_ssl_address(b) for b in state.brokers) if enabled(state) else None


def ca_file(state: LabState) -> str | None:
    return str(state.extra["tls"]["ca"]) if enabled(state) else None


def listeners(node: NodeRecord, state: LabState) -> list[tuple[str, str]]:
    """(listener name, address) of the TLS listeners; none without --tls."""
    if not enabled(state):
        return []
    return [("SSL", ssl_address(node)), ("SASL_SSL", sasl_ssl_address(node))]


def broker_settings(node: NodeRecord, state: LabState, directory: Path | None = None
                    ) -> dict[str, str]:
    """The keystore (this node's key and certificate) and truststore (the lab's CA), both PEM
    files; `directory` is where the node finds them (a container sees its own copy)."""
    if not enabled(state):
        return {}
    where = directory or Path(state.extra["tls"]["dir"])
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(where / f"{node.name}.pem"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(where / CA_FILE),
            "ssl.client.auth": "none"}


def node_files(root: Path, node: NodeRecord) -> dict[str, bytes]:
    """The files a node's TLS listener reads, by name (to copy them into a container)."""
    directory = tls_dir(root)
    return {CA_FILE: (directory / CA_FILE).read_bytes(),
            f"{node.name}.pem": (directory / f"{node.name}.pem").read_bytes()}


def client_config(state: LabState, sasl: bool = True) -> dict[str, str]:
    """librdkafka settings reaching this lab over TLS (SASL_SSL, else SSL), minus the login."""
    assert enabled(state)
    return {"security.protocol": "SASL_SSL" if sasl else "SSL",
            "ssl.ca.location": str(state.extra["tls"]["ca"])}
