"""The scenarios, the rows of the table: what each one sends, to which server.

Each key names a ``Load`` (``bench/load.py``) that either generator drives;
``bcrypt`` is the one row without HTTP (``bench/baselines.py``). The requests
are described, row by row, in bench/README.md ("The scenarios").
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
from urllib.parse import quote, urlencode

from bench import BenchError, scenarios_peers, seed
from bench.load import Load
from bench.metadata_documents import DocumentServer
from bench.servers import Servers

INSPECT_PATH = "/api/engine/v2/api_keys/inspect"
SCENARIOS = (
    "bare",
    "roundtrip",
    "inspect_bearer",
    "inspect_api_key",
    "code_flow",
    "code_flow_openid",
    "refresh",
    "device_poll",
    "scim_filter",
    "client_credentials",
    "twin_code_flow",
    "twin_refresh",
    "twin_client_credentials",
    "dot_inspect",
    "dot_code_flow",
    "dot_refresh",
    "dot_client_credentials",
    "domains_inspect",
    "domains_code_flow",
    "domains_discovery",
    "domains_jwks",
    "domains_admin_list",
    "domains_console",
    "client_credentials_jwt",
    "client_credentials_dpop",
    "token_exchange",
    "metadata_document_exchange",
    "inspect_dpop",
    "password_grant",
    "signin",
    # After the fast rows: a sign-in still in bcrypt when its slice ends would hold up the next row's.
    "domains_signin",
    "bcrypt",
)
# A few requests a second each: they need longer slices for a steady figure.
BCRYPT_BOUND = {"bcrypt", "password_grant", "signin", "domains_signin"}


def bcrypt_bound(key: str) -> bool:
    """Whether the row ``key`` (``domains_signin_10000`` is ``domains_signin`` at a count) is bcrypt's."""
    return key in BCRYPT_BOUND or key.rsplit("_", 1)[0] in BCRYPT_BOUND


# The rows that ``--before`` also measures on the earlier checkout.
BEFORE = (
    "inspect_bearer",
    "inspect_api_key",
    "code_flow",
    "code_flow_openid",
    "refresh",
    "device_poll",
    "client_credentials",
    "signin",
)

# The rows that ``--ha`` also measures on the Sentinel / multi-host cluster.
HA = ("inspect_bearer", "code_flow")


class Scenarios:
    """The loads of ``args.scenarios`` against the running ``servers``."""

    def __init__(self, args: argparse.Namespace, servers: Servers) -> None:
        self.args = args
        self.servers = servers
        self._documents: DocumentServer | None = None

    def keys(self) -> list[str]:
        """Measured keys in order; inspect_bearer once per token count."""
        out = []
        for key in self.args.scenarios:
            if key == "inspect_bearer":
                out += [f"inspect_bearer_{i.tokens}" for i in self.servers.instances]
            elif key == "scim_filter":
                out += [f"scim_filter_{i.users}" for i in self.servers.instances]
            elif key.startswith("domains_"):
                out += [f"{key}_{d.count}" for d in self.servers.domain_sets]
            else:
                out.append(key)
            if self.servers.before is not None and key in BEFORE:
                out.append(f"{key}_before")
            if self.servers.ha is not None and key in HA:
                out.append(f"{key}_ha")
        return out

    def load(self, key: str) -> Load:  # noqa: C901 - one branch per scenario, each its own load
        """The load of the scenario ``key`` (one of ``keys()``, or ``inspect_bearer`` for the first database)."""
        servers = self.servers
        s = servers.seed
        main = servers.main
        port = main.server.port
        fast = self.args.connections
        slow = 2 * self.args.workers
        if key == "bare":
            return Load(key, servers.bare.port, connections=fast)
        if key == "roundtrip":
            return Load(key, servers.roundtrip.port, connections=fast)
        if key.startswith("twin_"):
            return scenarios_peers.twin_load(self.servers, self.args, key)
        if key.startswith("dot_"):
            return scenarios_peers.peer_load(self.servers, self.args, key)
        if key.startswith("domains_"):
            return self.domains_load(key)
        if key.endswith("_before"):
            # The same load as the row it shadows, sent to the earlier checkout.
            shadowed = self.load(f"inspect_bearer_{main.tokens}" if key.startswith("inspect_bearer") else key[:-7])
            shadowed.name, shadowed.port = key, servers.before.port
            return shadowed
        if key.endswith("_ha"):
            # The same load as the row it shadows, sent to the authsvc over the HA cluster (its own session).
            shadowed = self.load(f"inspect_bearer_{main.tokens}" if key.startswith("inspect_bearer") else key[:-3])
            shadowed.name, shadowed.port = key, servers.ha.port
            if "Cookie" in shadowed.headers:
                shadowed.headers = {**shadowed.headers, "Cookie": f"user={servers.ha_cookie}"}
            return shadowed
        if key.startswith("inspect_bearer"):
            instance = next((i for i in servers.instances if key == f"inspect_bearer_{i.tokens}"), main)
            return Load(
                key,
                instance.server.port,
                "bearer",
                path=INSPECT_PATH,
                secrets=instance.inspect_secrets,
                connections=fast,
            )
        if key.startswith("scim_filter"):
            # Entra ID's lookup before it creates a user: one user by userName, among 1,000 or 100,000.
            instance = next((i for i in servers.instances if key == f"scim_filter_{i.users}"), main)
            wanted = seed.scim_user_email(instance.users // 2)
            path = "/scim/v2/Users?filter=" + quote(f'userName eq "{wanted}"')
            headers = {"Authorization": f"Bearer {s.scim_key}"}
            return Load(key, instance.server.port, path=path, headers=headers, connections=fast)
        if key == "inspect_api_key":
            return Load(key, port, path=INSPECT_PATH, headers={"X-API-Key": s.api_key}, connections=fast)
        if key in ("code_flow", "code_flow_openid"):
            cookie = {"Cookie": f"user={servers.session_cookie}"}
            return Load(
                key,
                port,
                "code_flow",
                path=s.authorize_path(openid=key == "code_flow_openid"),
                headers=cookie,
                ok=(200, 302),
                connections=fast,
                exchange_prefix=s.exchange_path_prefix(),
            )
        if key == "refresh":
            # Every refresh token is good once: each run gets fresh ones.
            pool = seed.insert_tokens(main.conn, s, 50 * fast, 50 * fast, refresh=True)
            return Load(key, port, "refresh", connections=fast, secrets=pool, client_id=s.client_id)
        if key == "device_poll":
            # A device polling while nobody has answered: every poll after the first is too soon,
            # so the answers are 400 slow_down (the same reads, and one write, as authorization_pending).
            body = urlencode(
                {
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                    "device_code": self.device_code(),
                    "client_id": s.device_client_id,
                }
            )
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                ok=(400,),
                connections=fast,
            )
        if key == "client_credentials":
            # HTTP Basic: the secret is checked as a SHA-256 digest compare, not bcrypt.
            basic = base64.b64encode(f"{s.machine_client_id}:{s.machine_client_secret}".encode()).decode()
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body="grant_type=client_credentials",
                headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"},
                connections=fast,
            )
        if key == "client_credentials_jwt":
            # private_key_jwt: every assertion is good once (its jti), so each slice signs its own,
            # enough for 800 requests a second, before the slice starts.
            seconds = max(1.0, round(self.args.duration / self.args.rounds), self.args.warmup)
            audience = f"http://{seed.HOST}:{port}/auth/oauth/token"
            body = urlencode({"grant_type": "client_credentials", "client_assertion_type": seed.ASSERTION_TYPE})
            return Load(
                key,
                port,
                "once",
                method="POST",
                path="/auth/oauth/token",
                body=body + "&client_assertion=",
                secrets=seed.client_assertions(s, audience, int(800 * seconds)),
                connections=fast,
            )
        if key == "client_credentials_dpop":
            # The client credentials row with a DPoP proof (RFC 9449): each proof is good once (its jti)
            # and carries the server's nonce, so each slice signs its own, enough for 800 requests a second.
            url = f"http://{seed.HOST}:{port}/auth/oauth/token"
            basic = base64.b64encode(f"{s.machine_client_id}:{s.machine_client_secret}".encode()).decode()
            headers = {"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"}
            holder = seed.DPoPKey()
            holder.nonce = seed.dpop_nonce(port, holder, url)
            return Load(
                key,
                port,
                "once",
                method="POST",
                path="/auth/oauth/token",
                body="grant_type=client_credentials",
                headers=headers,
                secret_header="DPoP",
                secrets=holder.proofs("POST", url, int(800 * self._slice_seconds())),
                connections=fast,
            )
        if key == "token_exchange":
            # RFC 8693: the machine application exchanges its own client credentials token (one subject for the
            # whole row: an exchange spends nothing), HTTP Basic as the client credentials row.
            basic = base64.b64encode(f"{s.machine_client_id}:{s.machine_client_secret}".encode()).decode()
            body = urlencode(
                {
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "subject_token": seed.machine_token(port, s),
                    "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
                }
            )
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body=body,
                headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"},
                connections=fast,
            )
        if key == "metadata_document_exchange":
            # The code exchange of a Client ID Metadata Document's client, its document cached (fetched once, at
            # the first authorisation request): codes approved beforehand, enough for 800 exchanges a second.
            documents = self.documents()
            count = int(800 * self._slice_seconds())
            return Load(
                key,
                port,
                "once",
                method="POST",
                path="/auth/oauth/token",
                body=documents.exchange_body(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                secrets=documents.mint_codes(port, servers.session_cookie, count, self.args.workers),
                connections=fast,
            )
        if key == "inspect_dpop":
            # Inspect with a DPoP-bound token (client credentials with a proof): each request its own
            # proof for inspect's URL, with the token's hash (ath); the bearer row is its twin.
            url = f"http://{seed.HOST}:{port}{INSPECT_PATH}"
            holder = seed.DPoPKey()
            token = seed.dpop_token(port, s, holder)
            return Load(
                key,
                port,
                "once",
                path=INSPECT_PATH,
                headers={"Authorization": f"DPoP {token}"},
                secret_header="DPoP",
                secrets=holder.proofs("GET", url, int(3000 * self._slice_seconds()), access_token=token),
                connections=fast,
            )
        if key == "password_grant":
            body = json.dumps(
                {
                    "grant_type": "password",
                    "username": seed.SERVICE_EMAIL,
                    "password": seed.PASSWORD,
                    "client_id": s.client_id,
                }
            )
            return Load(
                key,
                port,
                method="POST",
                path="/auth/oauth/token",
                body=body,
                headers={"Content-Type": "application/json"},
                connections=slow,
                timeout=30,
            )
        if key == "signin":
            path = f"/auth/signin?email={quote(seed.PERSON_EMAIL)}&password={quote(seed.PASSWORD)}"
            return Load(key, port, method="POST", path=path, ok=(202,), connections=slow, timeout=30)
        raise KeyError(key)

    def domains_load(self, key: str) -> Load:
        """A tenancy row at one domain count: the bench domain's requests, or a random seeded domain's documents."""
        kind, count = key.removeprefix("domains_").rsplit("_", 1)
        domain_set = next(d for d in self.servers.domain_sets if d.count == int(count))
        port, fast, s = domain_set.server.port, self.args.connections, self.servers.seed
        if kind == "inspect":
            secrets = self.servers.main.inspect_secrets  # the copy holds the first database's tokens
            return Load(key, port, "bearer", path=INSPECT_PATH, secrets=secrets, connections=fast)
        if kind == "signin":
            path = f"/auth/signin?email={quote(seed.PERSON_EMAIL)}&password={quote(seed.PASSWORD)}"
            return Load(key, port, method="POST", path=path, ok=(202,), connections=2 * self.args.workers, timeout=30)
        if kind == "code_flow":
            return Load(
                key,
                port,
                "code_flow",
                path=s.authorize_path(),
                headers={"Cookie": f"user={domain_set.cookie}"},
                ok=(200, 302),
                connections=fast,
                exchange_prefix=s.exchange_path_prefix(),
            )
        # The admin pages are held to a latency (p95), a request's and not a queue's: one connection per worker.
        if kind == "admin_list":
            # A system admin's first page of every domain (50 a page, with the total).
            headers = {"X-API-Key": s.admin_key}
            return Load(key, port, path="/api/engine/v2/domains", headers=headers, connections=self.args.workers)
        if kind == "console":
            cookie = {"Cookie": f"user={domain_set.admin_cookie}"}
            # A domain's first page: /domains/<id>/ redirects here.
            path = f"/auth/admin/domains/{s.domain_id}/applications"
            return Load(key, port, path=path, headers=cookie, connections=self.args.workers)
        # Discovery and the JWKS of a random one of the seeded domains: a cache per domain would show here.
        path = "/.well-known/openid-configuration" if kind == "discovery" else "/auth/oauth/jwks"
        return Load(key, port, "hosts", path=path, secrets=domain_set.hosts, connections=fast)

    def documents(self) -> DocumentServer:
        """The metadata document client's document, served from here once the row first needs it."""
        if self._documents is None:
            self._documents = DocumentServer()
        return self._documents

    def _slice_seconds(self) -> float:
        return max(1.0, round(self.args.duration / self.args.rounds), self.args.warmup)

    def device_code(self) -> str:
        """A fresh device code of the seeded --device application (it lasts AUTHSVC_DEVICE_CODE_TTL, 600 s)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.servers.main.server.port, timeout=30)
        body = urlencode({"client_id": self.servers.seed.device_client_id})
        conn.request(
            "POST",
            "/auth/oauth/device_authorization",
            body=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        response = conn.getresponse()
        data = response.read()
        conn.close()
        if response.status != 200:
            raise BenchError(f"device authorisation failed: {response.status}")
        return json.loads(data)["device_code"]
