"""One set of rules for client metadata, whoever saves it: the admin API, the CLI, the
console and dynamic registration (RFC 7591/7592) refuse the same keys, the same back-channel logout
URLs and the same redirect URIs."""

from __future__ import annotations

import json
import socket
from ipaddress import ip_address

import pytest
from joserfc.jwk import RSAKey

from tests.helpers import REDIRECT_URI
from tests.helpers.admin_api import call
from tests.helpers.client_registration import METADATA, register
from tests.helpers.console import app_path, as_admin, new_application, text

# 127.0.0.1 in every form the system resolver reads, and other inside addresses.
INSIDE = [
    "https://127.0.0.1/x",
    "https://2130706433/x",
    "https://0x7f000001/x",
    "https://0177.0.0.1/x",
    "https://127.1/x",
    "https://0x7f.0.0.1/x",
    "https://[::1]/x",
    "https://[::ffff:127.0.0.1]/x",
    "https://10.0.0.1/x",
    "https://169.254.169.254/latest",
    "https://167772161/x",  # 10.0.0.1
    "https://localhost/x",
]
USERINFO = ["https://a.example@evil.example/cb", "https://user:pass@app.example.com/cb", "https://@app.example.com/cb"]


@pytest.fixture
def domain(setup):
    return setup.domain


@pytest.mark.parametrize("url", INSIDE)
def test_registration_refuses_a_backchannel_logout_uri_inside(client, issue, url):
    _, value = issue()
    response = register(client, value, {**METADATA, "backchannel_logout_uri": url})
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("url", INSIDE)
def test_the_admin_api_refuses_a_backchannel_logout_uri_inside(client, setup, keys, url):
    response = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"backchannel_logout_uri": url}
    )
    assert response.status_code == 422, response.get_json()
    assert "backchannel_logout_uri" in response.get_json()["fields"]


# Addresses that carry an inside IPv4 address for a translator to reach (NAT64, 6to4) and other ranges
# Python's is_global lets through: the call-time guard (requests-hardened) refuses them, so must the save.
TRANSLATED = [
    "https://[64:ff9b::a00:1]/x",  # NAT64 of 10.0.0.1
    "https://[64:ff9b::7f00:1]/x",  # NAT64 of 127.0.0.1
    "https://[64:ff9b:1::a00:1]/x",  # local-use NAT64
    "https://[2002:a00:1::1]/x",  # 6to4 of 10.0.0.1
    "https://192.0.0.8/x",
    "https://192.88.99.1/x",
]


@pytest.mark.parametrize("url", TRANSLATED)
def test_an_address_the_call_time_guard_refuses_is_refused_when_saved_on_both_paths(client, setup, keys, issue, url):
    answer = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"backchannel_logout_uri": url}
    )
    assert answer.status_code == 422, answer.get_json()
    _, value = issue()
    registered = register(client, value, {**METADATA, "backchannel_logout_uri": url})
    assert registered.status_code == 400, registered.get_json()
    assert registered.get_json()["error"] == "invalid_client_metadata"


def _inside_name() -> str:
    """A host name (not "localhost") that the system resolver answers with inside addresses only: this
    machine's own name, as /etc/hosts usually has it. Stands for a DNS name an attacker points inside."""
    name = socket.gethostname()
    try:
        found = {ip_address(info[4][0].split("%")[0]) for info in socket.getaddrinfo(name, 443)}
    except OSError:
        found = set()
    if not found or any(a.is_global for a in found) or "localhost" in name:
        pytest.skip(f"this machine's name {name!r} does not resolve to inside addresses only")
    return name


def test_a_name_that_resolves_inside_is_refused_when_saved(client, setup, keys, issue):
    url = f"https://{_inside_name()}:8443/logout"
    response = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"backchannel_logout_uri": url}
    )
    assert response.status_code == 422
    assert "resolves" in response.get_json()["fields"]["backchannel_logout_uri"]
    _, value = issue()
    registered = register(client, value, {**METADATA, "backchannel_logout_uri": url})
    assert registered.status_code == 400
    assert "resolves" in registered.get_json()["error_description"]


def test_a_public_backchannel_logout_uri_is_still_accepted_by_both_paths(client, setup, keys, issue):
    url = "https://app.example.com/logout"
    response = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"backchannel_logout_uri": url}
    )
    assert response.status_code == 200, response.get_json()
    _, value = issue()
    registered = register(client, value, {**METADATA, "backchannel_logout_uri": url})
    assert registered.status_code == 201, registered.get_json()


def test_registration_refuses_an_rsa_key_below_2048_bits_as_the_admin_path_does(client, setup, keys, issue):
    small = {"keys": [RSAKey.generate_key(1024, parameters={"kid": "small"}, private=True).as_dict(private=False)]}
    _, value = issue()
    response = register(client, value, {**METADATA, "token_endpoint_auth_method": "private_key_jwt", "jwks": small})
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_client_metadata"
    assert "2048" in response.get_json()["error_description"]
    admin = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {"name": "Keyed", "redirect_uris": [REDIRECT_URI], "jwks": small},
    )
    assert admin.status_code == 422
    assert "2048" in admin.get_json()["fields"]["jwks"]


@pytest.mark.parametrize("uri", USERINFO)
def test_a_redirect_uri_with_userinfo_is_refused_by_registration_and_the_admin_api(client, setup, keys, issue, uri):
    _, value = issue()
    response = register(client, value, {**METADATA, "redirect_uris": [uri]})
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_redirect_uri"
    admin = call(client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"redirect_uris": [uri]})
    assert admin.status_code == 422
    assert "redirect_uris" in admin.get_json()["fields"]
    logout = call(
        client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {"post_logout_redirect_uris": [uri]}
    )
    assert logout.status_code == 422


def test_the_cli_refuses_a_redirect_uri_with_userinfo_and_a_backchannel_uri_inside(runner, setup):
    base = ["apps", "create", "--domain", setup.domain.host, "--name", "X"]
    userinfo = runner.invoke(args=[*base, "--redirect-uri", USERINFO[0]])
    assert userinfo.exit_code != 0
    assert "user name" in userinfo.output
    inside = runner.invoke(args=[*base, "--redirect-uri", REDIRECT_URI, "--backchannel-logout-uri", INSIDE[1]])
    assert inside.exit_code != 0
    assert "loopback or private" in inside.output
    fine = runner.invoke(args=[*base, "--redirect-uri", REDIRECT_URI])
    assert fine.exit_code == 0 and json.loads(fine.output)["client_id"]


def test_the_console_refuses_a_redirect_uri_with_userinfo(client, setup, people):
    as_admin(client)
    response = new_application(client, setup, redirect_uris=USERINFO[0])
    assert response.status_code in (200, 422)
    assert "user name" in text(response)
    assert "Room booking" not in text(client.get("/auth/admin" + app_path(setup), headers={"Host": setup.domain.host}))
