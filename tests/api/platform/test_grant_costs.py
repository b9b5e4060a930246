"""What each grant costs in round trips: SQL statements and Redis commands.

A count is behaviour: each statement or round trip a grant adds is CPU and
latency on every request. The counts are what each grant needs: the client
(with its domain), the user or the token, the rows it writes (the token and
its audit record, in one transaction), and its Redis keys. ``tests/helpers/counting.py``
counts on the real servers; the second request of each kind is counted, so
that per-process work done once (a signing key made, a schema built) is not.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from authsvc.core import security
from authsvc.core.database import db
from authsvc.core.models import Domain
from tests.helpers import (
    BACKEND,
    PASSWORD,
    REDIRECT_URI,
    authorize,
    get_code,
    headers,
    location_params,
    pkce_pair,
    signin,
)
from tests.helpers.client_credentials import basic, bound_app
from tests.helpers.counting import trips
from tests.helpers.device import DEVICE_GRANT, start
from tests.helpers.documents import Documents
from tests.helpers.dpop import Holder
from tests.helpers.pages import csrf_token

POSTGRESQL = BACKEND == "postgresql"
# A grant's writes, in one transaction: on PostgreSQL one statement (a data-modifying WITH,
# authsvc.tokens.rows); on SQLite one after the other. The token and its audit record; the code
# exchange notes its code spent first, and a refresh claims its refresh token first.
TOKEN_WRITES = ["WITH"] if POSTGRESQL else ["INSERT", "INSERT"]
EXCHANGE_WRITES = ["WITH"] if POSTGRESQL else ["INSERT", "INSERT", "INSERT"]
REFRESH_WRITES = ["WITH"] if POSTGRESQL else ["UPDATE", "INSERT", "INSERT"]


def limits(n: int) -> int:
    """The rate limiter's round trips: one per limit the request is under, in Redis (an in-memory store without it)."""
    return n if BACKEND == "postgresql" else 0


# The address's rate of unauthenticated requests is tested before the view. A public client's rate is tested once
# the grant has read the client and counted after the view, if it was answered (nobody spends a public client's
# rate with made-up codes): three round trips. A confidential client's is tested and counted in one, once the
# client has authenticated (nobody spends it with a wrong secret): two.
CLIENT_RATES = 3
CONFIDENTIAL_CLIENT_RATES = 2


def token(client, auth=None, **data):
    return client.post("/auth/oauth/token", data=data, headers=headers(), auth=auth)


def exchange(client, client_id, code, auth=None):
    params = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    return token(client, auth, **params) if auth else token(client, client_id=client_id, **params)


def test_the_authorisation_request_reads_domain_user_and_client_once_and_stores_the_code(
    app, client, setup, monkeypatch
):
    signin(client)
    authorize(client, setup.public_app.client_id)
    with trips(app, monkeypatch) as counted:
        response = authorize(client, setup.public_app.client_id)
    assert response.status_code == 302
    # The client with its domain (one statement), the session's user (with whether a directory vouches for it).
    assert counted.sql_verbs() == ["SELECT", "SELECT"], counted
    assert re.search(r"\bJOIN domain ON\b", counted.sql[0]), counted
    if POSTGRESQL:
        assert counted.sql_trips() == ["SELECT", "SELECT"], counted  # in autocommit
    assert counted.store() == ["GET", "SET"], counted  # the session; the code
    assert counted.limiter() == 0  # the authorisation endpoint is not rate limited


def test_the_code_exchange_claims_the_code_in_one_round_trip(app, client, setup, monkeypatch):
    signin(client)
    exchange(client, setup.public_app.client_id, get_code(client, setup.public_app.client_id))
    code = get_code(client, setup.public_app.client_id)
    with trips(app, monkeypatch) as counted:
        response = exchange(client, setup.public_app.client_id, code)
    assert response.status_code == 200
    # Client with domain; user; the code noted spent in SQL, with the tokens (a spent code that a Redis
    # failover lost stays spent: docs/deployment.md).
    assert counted.sql_verbs() == ["SELECT", "SELECT", *EXCHANGE_WRITES], counted
    if POSTGRESQL:
        # Both reads on the readers, so the one write runs in autocommit: no BEGIN and COMMIT around it.
        assert counted.sql_trips() == ["SELECT", "SELECT", "WITH"], counted
    # The code taken and marked spent (MULTI/EXEC); after the commit, whether a replay raced it.
    assert counted.store() == ["MULTI", "EXISTS"], counted
    assert counted.limiter() == limits(CLIENT_RATES)


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    served = Documents(tmp_path_factory.mktemp("ca") / "ca.pem")
    yield served
    served.close()


def approved_code(client, client_id: str, challenge: str) -> str:
    """A code for a client that always gets the consent page: the page approved."""
    page = authorize(client, client_id, code_challenge=challenge, code_challenge_method="S256")
    assert page.status_code == 200, page.get_data(as_text=True)
    approved = client.post(
        page.request.full_path, data={"csrf_token": csrf_token(page), "approve": "1"}, headers=headers()
    )
    assert approved.status_code == 302, approved.get_data(as_text=True)
    return location_params(approved)["code"]


def test_a_metadata_document_clients_exchange_costs_what_a_registered_clients_does(
    app, client, world, setup, documents, monkeypatch
):
    """While its document holds, a Client ID Metadata Document's client is its row, read as any client's: the
    exchange fetches nothing and asks nothing more of SQL or Redis."""
    monkeypatch.setenv("SSL_CERT_FILE", str(documents.ca_file))
    world.update(Domain, setup.domain.id, client_metadata_allow_private_network=True)
    url = documents.serve(
        "/costs/client.json",
        {"client_id": documents.base + "/costs/client.json", "redirect_uris": [REDIRECT_URI]}
        | {"client_name": "Doc client", "token_endpoint_auth_method": "none"},
    )
    signin(client)
    verifier, challenge = pkce_pair()
    first = exchange_with(client, url, approved_code(client, url, challenge), verifier)
    assert first.status_code == 200, first.get_json()
    code = approved_code(client, url, challenge)
    with trips(app, monkeypatch) as counted:
        response = exchange_with(client, url, code, verifier)
    assert response.status_code == 200, response.get_json()
    assert documents.fetched.count("/costs/client.json") == 1
    # As a registered public client's exchange (above): the client with its domain; the user; the writes.
    assert counted.sql_verbs() == ["SELECT", "SELECT", *EXCHANGE_WRITES], counted
    if POSTGRESQL:
        assert counted.sql_trips() == ["SELECT", "SELECT", "WITH"], counted
    assert counted.store() == ["MULTI", "EXISTS"], counted
    assert counted.limiter() == limits(CLIENT_RATES)


def exchange_with(client, client_id: str, code: str, verifier: str):
    params = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    return token(client, client_id=client_id, code_verifier=verifier, **params)


def test_a_refresh_reads_the_token_with_its_client_and_user_in_one_statement(app, client, setup, monkeypatch):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    first = exchange(client, setup.public_app.client_id, code).get_json()
    second = token(
        client, grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=setup.public_app.client_id
    ).get_json()
    with trips(app, monkeypatch) as counted:
        response = token(
            client,
            grant_type="refresh_token",
            refresh_token=second["refresh_token"],
            client_id=setup.public_app.client_id,
        )
    assert response.status_code == 200
    # Client; token with its user; the old token claimed with the new one's writes. A user of no directory is
    # asked nothing more.
    assert counted.sql_verbs() == ["SELECT", "SELECT", *REFRESH_WRITES], counted
    if POSTGRESQL:
        assert counted.sql_trips() == ["SELECT", "SELECT", "WITH"], counted
    assert counted.store() == [], counted
    assert counted.limiter() == limits(CLIENT_RATES)


def test_client_credentials_read_the_client_and_its_service_account(app, client, world, setup, monkeypatch):
    application, secret = bound_app(world, setup)
    auth = headers(Authorization=basic(application.client_id, secret))
    client.post("/auth/oauth/token", data={"grant_type": "client_credentials"}, headers=auth)
    with trips(app, monkeypatch) as counted:
        response = client.post("/auth/oauth/token", data={"grant_type": "client_credentials"}, headers=auth)
    assert response.status_code == 200
    # The service account comes in the client's statement (a LEFT JOIN), not in a SELECT of its own.
    assert counted.sql_verbs() == ["SELECT", *TOKEN_WRITES], counted
    if BACKEND == "postgresql":
        # The client on a reader; the one write in autocommit: no BEGIN and COMMIT around it.
        assert counted.sql_trips() == ["SELECT", "WITH"], counted
    assert re.search(r'LEFT OUTER JOIN "?user"? ', counted.sql[0]), counted
    assert counted.store() == [], counted
    assert counted.limiter() == limits(CONFIDENTIAL_CLIENT_RATES)


def test_a_token_that_names_no_actor_or_methods_stores_them_as_sql_null(app, client, world, setup):
    """A grant with no ``act`` (all but token exchange) and no ``amr`` (client credentials) binds nothing to
    serialise, and a read of the row (inspect, a refresh) has nothing to parse: NULL, not the JSON text null."""
    application, secret = bound_app(world, setup)
    auth = headers(Authorization=basic(application.client_id, secret))
    issued = client.post("/auth/oauth/token", data={"grant_type": "client_credentials"}, headers=auth).get_json()
    with app.app_context():
        row = db.session.execute(
            text("SELECT act IS NULL, amr IS NULL FROM token WHERE access_token_digest = :digest"),
            {"digest": security.digest(issued["access_token"])},
        ).one()
    assert tuple(row) == (True, True)


def test_a_device_poll_reads_its_three_keys_in_one_round_trip(app, client, world, setup, monkeypatch):
    device, _ = world.application(setup.domain, name="Lobby screen", device=True)
    device_code = start(client, device.client_id).get_json()["device_code"]
    token(client, grant_type=DEVICE_GRANT, device_code=device_code, client_id=device.client_id)
    with trips(app, monkeypatch) as counted:
        response = token(client, grant_type=DEVICE_GRANT, device_code=device_code, client_id=device.client_id)
    assert response.get_json()["error"] == "slow_down"
    assert counted.sql_verbs() == ["SELECT"], counted  # the client
    # The request, the answer and the last poll (MGET); the poll noted.
    assert counted.store() == ["MGET", "SET"], counted
    assert counted.limiter() == limits(CLIENT_RATES)


def test_the_password_grant_reads_domain_client_and_user_once(app, client, setup, monkeypatch):
    params = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD}
    token(client, client_id=setup.public_app.client_id, **params)
    with trips(app, monkeypatch) as counted:
        response = token(client, client_id=setup.public_app.client_id, **params)
    assert response.status_code == 200
    assert counted.sql_verbs() == ["SELECT", "SELECT", "SELECT", *TOKEN_WRITES], counted
    assert counted.store() == ["PTTL", "DEL"], counted  # the account's lockout: checked; cleared on success
    assert counted.limiter() == limits(2 + CLIENT_RATES)  # the address, the account, the client's


def test_an_id_token_adds_one_read_of_the_current_key_and_nothing_else(app, client, oidc, monkeypatch):
    auth = (oidc.app.client_id, oidc.secret)
    signin(client)
    assert "id_token" in exchange(client, None, get_code(client, oidc.app.client_id, scope="openid"), auth).get_json()
    plain_code = get_code(client, oidc.app.client_id, scope="public")
    openid_code = get_code(client, oidc.app.client_id, scope="openid")
    with trips(app, monkeypatch) as plain:
        assert exchange(client, None, plain_code, auth).status_code == 200
    with trips(app, monkeypatch) as openid:
        response = exchange(client, None, openid_code, auth)
    assert "id_token" in response.get_json()
    # The client and the user it needs were read for the token: only the domain's current key is new, read in
    # the token's transaction, before its writes (not in a transaction of its own after the commit).
    reads = plain.sql_verbs().count("SELECT")
    assert plain.sql_verbs()[:reads] == ["SELECT"] * reads, plain
    assert openid.sql_verbs() == [*plain.sql_verbs()[:reads], "SELECT", *plain.sql_verbs()[reads:]], openid
    assert openid.sql[reads].startswith("SELECT signing_key."), openid
    if POSTGRESQL:
        # The key's kid is read on a reader too (the key itself is kept per process), so the write stays one
        # statement in autocommit.
        assert plain.sql_trips() == ["SELECT", "SELECT", "WITH"], plain
        assert openid.sql_trips() == ["SELECT", "SELECT", "SELECT", "WITH"], openid
    # Back-channel logout notes the relying party of the session.
    assert openid.store() == [*plain.store(), "HSET"], openid


def test_a_dpop_proof_adds_one_redis_round_trip_and_no_sql(app, client, setup, monkeypatch):
    holder = Holder()
    signin(client)
    # The first proof learns the server's nonce (use_dpop_nonce); counted is an exchange with it.
    holder.remember(client.post("/auth/oauth/token", data={"grant_type": "x"}, headers=headers(DPoP=holder.proof())))
    code = get_code(client, setup.public_app.client_id)
    params = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    params["client_id"] = setup.public_app.client_id
    with trips(app, monkeypatch) as counted:
        response = client.post("/auth/oauth/token", data=params, headers=headers(DPoP=holder.proof()))
    assert response.get_json()["token_type"] == "DPoP", response.get_json()
    # As a bearer exchange (above), the key's thumbprint stored in the same INSERT.
    assert counted.sql_verbs() == ["SELECT", "SELECT", *EXCHANGE_WRITES], counted
    # The proof's jti claimed and the nonces read in one pipeline (SET NX, SET NX, MGET), then the code's trips.
    assert counted.store() == ["SET", "MULTI", "EXISTS"], counted
    assert counted.limiter() == limits(CLIENT_RATES)


def test_a_jwt_access_token_adds_one_read_of_the_current_key_shared_with_the_id_token(
    app, client, world, oidc, monkeypatch
):
    jwt_app, secret = world.application(
        oidc.domain, confidential=True, scopes="public openid", access_token_format="jwt", name="JWT"
    )
    auth = (jwt_app.client_id, secret)
    signin(client)
    assert exchange(client, None, get_code(client, jwt_app.client_id, scope="public"), auth).status_code == 200
    opaque_code = get_code(client, oidc.app.client_id, scope="public")
    jwt_code = get_code(client, jwt_app.client_id, scope="public")
    both_code = get_code(client, jwt_app.client_id, scope="openid")
    with trips(app, monkeypatch) as opaque:
        assert exchange(client, None, opaque_code, (oidc.app.client_id, oidc.secret)).status_code == 200
    with trips(app, monkeypatch) as signed:
        assert exchange(client, None, jwt_code, auth).status_code == 200
    with trips(app, monkeypatch) as both:
        assert "id_token" in exchange(client, None, both_code, auth).get_json()
    # The key is read before anything is written; the ID token of the same response signs with the same read.
    assert signed.sql_verbs() == ["SELECT", "SELECT", "SELECT", *EXCHANGE_WRITES], signed
    assert [s for s in signed.sql if s.startswith("SELECT signing_key.")], signed
    assert both.sql_verbs() == signed.sql_verbs(), both
    assert signed.store() == opaque.store(), signed
