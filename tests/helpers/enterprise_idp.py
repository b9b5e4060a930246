"""A second instance of the service as an enterprise's identity provider, on loopback (a real HTTP server for
its JWKS): its own domain and agent, users who sign in there, and the ID-JAGs it issues for them by token
exchange (docs/token-exchange.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

from werkzeug.serving import make_server

from tests.helpers import PASSWORD, QUICK_SHUTDOWN, REDIRECT_URI, World, authorize, headers, location_params, signin

IDP_HOST = "127.0.0.1"
IDP_ISSUER = f"http://{IDP_HOST}"  # as its test client reaches it (loopback)
SCOPES = "public openid email mqtt.read"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


@contextmanager
def identity_provider(make_app, *emails: str) -> Iterator[SimpleNamespace]:
    """The identity provider with a user for each of ``emails`` and an agent allowed to exchange tokens."""
    app = make_app()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()
    world = World(app)
    domain = world.domain(IDP_HOST, scopes=SCOPES)
    exchanger = {"impersonation": False, "refresh_tokens": False}
    agent, secret = world.application(domain, confidential=True, scopes=SCOPES, token_exchange=exchanger)
    for email in emails:
        world.user(domain, email, name=email.partition("@")[0].title())
    try:
        yield SimpleNamespace(
            app=app,
            client=app.test_client(),
            domain=domain,
            agent=agent,
            secret=secret,
            jwks_uri=f"http://127.0.0.1:{server.server_port}/auth/oauth/jwks",
        )
    finally:
        server.shutdown()
        server.server_close()


def id_jag(idp: SimpleNamespace, email: str, audience: str, scope: str = "public") -> str:
    """``email`` signs in at the identity provider, whose agent gets the user's ID token by the code flow and
    exchanges it for an ID-JAG for ``audience``."""
    client = idp.app.test_client()
    signin(client, email, PASSWORD, host=IDP_HOST)
    response = authorize(client, idp.agent.client_id, host=IDP_HOST, scope="openid email")
    auth = (idp.agent.client_id, idp.secret)
    code = {"grant_type": "authorization_code", "code": location_params(response)["code"], "redirect_uri": REDIRECT_URI}
    answer = client.post("/auth/oauth/token", data=code, headers=headers(IDP_HOST), auth=auth)
    assert answer.status_code == 200, answer.get_json()
    exchange = {
        "grant_type": EXCHANGE,
        "subject_token": answer.get_json()["id_token"],
        "subject_token_type": ID_TOKEN,
        "requested_token_type": ID_JAG,
        "audience": audience,
        "scope": scope,
    }
    issued = client.post("/auth/oauth/token", data=exchange, headers=headers(IDP_HOST), auth=auth)
    assert issued.status_code == 200, issued.get_json()
    return issued.get_json()["access_token"]
