"""Token exchange (RFC 8693) and ID-JAGs, with a second instance of the service as the enterprise's identity provider.

The identity provider is another app of the service, on loopback (a real HTTP
server), with a domain of its own: it signs users in, issues their ID tokens and
ID-JAGs, and serves its JWKS, which the first instance (the tool's authorisation
server, the ``app`` domain) fetches through the outbound guard. docs/token-exchange.md.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import Application, AuditRecord, TrustedIssuer
from tests.helpers import (
    BACKEND,
    HOST,
    PASSWORD,
    REDIRECT_URI,
    HttpsClient,
    World,
    authorize,
    empty_database,
    headers,
    in_one_pass,
    location_params,
    signin,
)
from tests.helpers.client_credentials import bound_app
from tests.helpers.counting import trips
from tests.helpers.dpop import Holder
from tests.helpers.enterprise_idp import identity_provider

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ACCESS = "urn:ietf:params:oauth:token-type:access_token"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
JWT = "urn:ietf:params:oauth:token-type:jwt"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
IDP_HOST = "127.0.0.1"
IDP_ISSUER = f"http://{IDP_HOST}"  # as its test client reaches it (loopback); its JWKS comes over the real server
RAS_ISSUER = f"https://{HOST}"
SCOPES = "public openid email mqtt.read"
EXCHANGER = {"impersonation": False, "refresh_tokens": False}


@pytest.fixture
def ras(make_app):
    """The tool's authorisation server: the test domain, which may fetch keys on loopback."""
    app = make_app(AUTHSVC_TRUSTED_ISSUER_ALLOW_PRIVATE_NETWORKS=True)
    with app.app_context():
        empty_database(app)
        store.client().flushdb()
        app.extensions["authsvc.limiter"].reset()
    return app


@pytest.fixture
def client(ras):
    ras.test_client_class = HttpsClient
    return ras.test_client()


@pytest.fixture
def idp(ras, make_app):
    """The enterprise's identity provider: a second app of the service, served on loopback."""
    with identity_provider(make_app, "alice@corp.example") as made:
        yield made


@pytest.fixture
def tool(ras, idp):
    """The tool's domain: Alice, an exchanging application, the agent's client here, and the IdP trusted."""
    world = World(ras)
    domain = world.domain(scopes=SCOPES)
    alice = world.user(domain, "alice@corp.example", name="Alice")
    exchanger, exchanger_secret = world.application(
        domain, confidential=True, scopes=SCOPES, token_exchange=EXCHANGER, resources=["https://mcp.example.com/"]
    )
    agent, agent_secret = world.application(domain, confidential=True, scopes=SCOPES, name="Agent here")
    service = world.user(domain, "robot@example.com", service_account=True)
    robot, robot_secret = bound_app(world, SimpleNamespace(domain=domain, service=service), scopes="public")
    out = ras.test_cli_runner().invoke(
        args=["issuers", "trust", "--domain", HOST, "--issuer", IDP_ISSUER, "--jwks-uri", idp.jwks_uri]
        + ["--subject-tokens", "--id-jag"]
    )
    assert out.exit_code == 0, out.output
    out = idp.app.test_cli_runner().invoke(
        args=["issuers", "audience", "--domain", IDP_HOST, "--issuer", RAS_ISSUER]
        + ["--client", f"{idp.agent.client_id}={agent.client_id}"]
    )
    assert out.exit_code == 0, out.output
    return SimpleNamespace(
        domain=domain,
        alice=alice,
        exchanger=(exchanger.client_id, exchanger_secret),
        agent=(agent.client_id, agent_secret),
        robot=(robot.client_id, robot_secret),
        service=service,
    )


def idp_id_token(idp) -> str:
    """Alice signs in at the identity provider and its agent gets her ID token by the code flow."""
    signin(idp.client, "alice@corp.example", PASSWORD, host=IDP_HOST)
    response = authorize(idp.client, idp.agent.client_id, host=IDP_HOST, scope="openid email")
    code = location_params(response)["code"]
    answer = idp.client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        headers=headers(IDP_HOST),
        auth=(idp.agent.client_id, idp.secret),
    )
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()["id_token"]


def token(client, auth, host=HOST, **data):
    return client.post("/auth/oauth/token", data=data, headers=headers(host), auth=auth)


def robot_token(client, tool) -> str:
    answer = token(client, tool.robot, grant_type="client_credentials")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()["access_token"]


def inspect(client, value):
    return client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {value}")).get_json()


def test_delegation_names_the_actor_and_nests_earlier_ones_in_inspect_and_introspection(client, idp, tool):
    """The exchanged token says who acts for the user (act), and a chain keeps every earlier actor, innermost
    first: a resource server must see that an agent, not the user, is calling."""
    id_token = idp_id_token(idp)
    answer = token(
        client,
        tool.exchanger,
        grant_type=EXCHANGE,
        subject_token=id_token,
        subject_token_type=ID_TOKEN,
        actor_token=robot_token(client, tool),
        actor_token_type=ACCESS,
        scope="public",
    )
    body = answer.get_json()
    assert answer.status_code == 200, body
    assert body["issued_token_type"] == ACCESS and "refresh_token" not in body
    first_act = {"sub": str(tool.service.id), "client_id": tool.robot[0]}
    claims = inspect(client, body["access_token"])
    assert claims["sub"] == str(tool.alice.id) and claims["act"] == first_act
    # Exchanged again, without an actor token: the exchanging client acts, after the robot.
    again = token(
        client, tool.exchanger, grant_type=EXCHANGE, subject_token=body["access_token"], subject_token_type=ACCESS
    ).get_json()
    nested = {"sub": tool.exchanger[0], "client_id": tool.exchanger[0], "act": first_act}
    introspected = client.post(
        "/auth/oauth/introspect", data={"token": again["access_token"]}, headers=headers(), auth=tool.exchanger
    ).get_json()
    assert introspected["active"] and introspected["sub"] == str(tool.alice.id)
    assert introspected["act"] == nested and introspected["scope"] == "public"


def test_impersonation_where_allowed_issues_a_jwt_without_act_and_a_refresh_token(client, ras, idp, tool):
    World(ras).update(
        Application, _app_id(ras, tool.exchanger[0]), token_exchange={"impersonation": True, "refresh_tokens": True}
    )
    answer = token(
        client,
        tool.exchanger,
        grant_type=EXCHANGE,
        subject_token=idp_id_token(idp),
        subject_token_type=ID_TOKEN,
        requested_token_type=JWT,
        resource="https://mcp.example.com/",
    )
    body = answer.get_json()
    assert answer.status_code == 200, body
    assert body["issued_token_type"] == JWT and body["refresh_token"]
    jwks = KeySet.import_key_set(client.get("/auth/oauth/jwks", headers=headers()).get_json())
    claims = jwt.decode(body["access_token"], jwks).claims
    assert claims["sub"] == str(tool.alice.id) and "act" not in claims
    assert claims["aud"] == "https://mcp.example.com/"


def _app_id(app, client_id):
    return World(app).query(select(Application.id).where(Application.client_id == client_id))[0]


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"subject_token_type": None}, "invalid_request"),
        ({"subject_token": "not.a.jwt", "subject_token_type": ID_TOKEN}, "invalid_request"),
        ({"subject_token_type": "urn:ietf:params:oauth:token-type:refresh_token"}, "invalid_request"),
        ({"subject_token": "not-a-token-of-ours"}, "invalid_request"),
        ({"actor_token": "x"}, "invalid_request"),  # without actor_token_type
        ({"scope": "public mqtt.write"}, "invalid_scope"),  # not the client's
        ({"resource": "https://elsewhere.example.com/"}, "invalid_target"),
        ({"requested_token_type": "urn:ietf:params:oauth:token-type:saml2"}, "invalid_request"),
        ({"auth": "agent"}, "unauthorized_client"),  # an application without a token exchange policy
        # Anyone's text in a token's claims: an issuer with a NUL (which PostgreSQL refuses), a payload that is a list.
        (
            {"subject_token": "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4XHUwMDAwIn0.c2ln", "subject_token_type": JWT},
            "invalid_request",
        ),
        ({"subject_token": "eyJhbGciOiJSUzI1NiJ9.WzFd.c2ln", "subject_token_type": JWT}, "invalid_request"),
        ({"requested_token_type": ID_JAG, "audience": RAS_ISSUER}, "invalid_request"),  # not an ID token
    ],
)
def test_refusals_are_rfc_8693_shaped(client, tool, change, error):
    data = {"grant_type": EXCHANGE, "subject_token": robot_token(client, tool), "subject_token_type": ACCESS}
    auth = tool.agent if change.pop("auth", None) else tool.exchanger
    data = {k: v for k, v in {**data, **change}.items() if v is not None}
    answer = token(client, auth, **data)
    assert answer.status_code in (400, 401) and answer.get_json()["error"] == error, answer.get_json()


def test_a_token_of_an_issuer_not_trusted_for_subject_tokens_is_refused(client, ras, idp, tool):
    World(ras).update(TrustedIssuer, _issuer_id(ras), subject_tokens=False)
    answer = token(
        client, tool.exchanger, grant_type=EXCHANGE, subject_token=idp_id_token(idp), subject_token_type=ID_TOKEN
    )
    assert answer.status_code == 400 and answer.get_json()["error"] == "invalid_request"


def _issuer_id(app):
    return World(app).query(select(TrustedIssuer.id).where(TrustedIssuer.issuer == IDP_ISSUER))[0]


def test_every_exchange_is_audited_with_its_actor(client, ras, tool):
    token(
        client, tool.exchanger, grant_type=EXCHANGE, subject_token=robot_token(client, tool), subject_token_type=ACCESS
    )
    records = World(ras).query(select(AuditRecord).where(AuditRecord.event == "token.exchanged"))
    assert [r.details["act"] for r in records] == [{"sub": tool.exchanger[0], "client_id": tool.exchanger[0]}]


def test_id_jag_from_the_identity_provider_gets_an_access_token_once(client, idp, tool):
    """The enterprise flow: the IdP turns Alice's ID token into an ID-JAG for this server, whose JWT bearer
    grant gives the agent's client here a token for Alice; the same ID-JAG is refused a second time."""
    id_token = idp_id_token(idp)
    auth = (idp.agent.client_id, idp.secret)
    issued = token(
        idp.client,
        auth,
        host=IDP_HOST,
        grant_type=EXCHANGE,
        subject_token=id_token,
        subject_token_type=ID_TOKEN,
        requested_token_type=ID_JAG,
        audience=RAS_ISSUER,
        scope="public mqtt.read",
    )
    body = issued.get_json()
    assert issued.status_code == 200, body
    assert body["issued_token_type"] == ID_JAG and body["token_type"] == "N_A"
    answer = token(client, tool.agent, grant_type=JWT_BEARER, assertion=body["access_token"])
    granted = answer.get_json()
    assert answer.status_code == 200, granted
    assert granted["scope"] == "public mqtt.read" and "refresh_token" not in granted
    assert inspect(client, granted["access_token"])["sub"] == str(tool.alice.id)
    replay = token(client, tool.agent, grant_type=JWT_BEARER, assertion=body["access_token"])
    assert replay.status_code == 400 and replay.get_json()["error"] == "invalid_grant"


def test_an_id_jag_is_only_for_its_own_client_and_a_listed_audience(client, idp, tool):
    id_token = idp_id_token(idp)
    auth = (idp.agent.client_id, idp.secret)
    data = {"grant_type": EXCHANGE, "subject_token": id_token, "subject_token_type": ID_TOKEN}
    unlisted = token(idp.client, auth, host=IDP_HOST, requested_token_type=ID_JAG, audience="https://x.example", **data)
    assert unlisted.status_code == 400 and unlisted.get_json()["error"] == "invalid_target"
    jag = token(idp.client, auth, host=IDP_HOST, requested_token_type=ID_JAG, audience=RAS_ISSUER, **data)
    other_client = token(client, tool.exchanger, grant_type=JWT_BEARER, assertion=jag.get_json()["access_token"])
    assert other_client.status_code == 400 and other_client.get_json()["error"] == "invalid_grant"
    # An ID token is not an ID-JAG (typ), whoever signed it.
    as_jag = token(client, tool.agent, grant_type=JWT_BEARER, assertion=id_token)
    assert as_jag.status_code == 400 and as_jag.get_json()["error"] == "invalid_grant"


@in_one_pass("sqlite")  # no storage: the same answer on both
def test_discovery_names_both_grants(client, tool):
    metadata = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert {EXCHANGE, JWT_BEARER} <= set(metadata["grant_types_supported"])


def test_an_exchange_reads_and_writes_what_it_needs(ras, client, idp, tool, monkeypatch):
    """Counted, as every grant is (tests/api/platform/test_grant_costs.py): the client, the subject's token,
    the trusted issuer and its user, and the one write of the token with its audit record."""
    subject = robot_token(client, tool)
    data = {"grant_type": EXCHANGE, "subject_token": subject, "subject_token_type": ACCESS}
    token(client, tool.exchanger, **data)
    with trips(ras, monkeypatch) as counted:
        answer = token(client, tool.exchanger, **data)
    assert answer.status_code == 200, answer.get_json()
    # The client with its domain; the subject token with its claims; its user; the token and its audit record.
    writes = ["WITH"] if BACKEND == "postgresql" else ["INSERT", "INSERT"]
    assert counted.sql_verbs() == ["SELECT", "SELECT", "SELECT", *writes], counted
    if BACKEND == "postgresql":
        assert counted.sql_trips() == ["SELECT", "SELECT", "SELECT", "WITH"], counted  # all in autocommit
    assert counted.store() == [], counted  # no DPoP proof, no jti: nothing in Redis


def test_a_dpop_proof_binds_the_exchanged_token_to_its_key(client, tool):
    """The exchange keeps sender constraint: a token asked for with a proof is bound to that key (cnf.jkt)."""
    holder = Holder()
    holder.remember(client.post("/auth/oauth/token", data={"grant_type": "x"}, headers=headers(DPoP=holder.proof())))
    data = {"grant_type": EXCHANGE, "subject_token": robot_token(client, tool), "subject_token_type": ACCESS}
    answer = client.post("/auth/oauth/token", data=data, headers=headers(DPoP=holder.proof()), auth=tool.exchanger)
    body = answer.get_json()
    assert answer.status_code == 200 and body["token_type"] == "DPoP", body
    introspected = client.post(
        "/auth/oauth/introspect", data={"token": body["access_token"]}, headers=headers(), auth=tool.exchanger
    ).get_json()
    assert introspected["cnf"] == {"jkt": holder.jkt}


def test_the_cli_gives_an_application_its_exchange_policy(ras, tool):
    runner = ras.test_cli_runner()
    base = ["apps", "create", "--domain", HOST, "--name", "Exchanger", "--redirect-uri", REDIRECT_URI]
    made = runner.invoke(args=[*base, "--confidential", "--token-exchange", "--token-exchange-refresh-tokens"])
    assert made.exit_code == 0, made.output
    client_id = json.loads(made.stdout)["client_id"]
    assert World(ras).query(select(Application.token_exchange).where(Application.client_id == client_id)) == [
        {"impersonation": False, "refresh_tokens": True}
    ]
    public = runner.invoke(args=[*base, "--token-exchange"])
    assert public.exit_code != 0 and "--token-exchange" in public.output


def test_may_act_names_the_only_actor_and_the_subjects_scope_bounds_the_token(client, ras, tool, key_server):
    """RFC 8693 4.4: a subject token that says who may act for its subject is exchanged for that actor only;
    and the new token never has more scope than the subject token."""
    from joserfc.jwk import RSAKey

    key = RSAKey.generate_key(2048, parameters={"kid": "partner", "alg": "RS256"})
    key_server.serve(key)
    partner = "https://partner.example.com"
    World(ras).save(
        TrustedIssuer(domain_id=tool.domain.id, issuer=partner, jwks_uri=key_server.url, subject_tokens=True)
    )
    now = int(time.time())
    claims = {"iss": partner, "sub": "a-1", "email": "alice@corp.example", "iat": now, "exp": now + 60}
    claims |= {"scope": "public", "may_act": {"sub": str(tool.service.id), "iss": RAS_ISSUER}}
    subject = jwt.encode({"alg": "RS256", "kid": "partner"}, claims, key)
    data = {"grant_type": EXCHANGE, "subject_token": subject, "subject_token_type": JWT}
    by_client = token(client, tool.exchanger, **data)
    assert by_client.status_code == 400 and "may_act" in by_client.get_json()["error_description"]
    data |= {"actor_token": robot_token(client, tool), "actor_token_type": ACCESS}
    too_much = token(client, tool.exchanger, scope="public mqtt.read", **data)
    assert too_much.status_code == 400 and too_much.get_json()["error"] == "invalid_scope"
    answer = token(client, tool.exchanger, **data)
    assert answer.status_code == 200, answer.get_json()
    claims = inspect(client, answer.get_json()["access_token"])
    assert claims["sub"] == str(tool.alice.id) and claims["scope"] == ["public"]
    assert claims["act"] == {"sub": str(tool.service.id), "client_id": tool.robot[0]}
