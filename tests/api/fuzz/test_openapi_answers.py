"""Real answers conform to the OpenAPI document: a token response, the operations that need a
user's credential, and every admin operation with real admin credentials (success and the usual
failures). Fuzzing rarely finds valid credentials; these tests bring them."""

import io
import json

from PIL import Image

from tests.fakes.saml_idp import SamlIdp
from tests.helpers import PASSWORD, headers
from tests.helpers.openapi_document import ADMIN_OPERATIONS


def test_a_real_token_response_conforms_too(client, world, document):
    """Fuzzing rarely finds valid credentials: check the success bodies with real ones."""
    from jsonschema import Draft202012Validator

    domain = world.domain("localhost")
    application, _ = world.application(domain)
    world.user(domain, "service@localhost", service_account=True)
    token = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@localhost",
            "password": PASSWORD,
            "client_id": application.client_id,
        },
        headers=headers("localhost"),
    ).get_json()
    claims = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers("localhost", Authorization=f"Bearer {token['access_token']}")
    ).get_json()
    for name, body in (("TokenResponse", token), ("Claims", claims)):
        schema_ = {**document["components"]["schemas"][name], "components": document["components"]}
        Draft202012Validator(schema_).validate(body)


def test_real_answers_to_a_credential_conform_too(client, world, document):
    """The same for the operations that need a user: approvals, resource tokens, signing out everywhere."""
    from jsonschema import Draft202012Validator

    from authsvc.core.models import Consent

    domain = world.domain("localhost")
    application, _ = world.application(domain, consent=True)
    service = world.user(domain, "service@localhost", service_account=True)
    world.save(Consent(user_id=service.id, application_id=application.id, scopes="public"))
    client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@localhost",
            "password": PASSWORD,
            "client_id": application.client_id,
        },
        headers=headers("localhost"),
    )
    key = headers("localhost", **{"X-API-Key": world.api_key(service, scopes="public resource_token")})
    calls = [
        ("get", "/auth/oauth/authorized_applications", "/auth/oauth/authorized_applications", 200),
        ("post", "/api/engine/v2/users/resource_token", "/api/engine/v2/users/resource_token", 404),
        ("delete", "/api/engine/v2/users/resource_token", "/api/engine/v2/users/resource_token", 200),
        (
            "delete",
            "/auth/oauth/authorized_applications/{client_id}",
            f"/auth/oauth/authorized_applications/{application.client_id}",
            200,
        ),
        ("post", "/auth/logout/all", "/auth/logout/all", 200),
    ]
    for method, template, path, status in calls:
        response = getattr(client, method)(path, headers=key)
        assert response.status_code == status, (path, response.get_data(as_text=True))
        answer = document["paths"][template][method]["responses"][str(status)]
        schema_ = answer["content"][response.mimetype]["schema"]
        Draft202012Validator({**schema_, "components": document["components"]}).validate(response.get_json())
    assert response.get_json() == {"revoked_tokens": 0}, "withdrawing the approval revoked the token already"


def test_real_admin_answers_conform_too(client, world, document):
    """Every admin operation, with real admin credentials: its success answers, and the usual failures."""
    from jsonschema import Draft202012Validator

    from authsvc.core.database import now

    domain = world.domain("localhost")
    public, _ = world.application(domain, name="Public")
    admin_user = world.user(domain, "admin@localhost", admin=True)
    root = world.user(domain, "root@localhost", admin=True, system_admin=True)
    support = world.user(domain, "support@localhost", support=True)
    admin_key = headers(
        "localhost", **{"X-API-Key": world.api_key(admin_user, scopes="public admin", permission="admin")}
    )
    root_key = headers("localhost", **{"X-API-Key": world.api_key(root, scopes="public admin", permission="admin")})
    support_key = headers(
        "localhost", **{"X-API-Key": world.api_key(support, scopes="public admin", permission="support")}
    )
    api = "/api/engine/v2"
    succeeded = set()

    def call(method, template, status, *, record_id=None, key=admin_key, **kwargs):
        ids = {
            name: kwargs.pop(name, None)
            for name in ("invitation_id", "issuer_id", "resource_id", "webhook_id", "delivery_id")
        }
        path = api + template.format(record_id=record_id, **ids)
        response = getattr(client, method)(path, headers=key, **kwargs)
        assert response.status_code == status, (method, path, response.get_data(as_text=True))
        answer = document["paths"][api + template][method]["responses"][str(status)]
        if "$ref" in answer:
            answer = document["components"]["responses"][answer["$ref"].rpartition("/")[2]]
        schema_ = answer["content"][response.mimetype]["schema"]
        Draft202012Validator({**schema_, "components": document["components"]}).validate(response.get_json())
        if status < 300:
            assert response.headers["Cache-Control"] == "no-store", path
            succeeded.add((api + template, method))
        return response.get_json()

    # Create: the secrets are in these answers only.
    second = call("post", "/domains", 201, key=root_key, json={"name": "Second", "host": "second.example"})
    confidential = call(
        "post",
        "/oauth_apps",
        201,
        json={
            "name": "Backend",
            "redirect_uris": ["https://backend.example/cb"],
            "scopes": "public mqtt.read",
            "confidential": True,
            "access_token_ttl": 600,
        },
    )
    assert confidential["client_secret"]
    kiosk = call(
        "post",
        "/users",
        201,
        json={
            "email": "kiosk@localhost",
            "password": "a long password",
            "name": "Kiosk",
            "service_account": True,
            "groups": ["lobby"],
        },
    )
    key = call(
        "post",
        "/api_keys",
        201,
        json={"user": "kiosk@localhost", "name": "lobby", "permission": "user", "expires_at": now() + 3600},
    )
    assert key["key"].startswith(key["id"] + ".")
    entra = call(
        "post",
        "/sso",
        201,
        json={
            "name": "Entra",
            "client_id": "cid",
            "client_secret": "s",
            "preset": "microsoft",
            "tenant": "contoso.example",
        },
    )
    assert entra["admin_consent_url"] and entra["missing_scopes"] is None
    oidc = call(
        "post",
        "/sso",
        201,
        json={
            "name": "IdP",
            "client_id": "cid",
            "client_secret": "s",
            "issuer": "https://idp.example",
            "profile_mappings": {"email": ["mail"]},
            "match_rules": {"email_domain": ["example.com"]},
            "authorize_params": {"prompt": "login"},
        },
    )

    directory = call(
        "post",
        "/ldap",
        201,
        key=root_key,
        json={
            "name": "AD",
            "url": "ldaps://127.0.0.1:1",
            "bind_dn": "cn=svc,dc=example,dc=org",
            "bind_password": "s",
            "base_dn": "dc=example,dc=org",
            "allow_private_network": True,
        },
    )
    # A SAML 2.0 provider (pysaml2's IdP on loopback serves its metadata) and its metadata refresh.
    with SamlIdp() as idp:
        saml = call(
            "post",
            "/sso",
            201,
            key=root_key,
            json={
                "protocol": "saml",
                "name": "SAML",
                "metadata_url": idp.url + "/metadata",
                "allow_private_network": True,
            },
        )
        assert saml["callback_url"].endswith("/acs") and "sp_key" not in json.dumps(saml)
        call("patch", "/sso/{record_id}", 200, record_id=saml["id"], json={"clock_skew": 30, "groups_attribute": "g"})
        assert "changed" in call("post", "/sso/{record_id}/refresh_metadata", 200, record_id=saml["id"])

    # List, get, change (PATCH and PUT alike).
    records = {
        "/domains": (domain.id, {"session_ttl": 3600}, {"name": "Local"}),
        "/oauth_apps": (confidential["id"], {"require_pkce": True}, {"redirect_uris": ["https://backend.example/2"]}),
        "/users": (kiosk["id"], {"groups": ["lobby", "hall"]}, {"disabled": True}),
        "/api_keys": (key["id"], {"scopes": "public mqtt.read"}, {"expires_at": None}),
        "/sso": (oidc["id"], {"trust_email": True}, {"client_secret": "rotated"}),
        "/ldap": (directory["id"], {"enabled": False}, {"bind_password": "rotated"}),
    }
    for collection, (record_id, patch, put) in records.items():
        listed = call("get", collection, 200, query_string={"per_page": 2})
        assert listed["total"] >= 1 and listed["per_page"] == 2
        fetched = call("get", collection + "/{record_id}", 200, record_id=record_id)
        assert not {"client_secret", "key", "password", "bind_password"} & set(fetched), "secrets are never shown again"
        call("patch", collection + "/{record_id}", 200, record_id=record_id, json=patch)
        call("put", collection + "/{record_id}", 200, record_id=record_id, json=put)
    assert call("get", "/sso", 200, query_string={"q": "entra"})["items"][0]["callback_url"]

    # Regenerate, revoke, delete.
    regenerated = call("post", "/oauth_apps/{record_id}/regenerate", 200, record_id=confidential["id"])
    assert regenerated["client_secret"] != confidential["client_secret"]
    call("post", "/oauth_apps/{record_id}/regenerate", 409, record_id=public.id)
    assert call("post", "/users/{record_id}/revoke", 200, record_id=kiosk["id"]) == {"revoked_tokens": 0}
    assert call("delete", "/api_keys/{record_id}", 200, record_id=key["id"])["revoked"] is True
    call("delete", "/sso/{record_id}", 200, record_id=entra["id"])
    # Registration tokens (dynamic client registration): the token is in the create answer only.
    registration = call("post", "/registration_tokens", 201, json={"name": "partner", "max_uses": 2})
    assert registration["token"] and registration["state"] == "active"
    assert call("get", "/registration_tokens", 200)["total"] == 1
    assert "token" not in call("get", "/registration_tokens/{record_id}", 200, record_id=registration["id"])
    revoked = call("delete", "/registration_tokens/{record_id}", 200, record_id=registration["id"])
    assert revoked["state"] == "revoked"
    # Nothing listens there: the test says so, and nothing of the bind password.
    tested = call("post", "/ldap/{record_id}/test", 200, record_id=directory["id"])
    assert tested["ok"] is False and "rotated" not in tested["error"]
    call("delete", "/ldap/{record_id}", 200, record_id=directory["id"])
    call("delete", "/users/{record_id}", 200, record_id=kiosk["id"])
    call("delete", "/oauth_apps/{record_id}", 200, record_id=confidential["id"])
    call("delete", "/domains/{record_id}", 409, record_id=domain.id, key=root_key)
    call("delete", "/domains/{record_id}", 200, record_id=second["id"], key=root_key)

    # The domain's signing keys: listed, rotated.
    assert call("get", "/domains/{record_id}/signing_keys", 200, record_id=domain.id) == {"keys": []}
    rotated = call("post", "/domains/{record_id}/signing_keys/rotate", 201, record_id=domain.id, json={"alg": "ES256"})
    assert rotated["alg"] == "ES256" and rotated["state"] == "current"
    invitations = "/domains/{record_id}/invitations"
    invited = call("post", invitations, 201, record_id=domain.id, json={"email": "invited@example.com"})
    assert invited["state"] == "pending"
    assert len(call("get", invitations, 200, record_id=domain.id)["items"]) == 1
    resent = "/domains/{record_id}/invitations/{invitation_id}/resend"
    call("post", resent, 200, record_id=domain.id, invitation_id=invited["id"])
    one = "/domains/{record_id}/invitations/{invitation_id}"
    assert call("delete", one, 200, record_id=domain.id, invitation_id=invited["id"])["state"] == "revoked"
    # Trusted issuers (token exchange, ID-JAGs): added, listed, removed.
    issuers = "/domains/{record_id}/trusted_issuers"
    trusted = {"issuer": "https://idp.example.com", "jwks_uri": "https://idp.example.com/jwks", "id_jag": True}
    added = call("post", issuers, 200, record_id=domain.id, json=trusted)
    assert call("get", issuers, 200, record_id=domain.id)["items"] == [added]
    call("delete", issuers + "/{issuer_id}", 200, record_id=domain.id, issuer_id=added["id"])

    # Protected resources (RFC 8707, RFC 9728): registered, listed, read, changed, a duplicate refused, removed.
    resources = "/domains/{record_id}/resources"
    server = call(
        "post",
        resources,
        201,
        record_id=domain.id,
        json={"uri": "https://mcp.example/mcp", "name": "MCP", "scopes": "mqtt.read"},
    )
    assert call("get", resources, 200, record_id=domain.id)["items"] == [server]
    one_resource = resources + "/{resource_id}"
    call("get", one_resource, 200, record_id=domain.id, resource_id=server["id"])
    call("patch", one_resource, 200, record_id=domain.id, resource_id=server["id"], json={"name": "Tools"})
    call(
        "post", resources, 409, record_id=domain.id, json={"uri": server["uri"], "name": "Again", "scopes": "mqtt.read"}
    )
    call("delete", one_resource, 200, record_id=domain.id, resource_id=server["id"])

    # Webhooks: subscribed, read, changed, rotated, a dead letter listed and replayed, deleted.
    hooks = "/domains/{record_id}/webhooks"
    subscription = {"url": "https://hooks.example.com/in", "events": ["user.created"]}
    hook = call("post", hooks, 201, record_id=domain.id, json=subscription)
    assert hook["secret"].startswith("whsec_")
    assert call("get", hooks, 200, record_id=domain.id)["items"][0]["id"] == hook["id"]
    one_hook = hooks + "/{webhook_id}"
    call("get", one_hook, 200, record_id=domain.id, webhook_id=hook["id"])
    call("patch", one_hook, 200, record_id=domain.id, webhook_id=hook["id"], json={"enabled": False})
    assert call("post", one_hook + "/rotate", 200, record_id=domain.id, webhook_id=hook["id"])["secret"]
    dead = _dead_letter(client.application, domain.id, hook["id"])
    assert call("get", hooks + "/dead_letters", 200, record_id=domain.id)["items"][0]["id"] == dead
    call("post", hooks + "/dead_letters/{delivery_id}/replay", 200, record_id=domain.id, delivery_id=dead)
    call("delete", one_hook, 200, record_id=domain.id, webhook_id=hook["id"])

    # The domain's branding: set, its logo uploaded and removed, read by support, reset.
    branded = call("put", "/domains/{record_id}/branding", 200, record_id=domain.id, json={"primary_color": "#FFD400"})
    assert branded["primary_text_color"] == "#000000"
    call("put", "/domains/{record_id}/branding", 422, record_id=domain.id, json={"terms_url": "http://x.example"})
    png = io.BytesIO()
    Image.new("RGB", (8, 8)).save(png, "PNG")
    uploaded = call(
        "put",
        "/domains/{record_id}/branding/logo",
        200,
        record_id=domain.id,
        data=png.getvalue(),
        content_type="image/png",
    )
    assert uploaded["logo"]["content_type"] == "image/png"
    call(
        "put", "/domains/{record_id}/branding/logo", 422, record_id=domain.id, data=b"<svg/>", content_type="image/png"
    )
    assert call("delete", "/domains/{record_id}/branding/logo", 200, record_id=domain.id)["logo"] is None
    assert call("get", "/domains/{record_id}/branding", 200, record_id=domain.id, key=support_key)["logo"] is None
    assert call("delete", "/domains/{record_id}/branding", 200, record_id=domain.id)["primary_color"] is None

    # What the consent page says: a scope's description, an application's logo.
    text = {"scope": "public", "locale": "de", "text": "Ihr öffentliches Profil"}
    described = call("put", "/domains/{record_id}/scope_descriptions", 200, record_id=domain.id, json=text)
    assert text.items() <= described["descriptions"][0].items()
    call("put", "/domains/{record_id}/scope_descriptions", 422, record_id=domain.id, json={"scope": "public"})
    listed = call("get", "/domains/{record_id}/scope_descriptions", 200, record_id=domain.id, key=support_key)
    assert listed["descriptions"] == described["descriptions"] and listed["built_in"]["openid"]
    app_logo = "/oauth_apps/{record_id}/logo"
    logo = call("put", app_logo, 200, record_id=public.id, data=png.getvalue(), content_type="image/png")
    assert call("get", app_logo, 200, record_id=public.id, key=support_key)["logo"] == logo["logo"]
    assert (
        logo["logo"]["content_type"] == "image/png" and not call("delete", app_logo, 200, record_id=public.id)["logo"]
    )

    # The audit log of all that, whole and filtered.
    log = call("get", "/audit", 200)
    assert {"domain.updated", "application.secret_regenerated", "user.tokens_revoked"} <= {
        r["event"] for r in log["items"]
    }
    assert call("get", "/audit", 200, query_string={"event": "sso.*", "since": 0})["total"] == 7, (
        "3 created, 3 updated, 1 deleted"
    )

    # A system admin links an account at a provider to a user.
    linked = call(
        "post",
        "/users/{record_id}/identities",
        201,
        record_id=admin_user.id,
        key=root_key,
        json={"provider": oidc["id"], "subject": "admin-at-idp"},
    )
    assert linked == {"user": str(admin_user.id), "provider": oidc["id"], "subject": "admin-at-idp"}

    # Multi-factor sign-in: the domain's policy, and resetting a user's factors.
    assert call("put", "/domains/{record_id}/mfa_policy", 200, record_id=domain.id, json={"require": "off"}) == {
        "domain": str(domain.id),
        "require": "off",
    }
    assert call("post", "/users/{record_id}/mfa/reset", 200, record_id=support.id) == {"factors_removed": 0}

    # The usual failures, as documented.
    call("get", "/users", 401, key=headers("localhost"))
    call("patch", "/users/{record_id}", 403, record_id=support.id, key=support_key, json={"name": "x"})
    call("post", "/domains", 403, json={"name": "Third", "host": "third.example"})
    call("get", "/oauth_apps/{record_id}", 404, record_id=confidential["id"])
    call("get", "/audit", 400, query_string={"per_page": 0})
    call("post", "/oauth_apps", 400, data=b"{nope", content_type="application/json")
    call("post", "/users", 415, data="email=x@localhost", content_type="application/x-www-form-urlencoded")
    invalid = call("post", "/oauth_apps", 422, json={"name": "", "redirect_uris": ["javascript:alert(1)"]})
    assert set(invalid["fields"]) == {"name", "redirect_uris"}
    call("delete", "/users/{record_id}", 409, record_id=admin_user.id)

    assert succeeded == set(ADMIN_OPERATIONS), "every admin operation answered at least once"


def _dead_letter(app, domain_id: int, webhook_id: str) -> str:
    """A webhook delivery given up, as the outbox's sender leaves one; its id."""
    from authsvc import outbox
    from authsvc.core.database import db

    with app.app_context():
        message = {"endpoint": webhook_id, "id": "msg_dead", "type": "user.created", "body": "{}"}
        item = outbox.queue("webhook", json.dumps(message), domain_id=domain_id)
        db.session.flush()
        item.given_up_at, item.attempts, item.last_error = item.created_at, 3, "Undelivered: HTTP 500"
        db.session.commit()
        ident = str(item.id)
        db.session.remove()
    return ident
