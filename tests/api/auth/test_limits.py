"""Brute-force limits: request rates per address, account and client, and lockouts that grow."""

import json
import time
from urllib.parse import urlsplit

import pytest
import requests
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import AuditRecord
from tests.fakes.providers import Provider
from tests.helpers import HOST, PASSWORD, HttpsClient, headers

SIGNIN = "/auth/signin"
TOKEN = "/auth/oauth/token"


def assert_429(response, error):
    assert response.status_code == 429, response.get_data(as_text=True)
    body = response.get_json()
    assert body["error"] == error
    retry_after = int(response.headers["Retry-After"])
    assert retry_after >= 1
    assert body["retry_after"] == retry_after
    assert f"Retry in {retry_after} s" in body["error_description"]
    return retry_after


def signin(client, email="person@example.com", password=PASSWORD, address="127.0.0.1"):
    return client.post(
        SIGNIN, json={"email": email, "password": password}, headers=headers(), environ_base={"REMOTE_ADDR": address}
    )


def password_grant(client, client_id, password=PASSWORD, username="service@example.com"):
    return client.post(
        TOKEN,
        json={"grant_type": "password", "username": username, "password": password, "client_id": client_id},
        headers=headers(),
    )


@pytest.fixture
def limited(make_app, setup):
    """An app with small limits, so that the tests reach them quickly."""

    def make(**config):
        settings = {
            "AUTHSVC_SIGNIN_RATE_LIMIT": "1000/minute",
            "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT": "1000/minute",
            "AUTHSVC_TOKEN_RATE_LIMIT": "1000/minute",
            "AUTHSVC_LOCKOUT_THRESHOLD": 3,
            "AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD": 100,
            "AUTHSVC_LOCKOUT_BASE": 1,
            **config,
        }
        app = make_app(**settings)
        app.test_client_class = HttpsClient
        return app.test_client()

    return make


def test_sign_ins_from_one_address_over_the_rate_are_429_with_retry_after(limited):
    client = limited(AUTHSVC_SIGNIN_RATE_LIMIT="3/minute")
    answers = [signin(client, f"user{i}@example.com", "wrong").status_code for i in range(3)]
    assert answers == [401, 401, 401]
    retry_after = assert_429(signin(client), "rate_limited")
    assert retry_after <= 61  # within the one-minute window (rounded up)
    # Another address has its own allowance.
    assert signin(client, address="192.0.2.7").status_code == 202


def test_sign_ins_for_one_account_over_the_rate_are_429_from_any_address(limited):
    client = limited(AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT="2/minute", AUTHSVC_LOCKOUT_THRESHOLD=100)
    for i in range(2):
        response = client.post(
            SIGNIN,
            json={"email": "person@example.com", "password": "wrong"},
            headers=headers(),
            environ_base={"REMOTE_ADDR": f"192.0.2.{i}"},
        )
        assert response.status_code == 401
    response = client.post(
        SIGNIN,
        json={"email": "Person@Example.com", "password": PASSWORD},
        headers=headers(),
        environ_base={"REMOTE_ADDR": "192.0.2.99"},
    )
    assert_429(response, "rate_limited")
    # Other accounts are not held up.
    assert signin(client, "service@example.com").status_code == 202


def test_signin_limit_counts_the_domain_not_the_port(limited, setup):
    """The account's key was the Host header with its port: each port had an allowance of its own."""
    client = limited(AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT="2/minute", AUTHSVC_LOCKOUT_THRESHOLD=100)
    for port in (8443, 8444):
        response = client.post(
            SIGNIN, json={"email": "service@example.com", "password": "wrong"}, headers=headers(f"{HOST}:{port}")
        )
        assert response.status_code == 401
    response = client.post(
        SIGNIN, json={"email": "service@example.com", "password": PASSWORD}, headers=headers(f"{HOST}:8445")
    )
    assert_429(response, "rate_limited")
    # The password grant counts against the same account, whatever the port.
    response = client.post(
        TOKEN,
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(f"{HOST}:9000"),
    )
    assert_429(response, "rate_limited")


def test_repeated_successful_signins_are_not_rate_limited(limited):
    client = limited(AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT="2/minute", WTF_CSRF_ENABLED=False)
    assert [signin(client).status_code for _ in range(5)] == [202] * 5
    page = [
        client.post("/auth/login", data={"email": "person@example.com", "password": PASSWORD}).status_code
        for _ in range(3)
    ]
    assert page == [303] * 3
    # Failures still count against the account, and then the right password waits too.
    for _ in range(2):
        assert signin(client, password="wrong").status_code == 401
    assert_429(signin(client), "rate_limited")


def test_repeated_successful_password_grants_are_not_rate_limited(limited, setup):
    client = limited(AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT="2/minute")
    assert [password_grant(client, setup.public_app.client_id).status_code for _ in range(5)] == [200] * 5
    for _ in range(2):
        assert password_grant(client, setup.public_app.client_id, password="wrong").status_code == 400
    assert_429(password_grant(client, setup.public_app.client_id), "rate_limited")


def test_a_decoy_username_in_the_query_does_not_dodge_the_account_rate(limited, setup):
    client = limited(AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT="2/minute", AUTHSVC_LOCKOUT_THRESHOLD=100)
    for i in range(2):
        response = client.post(
            f"{TOKEN}?username=decoy{i}@example.com",
            data={
                "grant_type": "password",
                "username": "service@example.com",
                "password": "wrong",
                "client_id": setup.public_app.client_id,
            },
            headers=headers(),
        )
        assert response.status_code == 400
    assert_429(password_grant(client, setup.public_app.client_id), "rate_limited")


def test_a_token_request_refused_unread_counts_against_no_account(limited, setup):
    """The limiter reads a token request by the endpoint's own rules, from the one parse of it: a body
    the endpoint refuses before trying any password (``username`` sent twice, RFC 6749 3.2) is no
    failed attempt on the account it names, so it cannot spend that account's rate."""
    client = limited(AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT="2/minute", AUTHSVC_LOCKOUT_THRESHOLD=100)
    for _ in range(2):
        response = client.post(
            TOKEN,
            data={
                "grant_type": "password",
                "username": ["service@example.com", "someone@example.com"],
                "password": "wrong",
                "client_id": setup.public_app.client_id,
            },
            headers=headers(),
        )
        assert response.status_code == 400
        assert response.get_json()["error"] == "invalid_request"
    assert password_grant(client, setup.public_app.client_id).status_code == 200


def test_the_password_grant_shares_the_sign_in_rate(limited, setup):
    client = limited(AUTHSVC_SIGNIN_RATE_LIMIT="2/minute")
    assert signin(client).status_code == 202
    assert password_grant(client, setup.public_app.client_id).status_code == 200
    assert_429(password_grant(client, setup.public_app.client_id), "rate_limited")
    # Other grants are not password attempts.
    refused = client.post(TOKEN, data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": "y"})
    assert refused.status_code == 400


def test_the_token_endpoint_is_limited_per_client(limited, setup, world):
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="3/minute")
    other_app, _ = world.application(setup.domain, name="Other")
    for _ in range(3):
        assert password_grant(client, setup.public_app.client_id).status_code == 200
    assert_429(password_grant(client, setup.public_app.client_id), "rate_limited")
    assert password_grant(client, other_app.client_id).status_code == 200


def test_a_lockout_refuses_even_the_right_password_and_says_when_to_retry(limited, world, setup):
    client = limited()
    for _ in range(3):
        assert signin(client, password="wrong").status_code == 401
    response = signin(client)
    retry_after = assert_429(response, "too_many_attempts")
    assert retry_after == 1
    assert "Too many failed sign-in attempts" in response.get_json()["error_description"]
    assert "Set-Cookie" not in response.headers
    time.sleep(1.1)
    assert signin(client).status_code == 202
    [locked] = world.query(select(AuditRecord).where(AuditRecord.event == "account.locked"))
    assert locked.target == f"user:{setup.person.id}"
    assert locked.details == {"scope": "account", "failures": 3, "seconds": 1}


def test_lockouts_grow_with_every_further_failure(limited):
    client = limited()
    for _ in range(3):
        signin(client, password="wrong")
    assert assert_429(signin(client), "too_many_attempts") == 1
    time.sleep(1.1)
    assert signin(client, password="wrong").status_code == 401
    assert assert_429(signin(client), "too_many_attempts") == 2


def test_a_successful_sign_in_clears_the_accounts_failures(limited):
    client = limited()
    for _ in range(2):
        signin(client, password="wrong")
    assert signin(client).status_code == 202
    for _ in range(2):
        assert signin(client, password="wrong").status_code == 401
    assert signin(client).status_code == 202


def test_unknown_accounts_lock_out_like_known_ones(limited):
    client = limited()
    for _ in range(3):
        assert signin(client, "nobody@example.com", "wrong").status_code == 401
    assert_429(signin(client, "nobody@example.com", "wrong"), "too_many_attempts")


def test_an_address_that_guesses_at_many_accounts_is_locked_out(limited):
    client = limited(AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD=4)
    for i in range(4):
        assert signin(client, f"user{i}@example.com", "wrong").status_code == 401
    assert_429(signin(client), "too_many_attempts")
    assert signin(client, address="192.0.2.8").status_code == 202


def test_the_password_grant_locks_out_and_is_locked_out(limited, setup):
    client = limited()
    for _ in range(3):
        response = password_grant(client, setup.public_app.client_id, password="wrong")
        assert response.get_json()["error"] == "invalid_grant"
    assert_429(password_grant(client, setup.public_app.client_id), "too_many_attempts")
    # The account's lockout holds at the other sign-in doors too.
    assert_429(signin(client, "service@example.com"), "too_many_attempts")


def test_the_sign_in_page_shows_the_lockout(limited):
    client = limited(WTF_CSRF_ENABLED=False)
    for _ in range(3):
        response = client.post("/auth/login", data={"email": "person@example.com", "password": "wrong"})
        assert response.status_code == 401
    response = client.post("/auth/login", data={"email": "person@example.com", "password": PASSWORD})
    assert response.status_code == 429
    assert response.mimetype == "text/html"
    assert response.headers["Retry-After"] == "1"
    assert "Too many failed sign-in attempts" in response.get_data(as_text=True)


def test_lockout_keys_live_in_redis_under_the_prefix_with_a_ttl(limited):
    from authsvc.core import store

    client = limited()
    for _ in range(3):
        signin(client, password="wrong")
    with client.application.app_context():
        keys = store.client().keys("authsvc:limits:*")
        assert any(":lock:account:" in key for key in keys)
        assert all(store.client().ttl(key) > 0 for key in keys)
        assert not any("person@example.com" in key for key in keys)


# SSO starts ---------------------------------------------------------------


@pytest.fixture
def oidc_id(runner, setup):
    with Provider("oidc") as provider:
        provider.sign_in_as(sub="ext-1", email="ada@example.com", email_verified=True, name="Ada")
        result = runner.invoke(
            args=[
                "sso",
                "create",
                "--domain",
                HOST,
                "--name",
                "Corp",
                "--client-id",
                "authsvc",
                "--client-secret",
                "provider-secret",
                "--issuer",
                provider.url,
                "--allow-private-network",
            ]
        )
        assert result.exit_code == 0, result.stderr
        yield json.loads(result.stdout)["id"]


def sso_start(client, provider_id, address="127.0.0.1"):
    """Start an SSO sign-in in a browser of its own (its own flow cookie); returns (browser, response)."""
    browser = client.application.test_client()
    response = browser.get(
        "/auth/oauth2", query_string={"id": provider_id}, headers=headers(), environ_base={"REMOTE_ADDR": address}
    )
    return browser, response


def sso_finish(browser, start):
    at_provider = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(at_provider.headers["Location"])
    return browser.get(back.path, query_string=back.query, headers=headers())


def stored_flows(client):
    with client.application.app_context():
        return len(store.client().keys("authsvc:sso:*"))


def test_sso_starts_are_rate_limited_per_address(limited, oidc_id):
    client = limited(AUTHSVC_SSO_START_RATE_LIMIT="2/minute")
    assert [sso_start(client, oidc_id)[1].status_code for _ in range(2)] == [302, 302]
    retry_after = assert_429(sso_start(client, oidc_id)[1], "rate_limited")
    assert retry_after <= 61
    assert stored_flows(client) == 2
    # Another address has its own allowance.
    assert sso_start(client, oidc_id, address="192.0.2.7")[1].status_code == 302


def test_a_setting_of_several_rates_holds_a_request_to_each(limited, oidc_id):
    # Flask-Limiter's notation: rates separated by ";", each counted; past the longer one, its wait.
    client = limited(AUTHSVC_SSO_START_RATE_LIMIT="5/minute; 2/hour")
    assert [sso_start(client, oidc_id)[1].status_code for _ in range(2)] == [302, 302]
    refused = sso_start(client, oidc_id)[1]
    retry_after = assert_429(refused, "rate_limited")
    assert 61 < retry_after <= 3601
    assert "2 per 1 hour" in refused.get_json()["error_description"]


def test_an_address_holds_a_bounded_number_of_unfinished_sso_flows(limited, oidc_id):
    client = limited(AUTHSVC_SSO_FLOWS_PER_ADDRESS=2)
    first, started = sso_start(client, oidc_id)
    assert started.status_code == 302
    assert sso_start(client, oidc_id)[1].status_code == 302
    retry_after = assert_429(sso_start(client, oidc_id)[1], "too_many_flows")
    assert 590 <= retry_after <= 600  # when the first flow expires (AUTHSVC_SSO_FLOW_TTL)
    assert stored_flows(client) == 2  # the refused start stored nothing
    # Another address holds its own.
    assert sso_start(client, oidc_id, address="192.0.2.7")[1].status_code == 302
    # A finished flow gives its place back.
    assert sso_finish(first, started).status_code == 303
    assert sso_start(client, oidc_id)[1].status_code == 302
    assert_429(sso_start(client, oidc_id)[1], "too_many_flows")
