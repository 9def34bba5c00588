"""TLS against the real server: certificates made here with ``cryptography`` (a test-only
dependency); login by client certificate (grid-mapfile and user_subject_add), password login
inside TLS, the asyncio front over TLS, a wrong CA refused."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
from pathlib import Path
from typing import Iterator, Tuple

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import ardacat
import ardacat.aio
from ardacat.amga.mdclient import MDClient

from conftest import Databases, Server


def _name(**parts: str) -> x509.Name:
    oids = {"O": NameOID.ORGANIZATION_NAME, "CN": NameOID.COMMON_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in parts.items()])


def _write(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Tuple[str, str]:
    cp, kp = path.with_suffix(".crt"), path.with_suffix(".key")
    cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    kp.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    return str(cp), str(kp)


def _issue(subject: x509.Name, issuer: x509.Name, issuer_key: ec.EllipticCurvePrivateKey, ca: bool,
           server: bool) -> Tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
         .not_valid_after(now + dt.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                          content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False,
                                          encipher_only=False, decipher_only=False), critical=True)
    return b.sign(issuer_key if not ca else key, hashes.SHA256()), key


class Pki:
    def __init__(self, d: Path) -> None:
        ca_name = _name(O="ardacat-test", CN="Test CA")
        ca_cert, ca_key = _issue(ca_name, ca_name, None, True, False)  # type: ignore[arg-type]
        self.ca, _ = _write(d / "ca", ca_cert, ca_key)
        srv_cert, srv_key = _issue(_name(CN="localhost"), ca_name, ca_key, False, True)
        self.server_cert, self.server_key = _write(d / "server", srv_cert, srv_key)
        alice, akey = _issue(_name(O="ardacat-test", CN="Alice Smith"), ca_name, ca_key, False, False)
        self.alice_cert, self.alice_key = _write(d / "alice", alice, akey)
        bob, bkey = _issue(_name(O="ardacat-test", CN="Bob"), ca_name, ca_key, False, False)
        self.bob_cert, self.bob_key = _write(d / "bob", bob, bkey)
        other_name = _name(CN="Other CA")
        other, okey = _issue(other_name, other_name, None, True, False)  # type: ignore[arg-type]
        self.other_ca, _ = _write(d / "other", other, okey)
        self.gridmap = d / "grid-mapfile"
        self.gridmap.write_text('"/O=ardacat-test/CN=Alice Smith" alice\n')


@pytest.fixture(scope="module")
def tls_server(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Server, Pki]]:
    pki = Pki(tmp_path_factory.mktemp("pki"))
    s = Server(databases.fresh(), ["--tls-cert", pki.server_cert, "--tls-key", pki.server_key,
                                   "--tls-client-ca", pki.ca, "--grid-mapfile", str(pki.gridmap)])
    with ardacat.connect("localhost", s.port, login="root", password=s.password, ssl=True, ca=pki.ca) as root:
        for user in ("alice", "bob"):
            root.user_create(user, f"{user}-pw")
        root.user_subject_add("bob", "/O=ardacat-test/CN=Bob")
    yield s, pki
    s.stop()


def test_password_login_inside_tls(tls_server: Tuple[Server, Pki]) -> None:
    s, pki = tls_server
    with ardacat.connect("localhost", s.port, login="root", password=s.password, ssl=True, ca=pki.ca) as c:
        assert c.tls and c.whoami() == "root"
        c.mkdir("/tls_dir")
        c.addattr("/tls_dir", "v", "text")
        c.add_entry("/tls_dir/e", v="over tls")
        assert dict(c.getattr("/tls_dir", ["v"])) == {"e": ("over tls",)}


def test_client_certificate_login(tls_server: Tuple[Server, Pki]) -> None:
    s, pki = tls_server
    # grid-mapfile: no login given, the certificate's subject maps to alice
    with ardacat.connect("localhost", s.port, ca=pki.ca, cert=pki.alice_cert, key=pki.alice_key) as c:
        assert c.tls and c.whoami() == "alice"
    # user_subject_add: bob; naming the login the certificate maps to works too
    with ardacat.connect("localhost", s.port, login="bob", ca=pki.ca, cert=pki.bob_cert, key=pki.bob_key) as c:
        assert c.whoami() == "bob"
    # a certificate that maps to someone else is refused like a wrong password
    with pytest.raises(ardacat.ConnectError) as e:
        ardacat.connect("localhost", s.port, login="bob", ca=pki.ca, cert=pki.alice_cert, key=pki.alice_key)
    assert e.value.code == 4
    # the server's certificate must chain to the given CA
    with pytest.raises(ardacat.ConnectError):
        ardacat.connect("localhost", s.port, login="root", password=s.password, ssl=True, ca=pki.other_ca)


def test_tls_session_resume_and_config(tls_server: Tuple[Server, Pki], tmp_path: Path) -> None:
    s, pki = tls_server
    cfg = tmp_path / "mdclient.config"
    cfg.write_text(f"Host = localhost\nPort = {s.port}\nUseSSL = require\nCAFile = {pki.ca}\n"
                   f"CertFile = {pki.alice_cert}\nKeyFile = {pki.alice_key}\nAuthenticateWithCertificate = 1\n")
    with ardacat.connect(config=cfg, session=True) as c:
        assert c.tls and c.whoami() == "alice"
        c.cd("/tls_dir")
        c.resume()  # resumeSSL<id>
        assert c.tls and c.pwd() == "/tls_dir" and c.whoami() == "alice"


def test_aio_and_amga_over_tls(tls_server: Tuple[Server, Pki]) -> None:
    s, pki = tls_server

    async def main() -> None:
        c = await ardacat.aio.connect("localhost", s.port, ca=pki.ca, cert=pki.alice_cert, key=pki.alice_key)
        assert c.tls and await c.whoami() == "alice"
        await c.close()

    asyncio.run(main())
    md = MDClient("localhost", s.port, "", "")
    md.requireSSL(pki.alice_key, pki.alice_cert, ca=pki.ca)
    md.execute("whoami")
    assert md.fetchRow() == "alice" and md.eot()
