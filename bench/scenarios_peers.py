"""The comparison rows: our rows' loads sent to other servers, Authlib's documented token endpoint
(``twin_*``, bench/twin.py) and django-oauth-toolkit (``dot_*``, bench/peers.py, bench/dot/).

``Scenarios.load`` (bench/scenarios.py) hands these rows here.
"""

from __future__ import annotations

import argparse
import base64
from urllib.parse import quote

from bench import floors, seed
from bench.load import Load
from bench.servers import Servers


def twin_load(servers: Servers, args: argparse.Namespace, key: str) -> Load:
    """The same load as our row ``key[5:]``, sent to Authlib's documented token endpoint (bench/twin.py)."""
    twin, port, fast = servers.twin_seed, servers.twin.port, args.connections
    if key == "twin_code_flow":
        return Load(
            key,
            port,
            "code_flow",
            path=twin.authorize_path(),
            headers={"Cookie": servers.twin_cookie},
            ok=(200, 302),
            connections=fast,
            exchange_prefix="/oauth/token",
            exchange_body=twin.exchange_body(),
        )
    if key == "twin_refresh":
        conn = servers.main.conn
        pool = floors.twin_refresh_tokens(conn, twin, 50 * fast)
        return Load(
            key,
            port,
            "refresh",
            connections=fast,
            secrets=pool,
            client_id=twin.client_id,
            token_path="/oauth/token",
        )
    if key == "twin_client_credentials":
        basic = base64.b64encode(f"{twin.machine_client_id}:{twin.machine_client_secret}".encode()).decode()
        return Load(
            key,
            port,
            method="POST",
            path="/oauth/token",
            body="grant_type=client_credentials",
            headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"},
            connections=fast,
        )
    raise KeyError(key)


def peer_load(servers: Servers, args: argparse.Namespace, key: str) -> Load:
    """The same load as our row, sent to django-oauth-toolkit (bench/peers.py, bench/dot/)."""
    peer = servers.peer
    dot, port, fast = peer.seed, peer.server.port, args.connections
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    redirect = quote(seed.REDIRECT_URI, safe="")
    if key == "dot_inspect":
        # Its protected resource view: the toolkit's own check of a bearer token.
        return Load(key, port, "bearer", path="/api/inspect", secrets=dot.inspect_tokens, connections=fast)
    if key == "dot_code_flow":
        return Load(
            key,
            port,
            "code_flow",
            path=f"/o/authorize/?response_type=code&client_id={dot.client_id}&redirect_uri={redirect}&scope=public",
            headers={"Cookie": dot.session_cookie},
            ok=(200, 302),
            connections=fast,
            exchange_prefix="/o/token/",
            exchange_body=f"grant_type=authorization_code&client_id={dot.client_id}&redirect_uri={redirect}&code=",
        )
    if key == "dot_refresh":
        return Load(
            key,
            port,
            "refresh",
            connections=fast,
            secrets=dot.take_refresh_tokens(50 * fast),
            client_id=dot.client_id,
            token_path="/o/token/",
        )
    if key == "dot_client_credentials":
        basic = base64.b64encode(f"{dot.machine_client_id}:{dot.machine_client_secret}".encode()).decode()
        return Load(
            key,
            port,
            method="POST",
            path="/o/token/",
            body="grant_type=client_credentials",
            headers={"Authorization": f"Basic {basic}", **form},
            connections=fast,
        )
    raise KeyError(key)
