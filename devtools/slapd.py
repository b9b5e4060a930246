"""A private OpenLDAP ``slapd`` on loopback, for the LDAP sign-in tests (issue 17).

Debian's slapd (package slapd; the test command installs it as root). The tests
skip when it is missing: ``slapd_binary`` says whether it is there.
"""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from devtools.processes import Process, ServiceError, free_port, wait_for_port


def slapd_binary() -> str | None:
    """Debian's slapd (package slapd), if installed."""
    for candidate in (shutil.which("slapd"), "/usr/sbin/slapd"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


SLAPD_SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


@dataclass
class Slapd:
    """A private OpenLDAP ``slapd`` on loopback: ``ldap://`` (StartTLS offered) and ``ldaps://`` ports.

    Its configuration (slapd.conf), database and log live under ``home``. TLS
    uses the certificate and key given (the tests make a CA of their own);
    ``schema`` is extra schema text (e.g. Active Directory's
    userAccountControl). The memberof overlay keeps ``memberOf`` on members of
    groupOfNames entries, as Active Directory does. Anonymous users may only
    bind: searching needs a bind, as a directory in production does.
    """

    home: Path
    suffix: str
    root_dn: str
    root_password: str
    cert_file: Path
    key_file: Path
    schema: str = ""
    ldap_port: int = 0
    ldaps_port: int = 0
    process: Process | None = None

    def _config(self) -> str:
        includes = "".join(f"include /etc/ldap/schema/{name}.schema\n" for name in SLAPD_SCHEMAS)
        if self.schema:
            (self.home / "extra.schema").write_text(self.schema)
            includes += f"include {self.home / 'extra.schema'}\n"
        return (
            f"{includes}"
            f"pidfile {self.home / 'slapd.pid'}\n"
            "modulepath /usr/lib/ldap\nmoduleload back_mdb\nmoduleload memberof\n"
            f"TLSCertificateFile {self.cert_file}\nTLSCertificateKeyFile {self.key_file}\n"
            "database mdb\nmaxsize 10485760\n"
            f'suffix "{self.suffix}"\nrootdn "{self.root_dn}"\nrootpw {self.root_password}\n'
            f"directory {self.home / 'data'}\n"
            "overlay memberof\n"
            "access to attrs=userPassword by self write by anonymous auth by * none\n"
            "access to * by users read by * none\n"
        )

    def start(self, timeout: float = 20.0) -> Slapd:
        (self.home / "data").mkdir(parents=True, exist_ok=True)
        conf = self.home / "slapd.conf"
        conf.write_text(self._config())
        for attempt in (1, 2, 3):
            self.ldap_port, self.ldaps_port = free_port(), free_port()
            urls = f"ldap://127.0.0.1:{self.ldap_port}/ ldaps://127.0.0.1:{self.ldaps_port}/"
            # -d 256 keeps it in the foreground and logs each operation (stats) to its log.
            argv = [slapd_binary() or "slapd", "-f", str(conf), "-h", urls, "-d", "256"]
            self.process = Process("slapd", argv, self.home / "slapd.log").start()
            try:
                wait_for_port(self.ldap_port, self.process, timeout)
                wait_for_port(self.ldaps_port, self.process, timeout)
                return self
            except ServiceError:
                self.process.stop()
                if attempt == 3:
                    raise
        return self

    def pause(self) -> None:
        """Stop answering (SIGSTOP): connections are still accepted by the kernel, nothing is answered."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process:
            self.resume()
            self.process.stop()
