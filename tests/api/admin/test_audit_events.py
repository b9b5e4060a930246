"""The auth events are audited: stored with the change they record, and published on authsvc/events."""

import json

from sqlalchemy import select

from authsvc.core import audit, store
from authsvc.core.models import AuditRecord, Token
from tests.helpers import PASSWORD, get_code, headers, signin
from tests.helpers.code_exchange import exchange, refresh


def events(world, name=None):
    query = select(AuditRecord).order_by(AuditRecord.id)
    if name:
        query = query.where(AuditRecord.event == name)
    return world.query(query)


def password_grant(client, client_id, password=PASSWORD):
    return client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": password,
            "client_id": client_id,
        },
        headers=headers(),
    )


def test_a_sign_in_is_audited(client, world, setup):
    signin(client)
    [record] = events(world, "signin.succeeded")
    assert record.actor == f"user:{setup.person.id}"
    assert record.domain_id == setup.domain.id
    assert record.details == {"via": "signin"}
    assert record.ip == "127.0.0.1"


def test_failed_sign_ins_are_audited_without_the_attempted_email(client, world, setup):
    client.post("/auth/signin", json={"email": "person@example.com", "password": "wrong"}, headers=headers())
    client.post("/auth/signin", json={"email": "nobody@example.com", "password": "wrong"}, headers=headers())
    known, unknown = events(world, "signin.failed")
    assert (known.target, known.details) == (
        f"user:{setup.person.id}",
        {"via": "signin", "reason": "invalid_credentials"},
    )
    assert unknown.target is None
    assert "nobody" not in json.dumps(unknown.as_json())


def test_a_refused_password_grant_is_a_failed_sign_in(client, world, setup):
    response = password_grant(client, setup.public_app.client_id, password="wrong")
    assert response.status_code == 400
    [record] = events(world, "signin.failed")
    assert record.details == {"via": "password_grant", "reason": "invalid_credentials"}


def test_issued_and_refreshed_tokens_are_audited_with_their_row(client, world, setup):
    issued = password_grant(client, setup.public_app.client_id).get_json()
    refresh(client, setup.public_app.client_id, issued["refresh_token"])
    first, second = world.query(select(Token).order_by(Token.id))
    [issue] = events(world, "token.issued")
    [rotation] = events(world, "token.refreshed")
    assert issue.target == f"token:{first.id}"
    assert issue.details == {"grant_type": "password", "client_id": setup.public_app.client_id, "scope": "public"}
    assert issue.actor == f"user:{setup.service.id}"
    assert rotation.target == f"token:{second.id}"
    assert rotation.details["grant_type"] == "refresh_token"


def test_a_code_exchange_is_audited(client, world, setup):
    signin(client)
    exchange(client, setup.public_app.client_id, get_code(client, setup.public_app.client_id))
    [record] = events(world, "token.issued")
    assert record.details["grant_type"] == "authorization_code"
    assert record.actor == f"user:{setup.person.id}"


def test_a_replayed_code_is_audited(client, world, setup):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    exchange(client, setup.public_app.client_id, code)
    assert exchange(client, setup.public_app.client_id, code).status_code == 400
    [record] = events(world, "code.replayed")
    assert record.details == {"revoked": 1}
    assert record.actor == f"client:{setup.public_app.client_id}"


def test_a_reused_refresh_token_is_audited(make_app, world, setup):
    client = make_app(AUTHSVC_REFRESH_REUSE_GRACE=-1).test_client()
    first = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
        base_url="https://auth.example.com",
    ).get_json()
    for _ in range(2):
        client.post(
            "/auth/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": first["refresh_token"],
                "client_id": setup.public_app.client_id,
            },
            headers=headers(),
            base_url="https://auth.example.com",
        )
    [record] = events(world, "refresh_token.reused")
    assert record.details == {"within_grace": False, "revoked": 2}


def test_revocations_are_audited_wherever_they_happen(client, world, setup):
    token = password_grant(client, setup.public_app.client_id).get_json()
    client.post(
        "/auth/oauth/revoke",
        data={"token": token["refresh_token"], "client_id": setup.public_app.client_id},
        headers=headers(),
    )
    token = password_grant(client, setup.public_app.client_id).get_json()
    client.get("/auth/logout", headers=headers(Authorization=f"Bearer {token['access_token']}"))
    token = password_grant(client, setup.public_app.client_id).get_json()
    password_grant(client, setup.public_app.client_id)
    client.post("/auth/logout/all", headers=headers(Authorization=f"Bearer {token['access_token']}"))
    records = events(world, "token.revoked")
    assert [(r.details["via"], r.details["count"]) for r in records] == [
        ("revocation", 1),
        ("logout", 1),
        ("logout_all", 2),
    ]
    assert records[0].actor == f"client:{setup.public_app.client_id}"
    assert records[2].actor == f"user:{setup.service.id}"


def test_auth_events_are_published_on_the_events_channel(client, app, setup):
    audit.PUBLISHER.flush()  # what earlier tests committed is published before this test listens
    with app.app_context():
        pubsub = store.client().pubsub()
        pubsub.subscribe(audit.CHANNEL)
        pubsub.get_message(timeout=1)
        signin(client)
        message = pubsub.get_message(timeout=2)
        pubsub.close()
    published = json.loads(message["data"])
    assert published["event"] == "signin.succeeded"
    assert published["actor"] == f"user:{setup.person.id}"
