"""The domains' signing keys: made on first need, encrypted at rest, rotated, published."""

import json

from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.database import db
from authsvc.core.models import AuditRecord, Domain, SigningKey
from authsvc.oauth import keys
from tests.helpers import HOST, OTHER_HOST, headers

JWKS = "/auth/oauth/jwks"
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}


def run(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_jwks_is_public_cacheable_and_holds_a_first_rs256_key(client, setup):
    response = client.get(JWKS, headers=headers())
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "public, max-age=300"
    assert response.headers["Vary"] == "Host"
    (key,) = response.get_json()["keys"]
    assert key["kty"] == "RSA"
    assert key["alg"] == "RS256"
    assert key["use"] == "sig"
    assert key["kid"]
    assert not PRIVATE_MEMBERS & set(key)
    # Asked again, the same key: it was made once.
    assert client.get(JWKS, headers=headers()).get_json()["keys"] == [key]


def test_the_private_key_is_stored_encrypted_with_the_services_key(client, app, setup, world):
    kid = client.get(JWKS, headers=headers()).get_json()["keys"][0]["kid"]
    (row,) = world.query(select(SigningKey))
    assert row.kid == kid
    assert "PRIVATE KEY" not in row.private_key_encrypted
    assert not PRIVATE_MEMBERS & set(row.public_jwk)
    with app.app_context():
        assert security.decrypt(row.private_key_encrypted).startswith("-----BEGIN PRIVATE KEY-----")


def test_each_domain_has_its_own_keys(client, setup, world):
    world.domain(OTHER_HOST)
    ours = client.get(JWKS, headers=headers()).get_json()["keys"]
    theirs = client.get(JWKS, headers=headers(OTHER_HOST)).get_json()["keys"]
    assert {k["kid"] for k in ours}.isdisjoint(k["kid"] for k in theirs)


def test_an_unknown_host_has_no_jwks(client, setup):
    response = client.get(JWKS, headers=headers("nowhere.example"))
    assert response.status_code == 404
    assert response.get_json()["error"] == "unknown_domain"


def test_every_signed_token_names_its_key_and_verifies_through_the_jwks(client, app, setup, world):
    with app.test_request_context(base_url=f"https://{HOST}"):
        domain = Domain.query.filter_by(host=HOST).one()
        token = keys.sign(domain, {"sub": "1"})
    header = jwt.decode(token, KeySet.import_key_set(client.get(JWKS, headers=headers()).get_json())).header
    assert header["alg"] == "RS256"
    assert header["kid"] == client.get(JWKS, headers=headers()).get_json()["keys"][0]["kid"]


def test_rotation_keeps_the_previous_key_published_until_its_tokens_expire(client, app, runner, setup):
    with app.test_request_context(base_url=f"https://{HOST}"):
        domain = Domain.query.filter_by(host=HOST).one()
        before = keys.sign(domain, {"sub": "1"})
    old_kid = jwt.decode(before, KeySet.import_key_set(client.get(JWKS, headers=headers()).get_json())).header["kid"]

    rotated = run(runner, "keys", "rotate", "--domain", HOST)
    assert set(rotated) == {"kid", "alg"}
    assert rotated["alg"] == "RS256"
    assert rotated["kid"] != old_kid
    listed = run(runner, "keys", "list", "--domain", HOST)["keys"]
    assert [(k["kid"], k["state"]) for k in listed] == [(rotated["kid"], "current"), (old_kid, "previous")]

    jwks = client.get(JWKS, headers=headers()).get_json()
    assert [k["kid"] for k in jwks["keys"]] == [rotated["kid"], old_kid]
    # Signed before the rotation: still verifies. Signed after: the new kid.
    assert jwt.decode(before, KeySet.import_key_set(jwks)).claims == {"sub": "1"}
    with app.test_request_context(base_url=f"https://{HOST}"):
        domain = Domain.query.filter_by(host=HOST).one()
        after = keys.sign(domain, {"sub": "2"})
    assert jwt.decode(after, KeySet.import_key_set(jwks)).header["kid"] == rotated["kid"]


def test_a_rotated_out_key_leaves_the_jwks_once_its_tokens_have_expired(make_app, setup, world):
    app = make_app(AUTHSVC_ID_TOKEN_TTL=0)  # tokens signed by it are expired at once
    client = app.test_client()
    old_kid = client.get(JWKS, headers=headers(), base_url=f"https://{HOST}").get_json()["keys"][0]["kid"]
    rotated = run(app.test_cli_runner(), "keys", "rotate", "--domain", HOST)
    assert [k["kid"] for k in client.get(JWKS, base_url=f"https://{HOST}").get_json()["keys"]] == [rotated["kid"]]
    listed = run(app.test_cli_runner(), "keys", "list", "--domain", HOST)["keys"]
    assert [(k["kid"], k["state"]) for k in listed] == [(rotated["kid"], "current"), (old_kid, "expired")]


def test_an_es256_key_is_rotated_beside_the_rs256_one(client, runner, setup, world):
    rs256 = client.get(JWKS, headers=headers()).get_json()["keys"][0]["kid"]
    es256 = run(runner, "keys", "rotate", "--domain", HOST, "--alg", "ES256")
    assert es256["alg"] == "ES256"
    published = {k["kid"]: k for k in client.get(JWKS, headers=headers()).get_json()["keys"]}
    assert set(published) == {rs256, es256["kid"]}
    assert published[es256["kid"]]["kty"] == "EC"
    assert published[es256["kid"]]["crv"] == "P-256"
    assert not PRIVATE_MEMBERS & set(published[es256["kid"]])
    # The RS256 key is still current: rotating one algorithm leaves the other.
    states = {k["kid"]: k["state"] for k in run(runner, "keys", "list", "--domain", HOST)["keys"]}
    assert states == {rs256: "current", es256["kid"]: "current"}


def test_rotation_is_audited(runner, setup, world):
    rotated = run(runner, "keys", "rotate", "--domain", HOST)
    (record,) = world.query(select(AuditRecord).where(AuditRecord.event == "signing_key.rotated"))
    assert record.actor == "cli"
    assert record.target == f"signing_key:{rotated['kid']}"


def test_keys_commands_fail_clearly_for_an_unknown_domain_or_algorithm(runner, setup):
    result = runner.invoke(args=["keys", "rotate", "--domain", "nowhere.example"])
    assert result.exit_code != 0
    assert "no domain with host 'nowhere.example'" in result.output
    result = runner.invoke(args=["keys", "rotate", "--domain", HOST, "--alg", "HS256"])
    assert result.exit_code != 0
    assert "HS256" in result.output


def test_a_worker_keeps_a_bounded_number_of_parsed_keys_and_still_signs_for_every_domain(app, setup, world):
    """A worker of a service with ten thousand domains would otherwise keep every private key it ever parsed."""
    hosts = [f"tenant-{i}.example" for i in range(keys.PARSED_KEYS_MAX + 2)]
    signed = []
    with app.test_request_context(base_url=f"https://{HOST}"):
        domains = [Domain(name=host, host=host) for host in hosts]
        db.session.add_all(domains)
        db.session.commit()
        for domain in domains:
            signed.append(keys.sign(domain, {"sub": domain.host}, alg="ES256"))
        assert len(app.extensions[keys.EXTENSION]) == keys.PARSED_KEYS_MAX
        # The first domain's key was let go: it is read and parsed again, and signs as before.
        signed.append(keys.sign(domains[0], {"sub": hosts[0]}, alg="ES256"))
    # Checked against the published keys (the rows' public JWKs; the JWKS endpoint would add an RS256 key each).
    published = KeySet.import_key_set({"keys": [row.public_jwk for row in world.query(select(SigningKey))]})
    assert [jwt.decode(token, published).claims["sub"] for token in signed] == [*hosts, hosts[0]]
