"""docs/platform.md#code-exchange: exchanging an authorisation code, PKCE (RFC 7636), and refresh with rotation."""

import base64
import threading
import time

import pytest
from sqlalchemy import create_engine, select, text

from authsvc.core import security
from authsvc.core.models import AuditRecord, Token
from tests.helpers import BACKEND, DATABASE_URL, REDIRECT_URI, HttpsClient, get_code, headers, pkce_pair, signin
from tests.helpers.code_exchange import exchange, refresh, tokens_for


def inspect(client, access_token):
    return client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {access_token}"))


@pytest.mark.parametrize("where", ["query", "form", "json"])
def test_the_specs_exchange_issues_a_token(client, setup, where):
    signin(client)
    code = get_code(client, setup.public_app.client_id, scope="public mqtt.read")
    response = exchange(client, setup.public_app.client_id, code, where=where)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["token_type"] == "bearer"
    assert body["scope"] == "public mqtt.read"
    assert isinstance(body["created_at"], int)
    assert response.headers["Cache-Control"] == "no-store"
    claims = inspect(client, body["access_token"]).get_json()
    assert claims["sub"] == str(setup.person.id)
    assert claims["client_id"] == setup.public_app.client_id


def test_omitted_scope_grants_public(client, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id, scope=None)
    assert exchange(client, setup.public_app.client_id, code).get_json()["scope"] == "public"


def test_a_code_is_single_use_and_its_replay_revokes_the_tokens_it_gave(client, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    first = exchange(client, setup.public_app.client_id, code).get_json()
    assert inspect(client, first["access_token"]).status_code == 200
    replay = exchange(client, setup.public_app.client_id, code)
    assert replay.status_code == 400
    assert replay.get_json()["error"] == "invalid_grant"
    assert inspect(client, first["access_token"]).status_code == 401
    refresh = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    )
    assert refresh.get_json()["error"] == "invalid_grant"


def test_a_code_expires(make_app, setup):
    app = make_app(AUTHSVC_CODE_TTL=1)
    client = app.test_client()
    client.environ_base["HTTP_HOST"] = "auth.example.com"
    response = client.post(
        "/auth/signin",
        query_string={"email": "person@example.com", "password": "correct horse battery staple"},
        base_url="https://auth.example.com",
    )
    assert response.status_code == 202
    response = client.get(
        "/auth/oauth/authorize",
        query_string={"response_type": "code", "client_id": setup.public_app.client_id, "redirect_uri": REDIRECT_URI},
        base_url="https://auth.example.com",
    )
    code = response.headers["Location"].split("code=")[1].split("&")[0]
    time.sleep(2.1)
    late = client.post(
        "/auth/oauth/token",
        query_string={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": setup.public_app.client_id,
            "redirect_uri": REDIRECT_URI,
        },
        base_url="https://auth.example.com",
    )
    assert late.status_code == 400
    assert late.get_json()["error"] == "invalid_grant"


def test_redirect_uri_must_equal_the_authorise_calls(client, setup, world):
    app2, _ = world.application(setup.domain, redirect_uris=[REDIRECT_URI, "https://app.example.com/second"])
    signin(client)
    code = get_code(client, app2.client_id)
    response = exchange(client, app2.client_id, code, redirect_uri="https://app.example.com/second")
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_grant"


def test_a_code_is_bound_to_its_client(client, setup, world):
    other_app, _ = world.application(setup.domain, name="Other")
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    response = exchange(client, other_app.client_id, code)
    assert response.get_json()["error"] == "invalid_grant"


def test_a_confidential_client_must_authenticate_for_its_code(client, setup):
    signin(client)
    code = get_code(client, setup.confidential_app.client_id)
    unauthenticated = exchange(client, setup.confidential_app.client_id, code)
    assert unauthenticated.get_json()["error"] == "invalid_client"
    code = get_code(client, setup.confidential_app.client_id)
    basic = base64.b64encode(f"{setup.confidential_app.client_id}:{setup.client_secret}".encode()).decode()
    response = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        headers=headers(Authorization=f"Basic {basic}"),
    )
    assert response.status_code == 200, response.get_json()


def test_client_secret_in_the_query_string_is_refused(client, setup):
    signin(client)
    code = get_code(client, setup.confidential_app.client_id)
    response = exchange(client, setup.confidential_app.client_id, code, client_secret=setup.client_secret)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


@pytest.mark.parametrize("method", ["S256", "plain"])
def test_pkce_verifier_is_checked(client, setup, world, method):
    # plain only where the application allows it (RFC 9700 2.1.1).
    application, _ = world.application(setup.domain, allow_plain_pkce=method == "plain")
    signin(client)
    verifier, challenge = pkce_pair()
    if method == "plain":
        challenge = verifier
    code = get_code(client, application.client_id, code_challenge=challenge, code_challenge_method=method)
    assert exchange(client, application.client_id, code, code_verifier=verifier).status_code == 200
    code = get_code(client, application.client_id, code_challenge=challenge, code_challenge_method=method)
    wrong = exchange(client, application.client_id, code, code_verifier=pkce_pair()[0])
    assert wrong.status_code == 400
    assert wrong.get_json()["error"] == "invalid_grant"


def test_pkce_code_without_verifier_is_refused(client, setup):
    signin(client)
    _, challenge = pkce_pair()
    code = get_code(client, setup.public_app.client_id, code_challenge=challenge, code_challenge_method="S256")
    response = exchange(client, setup.public_app.client_id, code)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


def test_a_verifier_for_a_code_issued_without_challenge_is_refused(client, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    response = exchange(client, setup.public_app.client_id, code, code_verifier=pkce_pair()[0])
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


def test_refresh_rotates_the_refresh_token(client, setup):
    first = tokens_for(client, setup)
    second = refresh(client, setup.public_app.client_id, first["refresh_token"])
    assert second.status_code == 200, second.get_json()
    body = second.get_json()
    assert body["refresh_token"] != first["refresh_token"]
    assert body["access_token"] != first["access_token"]
    assert body["scope"] == "public mqtt.read"
    assert inspect(client, body["access_token"]).status_code == 200
    assert refresh(client, setup.public_app.client_id, body["refresh_token"]).status_code == 200


WAITING_ON_LOCKS = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


def _refresh_at_once(apps, client_id, refresh_token):
    """A refresh with ``refresh_token`` through each of ``apps``, each in a thread of its own, started together."""
    start = threading.Barrier(len(apps))
    answers = []

    def run(app):
        app.test_client_class = HttpsClient
        start.wait(timeout=10)
        answers.append(refresh(app.test_client(), client_id, refresh_token))

    threads = [threading.Thread(target=run, args=(app,)) for app in apps]
    for thread in threads:
        thread.start()
    return threads, answers


def _family_and_records(world, access_token):
    [original] = world.query(select(Token).where(Token.access_token_digest == security.digest(access_token)))
    family = world.query(select(Token).where(Token.family == original.family))
    records = world.query(select(AuditRecord).where(AuditRecord.event.in_(["token.refreshed", "refresh_token.reused"])))
    return original, family, records


def test_of_concurrent_refreshes_with_one_refresh_token_exactly_one_succeeds(app, client, setup, world):
    first = tokens_for(client, setup)
    threads, answers = _refresh_at_once([app] * 4, setup.public_app.client_id, first["refresh_token"])
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(a.status_code for a in answers) == [200, 400, 400, 400]
    assert {a.get_json()["error"] for a in answers if a.status_code == 400} == {"invalid_grant"}
    # One successor and one record of it; each refused exchange is a reuse within the grace, recorded, that
    # keeps the family (whether it read the token spent, or lost the claim to the first).
    original, family, records = _family_and_records(world, first["access_token"])
    assert original.refreshed_at is not None and original.revoked_at is None
    assert len(family) == 2
    assert sorted(r.event for r in records) == ["refresh_token.reused"] * 3 + ["token.refreshed"]
    assert all(r.details == {"within_grace": True, "revoked": 0} for r in records if r.event != "token.refreshed")


@pytest.mark.skipif(BACKEND != "postgresql", reason="holds the token's row in a PostgreSQL transaction of its own")
def test_refreshes_that_read_the_token_before_one_claims_it_write_nothing_but_a_reuse_record(
    make_app, client, setup, world
):
    first = tokens_for(client, setup)
    # Three apps, as three workers: each waits at its claim on a connection of its own.
    apps = [make_app() for _ in range(3)]
    digest = security.digest(first["access_token"])
    engine = create_engine(DATABASE_URL)
    try:
        # The watching connection in autocommit: pg_stat_activity stays as first read within a transaction.
        with engine.connect() as lock, engine.connect().execution_options(isolation_level="AUTOCOMMIT") as watch:
            # The token's row held: the three exchanges read it unclaimed, then each waits at its claim.
            lock.execute(text("SELECT id FROM token WHERE access_token_digest = :d FOR UPDATE"), {"d": digest})
            threads, answers = _refresh_at_once(apps, setup.public_app.client_id, first["refresh_token"])
            deadline = time.monotonic() + 10
            while watch.execute(WAITING_ON_LOCKS).scalar() < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert watch.execute(WAITING_ON_LOCKS).scalar() == 3, [a.get_json() for a in answers]
            lock.rollback()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        engine.dispose()
    assert sorted(a.status_code for a in answers) == [200, 400, 400]
    assert {a.get_json()["error"] for a in answers if a.status_code == 400} == {"invalid_grant"}
    original, family, records = _family_and_records(world, first["access_token"])
    assert len(family) == 2  # the two that lost the claim wrote no token, and no record of one
    assert sorted(r.event for r in records) == ["refresh_token.reused"] * 2 + ["token.refreshed"]
    assert inspect(client, first["access_token"]).status_code == 200  # within the grace: the family is kept


def test_reuse_inside_the_grace_window_is_refused_but_keeps_the_family(client, setup):
    first = tokens_for(client, setup)
    second = refresh(client, setup.public_app.client_id, first["refresh_token"]).get_json()
    again = refresh(client, setup.public_app.client_id, first["refresh_token"])
    assert again.status_code == 400
    assert again.get_json()["error"] == "invalid_grant"
    assert inspect(client, second["access_token"]).status_code == 200


def test_reuse_after_the_grace_window_revokes_the_whole_family(make_app, client, setup, clock):
    app = make_app(AUTHSVC_REFRESH_REUSE_GRACE=0)
    first = tokens_for(client, setup)
    second = refresh(client, setup.public_app.client_id, first["refresh_token"]).get_json()
    clock.advance(1.1)
    late_client = app.test_client()
    stolen = late_client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
        base_url="https://auth.example.com",
    )
    assert stolen.get_json()["error"] == "invalid_grant"
    assert inspect(client, second["access_token"]).status_code == 401
    assert inspect(client, first["access_token"]).status_code == 401
    assert refresh(client, setup.public_app.client_id, second["refresh_token"]).get_json()["error"] == "invalid_grant"


def test_refresh_may_narrow_the_scope_but_not_widen_it(client, setup):
    first = tokens_for(client, setup, scope="public")
    wider = refresh(client, setup.public_app.client_id, first["refresh_token"], scope="public mqtt.read")
    assert wider.get_json()["error"] == "invalid_scope"
    full = tokens_for(client, setup)
    narrow = refresh(client, setup.public_app.client_id, full["refresh_token"], scope="public")
    assert narrow.status_code == 200
    assert narrow.get_json()["scope"] == "public"


def test_refresh_token_of_another_client_is_invalid_grant(client, setup, world):
    other_app, _ = world.application(setup.domain, name="Other")
    first = tokens_for(client, setup)
    response = refresh(client, other_app.client_id, first["refresh_token"])
    assert response.get_json()["error"] == "invalid_grant"


def test_tokens_of_one_authorisation_share_a_family(client, setup, world):
    first = tokens_for(client, setup)
    refresh(client, setup.public_app.client_id, first["refresh_token"])
    rows = world.query(select(Token))
    assert len(rows) == 2
    assert rows[0].family == rows[1].family
    assert {r.grant_type for r in rows} == {"authorization_code", "refresh_token"}


def test_lifetimes_are_configurable(make_app, world):
    app = make_app(AUTHSVC_ACCESS_TOKEN_TTL=600)
    domain = world.domain()
    public_app, _ = world.application(domain)
    world.user(domain, "svc@example.com", service_account=True)
    response = app.test_client().post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "svc@example.com",
            "password": "correct horse battery staple",
            "client_id": public_app.client_id,
        },
        headers=headers(),
        base_url="https://auth.example.com",
    )
    assert response.get_json()["expires_in"] == 600
