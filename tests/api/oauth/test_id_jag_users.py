"""An ID-JAG for someone the domain does not know: refused, unless the domain trusts its issuer to create users
(``issuers trust --id-jag --create-users``); then the user is created, without a password, audited as created by
that issuer, and announced as every creation is (the ``user.created`` webhook). The enterprise's identity
provider is a second instance of the service on loopback (tests/helpers/enterprise_idp.py)."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import AuditRecord, TrustedIssuer, User
from tests.helpers import HOST, HttpsClient, World, empty_database, headers
from tests.helpers import webhooks as hooks
from tests.helpers.enterprise_idp import IDP_HOST, IDP_ISSUER, JWT_BEARER, SCOPES, id_jag, identity_provider

RAS_ISSUER = f"https://{HOST}"
receiver = hooks.receiver


@pytest.fixture
def ras(make_app):
    """The tool's authorisation server: may fetch the IdP's keys and deliver webhooks on loopback."""
    app = make_app(AUTHSVC_TRUSTED_ISSUER_ALLOW_PRIVATE_NETWORKS=True, **hooks.CONFIG)
    with app.app_context():
        empty_database(app)
        store.client().flushdb()
        app.extensions["authsvc.limiter"].reset()
    app.test_client_class = HttpsClient
    return app


@pytest.fixture
def idp(ras, make_app):
    with identity_provider(make_app, "alice@corp.example", "bob@corp.example") as made:
        yield made


@pytest.fixture
def tool(ras, idp):
    """The tool's domain: Alice (not Bob), the agent's client here, and the IdP as an ID-JAG audience."""
    world = World(ras)
    domain = world.domain(scopes=SCOPES)
    alice = world.user(domain, "alice@corp.example", name="Alice")
    agent, secret = world.application(domain, confidential=True, scopes=SCOPES, name="Agent here")
    out = idp.app.test_cli_runner().invoke(
        args=["issuers", "audience", "--domain", IDP_HOST, "--issuer", RAS_ISSUER]
        + ["--client", f"{idp.agent.client_id}={agent.client_id}"]
    )
    assert out.exit_code == 0, out.output
    return World(ras), domain, alice, (agent.client_id, secret)


def trust(ras, idp, *flags: str):
    args = ["issuers", "trust", "--domain", HOST, "--issuer", IDP_ISSUER, "--jwks-uri", idp.jwks_uri, *flags]
    return ras.test_cli_runner().invoke(args=args)


def grant(ras, auth, assertion: str):
    data = {"grant_type": JWT_BEARER, "assertion": assertion}
    return ras.test_client().post("/auth/oauth/token", data=data, headers=headers(), auth=auth)


def users_named(world, domain, email: str) -> list[User]:
    return world.query(select(User).where(User.domain_id == domain.id, User.email == email))


def test_an_unknown_user_is_created_when_the_issuer_may_create_users(ras, idp, tool, receiver):
    world, domain, _, auth = tool
    assert trust(ras, idp, "--id-jag", "--create-users").exit_code == 0
    hooked = ras.test_cli_runner().invoke(
        args=["webhooks", "create", "--domain", HOST, "--url", receiver.url, "--events", "user.created"]
    )
    assert hooked.exit_code == 0, hooked.output
    answer = grant(ras, auth, id_jag(idp, "bob@corp.example", RAS_ISSUER))
    assert answer.status_code == 200, answer.get_json()
    [bob] = users_named(world, domain, "bob@corp.example")
    assert bob.email_verified is True and bob.password_hash is None and not bob.disabled
    token = answer.get_json()["access_token"]
    inspected = ras.test_client().get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}")
    )
    assert inspected.get_json()["sub"] == str(bob.id)
    [issuer] = world.query(select(TrustedIssuer).where(TrustedIssuer.domain_id == domain.id))
    [created] = world.query(select(AuditRecord).where(AuditRecord.event == "user.created"))
    assert created.actor == f"trusted_issuer:{issuer.id}" and created.target == f"user:{bob.id}"
    assert created.details["via"] == "id_jag" and created.details["issuer"] == IDP_ISSUER
    hooks.deliver(ras)
    [event] = receiver.wait(1)
    body = json.loads(event["body"])
    assert body["type"] == "user.created" and body["data"]["subject"] == f"user:{bob.id}"
    assert body["data"]["actor"] == f"trusted_issuer:{issuer.id}"
    # The next ID-JAG for Bob finds him: no second user, no second creation.
    again = grant(ras, auth, id_jag(idp, "bob@corp.example", RAS_ISSUER))
    assert again.status_code == 200, again.get_json()
    assert len(users_named(world, domain, "bob@corp.example")) == 1
    assert len(world.query(select(AuditRecord).where(AuditRecord.event == "user.created"))) == 1


def test_without_it_an_unknown_user_is_refused_and_none_is_created(ras, idp, tool):
    world, domain, _, auth = tool
    assert trust(ras, idp, "--id-jag").exit_code == 0
    answer = grant(ras, auth, id_jag(idp, "bob@corp.example", RAS_ISSUER))
    assert answer.status_code == 400 and answer.get_json()["error"] == "invalid_grant"
    assert users_named(world, domain, "bob@corp.example") == []


def test_a_disabled_user_stays_refused_and_is_not_created_again(ras, idp, tool):
    world, domain, alice, auth = tool
    assert trust(ras, idp, "--id-jag", "--create-users").exit_code == 0
    world.update(User, alice.id, disabled=True)
    answer = grant(ras, auth, id_jag(idp, "alice@corp.example", RAS_ISSUER))
    assert answer.status_code == 400 and answer.get_json()["error"] == "invalid_grant"
    assert [user.id for user in users_named(world, domain, "alice@corp.example")] == [alice.id]


def test_creating_users_needs_id_jags_and_is_listed(ras, idp, tool):
    refused = trust(ras, idp, "--subject-tokens", "--create-users")
    assert refused.exit_code == 2 and "--create-users needs --id-jag" in refused.output
    assert trust(ras, idp, "--id-jag", "--create-users").exit_code == 0
    listed = json.loads(ras.test_cli_runner().invoke(args=["issuers", "list", "--domain", HOST]).output)
    assert [row["create_users"] for row in listed["issuers"]] == [True]
    # Trusting it again without the flag turns it off, as for the other flags.
    assert trust(ras, idp, "--id-jag").exit_code == 0
    listed = json.loads(ras.test_cli_runner().invoke(args=["issuers", "list", "--domain", HOST]).output)
    assert [row["create_users"] for row in listed["issuers"]] == [False]


def test_only_a_vouched_for_email_claim_creates_a_user(ras, tool, key_server):
    """A subject identifier is the issuer's own and an address it does not vouch for proves nothing: neither
    makes a user. ``email_verified`` may be absent or JSON true; any other value (false, "false", "true", 0, 1,
    null) is not a vouching. An address is stored in its one form (lower case)."""
    from joserfc import jwt
    from joserfc.jwk import RSAKey

    world, domain, _, auth = tool
    key = RSAKey.generate_key(2048, parameters={"kid": "corp", "alg": "RS256"})
    key_server.serve(key)
    corp = "https://corp-idp.example.com"
    world.save(TrustedIssuer(domain_id=domain.id, issuer=corp, jwks_uri=key_server.url, id_jag=True, create_users=True))

    def assertion(number: int, **claims) -> str:
        now = int(time.time())
        base = {"iss": corp, "aud": RAS_ISSUER, "client_id": auth[0], "jti": f"jag-{number}", "iat": now}
        return jwt.encode(
            {"alg": "RS256", "kid": "corp", "typ": "oauth-id-jag+jwt"}, base | {"exp": now + 60} | claims, key
        )

    refused = [
        assertion(1, sub="carol@corp.example"),
        assertion(2, sub="c-1", email="carol@corp.example", email_verified=False),
        assertion(3, sub="c-1", email="not an address"),
        *(
            assertion(10 + n, sub="c-1", email="carol@corp.example", email_verified=value)
            for n, value in enumerate(["false", "true", 0, 1, None, {}])
        ),
    ]
    for jag in refused:
        answer = grant(ras, auth, jag)
        assert answer.status_code == 400 and answer.get_json()["error"] == "invalid_grant"
    assert users_named(world, domain, "carol@corp.example") == []
    made = grant(ras, auth, assertion(4, sub="c-1", email="Carol@Corp.Example", email_verified=True))
    assert made.status_code == 200, made.get_json()
    assert [user.email for user in users_named(world, domain, "carol@corp.example")] == ["carol@corp.example"]
