"""A real OpenLDAP directory for the LDAP tests: Debian's slapd on loopback, with a test CA.

``devtools.services.Slapd`` starts the server (the test command installs the
package); this module makes the CA and the server's certificate (for
127.0.0.1) with ``cryptography`` and seeds the directory through ldap3 as its
root: people, groups (memberOf kept by the memberof overlay), a service
account, and an Active Directory style disabled account (userAccountControl 514).
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from ldap3 import MODIFY_REPLACE, Connection, Server

from devtools.services import Slapd

SUFFIX = "dc=example,dc=org"
ROOT_DN = f"cn=root,{SUFFIX}"
ROOT_PASSWORD = "root-secret"
SERVICE_DN = f"cn=authsvc,ou=services,{SUFFIX}"
SERVICE_PASSWORD = "service-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"

# Active Directory's attribute (its own OID), so the tests read the real ACCOUNTDISABLE bit.
AD_SCHEMA = """
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.32473.1.1 NAME 'testAdAccount' AUXILIARY MAY ( userAccountControl ) )
"""

# uid -> (mail, password, cn, userAccountControl)
PEOPLE_SEED = {
    "ada": ("ada@example.com", "ada-password", "Ada Lovelace", 512),
    "bob": ("bob@example.com", "bob-password", "Bob Local", 512),
    "boss": ("boss@example.com", "boss-password", "The Boss", 512),
    "carol": ("carol@example.com", "carol-password", "Carol Gone", 514),
    "twin1": ("twin@example.com", "twin-password", "Twin One", 512),
    "twin2": ("twin@example.com", "twin-password", "Twin Two", 512),
}
GROUPS_SEED = {"staff": ["ada", "bob", "carol"], "ops": ["ada"]}


def person_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


class DirectoryCa:
    """A CA of the test's own and a server certificate it signed, written as PEM files."""

    def __init__(self, home: Path, server_names: tuple[str, ...] = ("127.0.0.1",)):
        now = datetime.datetime.now(datetime.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "authsvc test CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256())
        )
        server_key = ec.generate_private_key(ec.SECP256R1())
        alt_names = [x509.IPAddress(ipaddress.ip_address(n)) for n in server_names]
        server = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, server_names[0])]))
            .issuer_name(name)
            .public_key(server_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
            .sign(key, hashes.SHA256())
        )
        self.ca_file = home / "ca.pem"
        self.cert_file = home / "server.pem"
        self.key_file = home / "server.key"
        self.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
        self.key_file.write_bytes(
            server_key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        self.key_file.chmod(0o600)


class Directory:
    """A running, seeded slapd: its URLs, its CA, and root access to change entries during a test."""

    def __init__(self, home: Path):
        home.mkdir(parents=True, exist_ok=True)
        self.ca = DirectoryCa(home)
        self.slapd = Slapd(
            home=home,
            suffix=SUFFIX,
            root_dn=ROOT_DN,
            root_password=ROOT_PASSWORD,
            cert_file=self.ca.cert_file,
            key_file=self.ca.key_file,
            schema=AD_SCHEMA,
        ).start()
        self.starttls_url = f"ldap://127.0.0.1:{self.slapd.ldap_port}"
        self.ldaps_url = f"ldaps://127.0.0.1:{self.slapd.ldaps_port}"
        self._seed()

    def root(self) -> Connection:
        return Connection(
            Server("127.0.0.1", port=self.slapd.ldap_port, connect_timeout=5),
            ROOT_DN,
            ROOT_PASSWORD,
            auto_bind=True,
            receive_timeout=5,
        )

    def _seed(self) -> None:
        with self.root() as conn:
            conn.add(SUFFIX, ["dcObject", "organization"], {"dc": "example", "o": "Example"})
            for ou in ("people", "groups", "services"):
                conn.add(f"ou={ou},{SUFFIX}", ["organizationalUnit"], {"ou": ou})
            conn.add(
                SERVICE_DN,
                ["organizationalRole", "simpleSecurityObject"],
                {"cn": "authsvc", "userPassword": SERVICE_PASSWORD},
            )
            for uid, (mail, password, cn, control) in PEOPLE_SEED.items():
                self.add_person(uid, mail, password, cn, control, conn=conn)
            for group, members in GROUPS_SEED.items():
                conn.add(
                    f"cn={group},{GROUPS}", ["groupOfNames"], {"cn": group, "member": [person_dn(m) for m in members]}
                )
                assert conn.result["result"] == 0, conn.result

    def add_person(
        self, uid: str, mail: str, password: str, cn: str, control: int = 512, conn: Connection | None = None
    ) -> None:
        attributes = {"uid": uid, "cn": cn, "sn": cn.split()[-1], "mail": mail, "userPassword": password}
        attributes["userAccountControl"] = str(control)
        classes = ["inetOrgPerson", "testAdAccount"]
        if conn is not None:
            conn.add(person_dn(uid), classes, attributes)
            assert conn.result["result"] == 0, conn.result
            return
        with self.root() as root:
            root.add(person_dn(uid), classes, attributes)
            assert root.result["result"] == 0, root.result

    def set_account_control(self, uid: str, control: int) -> None:
        with self.root() as conn:
            conn.modify(person_dn(uid), {"userAccountControl": [(MODIFY_REPLACE, [str(control)])]})
            assert conn.result["result"] == 0, conn.result

    def delete(self, uid: str) -> None:
        with self.root() as conn:
            conn.delete(person_dn(uid))
            assert conn.result["result"] == 0, conn.result

    def binds_as(self, dn: str) -> int:
        """How many binds as ``dn`` slapd has logged so far (its stats log)."""
        return self.slapd.process.output().count(f'BIND dn="{dn}"')

    def stop(self) -> None:
        self.slapd.stop()
