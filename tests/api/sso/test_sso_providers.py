"""SSO provider records (docs/sso.md) and the rules that hold on every change, through the CLI and the admin API.

The CLI's create, list and show; reserved authorize parameters; who may repoint a
provider privileged accounts sign in through; and where the service may go for a tenant: no
private networks without a system admin's or the operator's say. The Microsoft preset and its
tenant rules are in tests/api/sso/test_sso_microsoft.py.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import SsoProvider
from tests.fakes.providers import Provider
from tests.helpers import HOST, headers
from tests.helpers.sso import PERSON, api, create_provider, sign_in

# The CLI


def test_sso_create_list_and_show_keep_the_secret_encrypted(runner, world, setup, oidc):
    created = create_provider(runner, "--issuer", oidc.url, "--param", "prompt=login", "--map", "name=nickname,name")
    assert created["callback_url"] == f"https://{HOST}/auth/oauth2/callback"
    [stored] = world.query(select(SsoProvider))
    assert "provider-secret" not in stored.client_secret_encrypted
    listed = json.loads(runner.invoke(args=["sso", "list"]).stdout)["sso"]
    shown = json.loads(runner.invoke(args=["sso", "show", created["id"]]).stdout)
    assert listed[0]["id"] == shown["id"] == created["id"]
    assert "provider-secret" not in json.dumps(listed) + json.dumps(shown)
    assert shown["authorize_params"] == {"prompt": "login"}
    assert shown["profile_mappings"] == {"name": ["nickname", "name"]}
    assert shown["kind"] == "oidc"


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "give --issuer"),
        (["--issuer", "ftp://x.example"], "absolute http(s) URL"),
        (["--issuer", "http://idp.example.com"], "loopback"),
        (["--preset", "microsoft"], "needs --tenant"),
        (["--issuer", "https://idp.example.com", "--map", "novalue"], "NAME=VALUE"),
    ],
)
def test_sso_create_refuses_bad_input(runner, setup, args, message):
    result = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "X", "--client-id", "c", "--client-secret", "s", *args]
    )
    assert result.exit_code != 0
    assert message in result.stderr


# Reserved authorize parameters


@pytest.mark.parametrize(
    "name",
    [
        "state",
        "nonce",
        "redirect_uri",
        "client_id",
        "response_type",
        "code_challenge",
        "code_challenge_method",
        "scope",
        "State",
        "request",
        "request_uri",
        "response_mode",
    ],
)
def test_reserved_authorize_params_are_refused_on_create_and_update(client, runner, setup, admin_key, name):
    body = {"name": "IdP", "client_id": "c", "client_secret": "s", "issuer": "https://idp.example.com"}
    refused = api(client, "post", "/sso", admin_key, body | {"authorize_params": {name: "x"}})
    assert refused.status_code == 422
    assert name in refused.get_json()["fields"]["authorize_params"]
    created = api(client, "post", "/sso", admin_key, body | {"authorize_params": {"prompt": "login"}})
    changed = api(client, "patch", f"/sso/{created.get_json()['id']}", admin_key, {"authorize_params": {name: "x"}})
    assert changed.status_code == 422
    cli = runner.invoke(
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
            "--issuer",
            "https://idp.example.com",
            "--param",
            f"{name}=x",
        ]
    )
    assert cli.exit_code != 0 and name in cli.stderr


def test_a_stored_reserved_param_does_not_replace_ours(client, world, oidc, oidc_id):
    world.update(SsoProvider, oidc_id, authorize_params={"state": "fixed", "redirect_uri": "https://evil.example/cb"})
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query["state"] != ["fixed"] and len(query["state"]) == 1
    assert query["redirect_uri"] == [f"https://{HOST}/auth/oauth2/callback"]


def test_a_stored_reserved_param_is_left_out_however_it_is_spaced_or_cased(client, world, oidc, oidc_id):
    world.update(SsoProvider, oidc_id, authorize_params={" State ": "fixed", "Response_Mode": "form_post", "x": "1"})
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert " State " not in query and "Response_Mode" not in query
    assert query["x"] == ["1"]


# Repointing a provider privileged accounts sign in through


def test_a_domain_admin_cannot_repoint_a_provider_a_privileged_user_signs_in_through(
    on_premises_app, world, setup, oidc
):
    from tests.helpers import OTHER_HOST

    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    admin_key = world.api_key(domain_admin, scopes="public admin", permission="admin")
    system = world.user(world.domain(OTHER_HOST), "system@example.com", admin=True, system_admin=True)
    system_key = world.api_key(system, scopes="public admin", permission="admin")
    client = on_premises_app.test_client()
    provider_id = create_provider(on_premises_app.test_cli_runner(), "--issuer", oidc.url)["id"]
    path = f"/sso/{provider_id}"
    body = {"provider": provider_id, "subject": "root-at-idp"}
    assert api(client, "post", f"/users/{root.id}/identities", system_key, body, host=OTHER_HOST).status_code == 201
    with Provider("oidc") as own:
        # The domain admin's own IdP, which would assert the system admin's subject.
        own.sign_in_as(sub="root-at-idp", email="anyone@example.com")
        for change in (
            {"issuer": own.url},
            {"token_url": own.url + "/token"},
            {"client_id": "someone-else"},
            {"profile_mappings": {"uid": ["email"]}},
        ):
            refused = api(client, "patch", path, admin_key, change)
            assert refused.status_code == 422, (change, refused.get_json())
            [name] = change
            assert "only a system admin" in refused.get_json()["fields"][name]
        [stored] = world.query(select(SsoProvider))
        assert (stored.issuer, stored.token_url, stored.client_id) == (oidc.url, None, "authsvc")
        # Other settings, and the same values again, stay the domain admin's to change.
        assert api(client, "patch", path, admin_key, {"name": "Renamed", "issuer": oidc.url}).status_code == 200
        moved = api(client, "patch", path, system_key, {"issuer": own.url}, host=OTHER_HOST)
        assert moved.status_code == 200, moved.get_json()


def test_a_domain_admin_repoints_a_provider_only_ordinary_users_sign_in_through(on_premises_app, world, setup, oidc):
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    admin_key = world.api_key(domain_admin, scopes="public admin", permission="admin")
    client = on_premises_app.test_client()
    provider_id = create_provider(on_premises_app.test_cli_runner(), "--issuer", oidc.url)["id"]
    oidc.sign_in_as(**PERSON)
    assert sign_in(client, provider_id)[1].status_code == 303
    changed = api(client, "patch", f"/sso/{provider_id}", admin_key, {"client_id": "new-client"})
    assert changed.status_code == 200, changed.get_json()


# Where the service goes for a tenant


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "https://127.0.0.1",
        "https://10.0.0.5",
        "https://localhost",
        "https://169.254.169.254",
        "https://[::1]",
        "https://[::ffff:192.168.1.1]",
        "http://idp.example.com",
        "https://100.64.0.1",
    ],
)
def test_a_domain_admin_cannot_register_a_provider_on_a_private_address(client, setup, admin_key, url):
    body = {"name": "IdP", "client_id": "c", "client_secret": "s", "issuer": url}
    response = api(client, "post", "/sso", admin_key, body)
    assert response.status_code == 422
    assert "issuer" in response.get_json()["fields"]


def test_only_a_system_admin_allows_a_provider_on_private_networks(client, world, setup, admin_key, oidc):
    body = {
        "name": "On-prem",
        "client_id": "authsvc",
        "client_secret": "s",
        "issuer": oidc.url,
        "allow_private_network": True,
    }
    refused = api(client, "post", "/sso", admin_key, body)
    assert refused.status_code == 422 and "allow_private_network" in refused.get_json()["fields"]
    from tests.helpers import OTHER_HOST

    system = world.user(world.domain(OTHER_HOST), "system@example.com", admin=True, system_admin=True)
    system_key = world.api_key(system, scopes="public admin", permission="admin")
    allowed = api(client, "post", "/sso", system_key, body | {"domain": str(setup.domain.id)}, host=OTHER_HOST)
    assert allowed.status_code == 201, allowed.get_json()
    assert allowed.get_json()["allow_private_network"] is True
    path = f"/sso/{allowed.get_json()['id']}"
    # A domain admin may rename it, but new URLs would be theirs: refused while they point inside.
    assert api(client, "patch", path, admin_key, {"name": "Renamed"}).status_code == 200
    moved = api(client, "patch", path, admin_key, {"token_url": oidc.url + "/token"})
    assert moved.status_code == 422 and "issuer" in moved.get_json()["fields"]
    assert world.query(select(SsoProvider.allow_private_network)) == [True]


def test_a_provider_kept_off_private_networks_is_refused_at_request_time(client, world, oidc, oidc_id):
    # Registered as on-premises, then the exception withdrawn (or a name that now resolves inside).
    world.update(SsoProvider, oidc_id, allow_private_network=False)
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 502
    assert "may not call" in response.get_data(as_text=True)
    assert oidc.discovery_requests == 0


def test_a_name_resolving_to_loopback_is_refused_on_the_resolved_address(client, world, oidc, oidc_id):
    port = urlsplit(oidc.url).port
    world.update(SsoProvider, oidc_id, allow_private_network=False, issuer=f"https://localhost:{port}")
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 502
    assert "may not call" in response.get_data(as_text=True)
    assert oidc.discovery_requests == 0


def test_a_provider_redirect_is_not_followed(client, oidc, oidc_id):
    oidc.fault = "redirect"
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 502
    assert oidc.discovery_requests == 1


def test_the_operator_setting_allows_every_provider_on_private_networks(make_app, setup, oidc):
    app = make_app(AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS=True)
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url, on_premises=False)["id"]
    response = app.test_client().get(
        "/auth/oauth2", query_string={"id": provider_id}, headers=headers(), base_url=f"https://{HOST}"
    )
    assert response.status_code == 302


def test_the_cli_needs_allow_private_network_for_a_loopback_provider(runner, setup, oidc):
    args = [
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
        "--issuer",
        oidc.url,
    ]
    refused = runner.invoke(args=args)
    assert refused.exit_code != 0 and "--allow-private-network" in refused.stderr
    assert runner.invoke(args=[*args, "--allow-private-network"]).exit_code == 0
