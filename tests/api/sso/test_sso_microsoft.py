"""The Microsoft (Entra ID) preset: the delegated permissions it asks for, ``sso check`` of what admin consent
granted, and trusting e-mail only from a tenant a ``tid`` match rule pins, in the CLI and the
admin API."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import ExternalIdentity, User
from tests.helpers import HOST
from tests.helpers.sso import api, create_provider, sign_in

# The preset


def test_microsoft_preset_asks_for_every_delegated_permission(runner, world, setup):
    created = create_provider(runner, "--preset", "microsoft", "--tenant", "contoso.onmicrosoft.com")
    assert created["admin_consent_url"].startswith(
        "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/adminconsent?client_id=authsvc"
    )
    assert "redirect_uri=https%3A%2F%2Fauth.example.com%2Fauth%2Foauth2%2Fcallback" in created["admin_consent_url"]
    shown = json.loads(runner.invoke(args=["sso", "show", created["id"]]).stdout)
    assert shown["scopes"].split() == [
        "openid",
        "profile",
        "email",
        "offline_access",
        "Place.Read.All",
        "Calendars.ReadWrite",
        "Calendars.ReadWrite.Shared",
        "Contacts.Read",
        "Group.Read.All",
        "User.Read.All",
    ]
    assert shown["authorize_url"] == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize"
    assert shown["token_url"] == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"
    assert shown["userinfo_url"] == "https://graph.microsoft.com/v1.0/me"
    assert shown["profile_mappings"]["email"] == ["mail", "userPrincipalName"]
    assert shown["profile_mappings"]["first_name"] == ["givenName"]
    assert shown["profile_mappings"]["last_name"] == ["surname"]
    assert shown["profile_mappings"]["uid"] == ["id", "oid"]
    check = json.loads(runner.invoke(args=["sso", "check", created["id"]]).stdout)
    assert check["missing"] is None and "nobody has signed in" in check["note"]


def test_sso_check_lists_the_permissions_admin_consent_did_not_grant(client, runner, world, setup, oidc):
    # The Microsoft preset, pointed at the loopback provider standing in for Entra and Graph.
    created = create_provider(
        runner,
        "--preset",
        "microsoft",
        "--tenant",
        "contoso",
        "--issuer",
        oidc.url,
        "--authorize-url",
        oidc.url + "/authorize",
        "--token-url",
        oidc.url + "/token",
        "--userinfo-url",
        oidc.url + "/userinfo",
        "--jwks-url",
        oidc.url + "/jwks",
    )
    oidc.sign_in_as(sub="pairwise-sub", tid="contoso")
    oidc.userinfo = {
        "id": "graph-id-1",
        "mail": "Megan@Contoso.example",
        "givenName": "Megan",
        "surname": "Bowen",
        "displayName": "Megan Bowen",
        "sub": "pairwise-sub",
    }
    oidc.granted_scope = "openid profile email https://graph.microsoft.com/Calendars.ReadWrite User.Read.All"
    _, callback = sign_in(client, created["id"])
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert identity.subject == "graph-id-1"
    [user] = world.query(select(User).where(User.id == identity.user_id))
    assert (user.email, user.name) == ("megan@contoso.example", "Megan Bowen")
    check = json.loads(runner.invoke(args=["sso", "check", created["id"]]).stdout)
    assert check["missing"] == ["Place.Read.All", "Calendars.ReadWrite.Shared", "Contacts.Read", "Group.Read.All"]
    assert "offline_access" in check["granted"]
    oidc.granted_scope = None
    sign_in(client, created["id"])
    assert json.loads(runner.invoke(args=["sso", "check", created["id"]]).stdout)["missing"] == []


# Trusting e-mail from Entra: only with a tenant pinned


def test_trusting_email_from_any_entra_tenant_needs_a_tenant_rule(runner, setup):
    args = ["--preset", "microsoft", "--tenant", "organizations", "--trust-email"]
    refused = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "X", "--client-id", "c", "--client-secret", "s", *args]
    )
    assert refused.exit_code != 0
    assert "tid match rule" in refused.stderr
    pinned = runner.invoke(
        args=[
            "sso",
            "create",
            "--domain",
            HOST,
            "--name",
            "X",
            "--client-id",
            "c",
            "--client-secret",
            "s",
            *args,
            "--match",
            "tid=contoso-tenant-id",
        ]
    )
    assert pinned.exit_code == 0, pinned.stderr


def test_the_cli_refuses_trust_email_for_a_multi_tenant_issuer(runner, setup):
    args = ["--issuer", "https://login.microsoftonline.com/organizations/v2.0", "--trust-email"]
    refused = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "X", "--client-id", "c", "--client-secret", "s", *args]
    )
    assert refused.exit_code != 0
    assert "tid match rule" in refused.stderr


def test_a_patch_cannot_trust_email_from_any_entra_tenant(client, setup, admin_key):
    created = api(
        client,
        "post",
        "/sso",
        admin_key,
        {"name": "E", "client_id": "c", "client_secret": "s", "preset": "microsoft", "tenant": "organizations"},
    )
    assert created.status_code == 201
    path = f"/sso/{created.get_json()['id']}"
    turned_on = api(client, "patch", path, admin_key, {"trust_email": True})
    assert turned_on.status_code == 422
    assert "tid match rule" in turned_on.get_json()["fields"]["trust_email"]
    pinned = api(client, "patch", path, admin_key, {"trust_email": True, "match_rules": {"tid": ["t-1"]}})
    assert pinned.status_code == 200
    dropped = api(client, "patch", path, admin_key, {"match_rules": {}})
    assert dropped.status_code == 422
    assert api(client, "get", path, admin_key).get_json()["match_rules"] == {"tid": ["t-1"]}


@pytest.mark.parametrize(
    "fields",
    [
        {"preset": "microsoft", "tenant": "Organizations"},
        {"preset": "microsoft", "tenant": "COMMON"},
        {"issuer": "https://login.microsoftonline.com/{tenantid}/v2.0"},
        {"issuer": "https://login.microsoftonline.com/organizations/v2.0"},
        {
            "authorize_url": "https://login.microsoftonline.com/Common/oauth2/v2.0/authorize",
            "token_url": "https://login.microsoftonline.com/Common/oauth2/v2.0/token",
            "userinfo_url": "https://graph.microsoft.com/v1.0/me",
        },
    ],
)
def test_trust_email_is_refused_for_any_multi_tenant_microsoft_provider(client, setup, admin_key, fields):
    body = {"name": "E", "client_id": "c", "client_secret": "s", "trust_email": True, **fields}
    refused = api(client, "post", "/sso", admin_key, body)
    assert refused.status_code == 422, refused.get_json()
    assert "tid match rule" in refused.get_json()["fields"]["trust_email"]
    pinned = api(client, "post", "/sso", admin_key, body | {"match_rules": {"tid": ["t-1"]}})
    assert pinned.status_code == 201, pinned.get_json()


def test_trust_email_is_allowed_for_a_single_microsoft_tenant(client, setup, admin_key):
    body = {"name": "E", "client_id": "c", "client_secret": "s", "trust_email": True}
    preset = api(client, "post", "/sso", admin_key, body | {"preset": "microsoft", "tenant": "contoso.example"})
    assert preset.status_code == 201, preset.get_json()
    issuer = "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"
    assert api(client, "post", "/sso", admin_key, body | {"issuer": issuer}).status_code == 201
