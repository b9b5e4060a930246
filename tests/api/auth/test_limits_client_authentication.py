"""The token endpoint's rates and client authentication: nobody locks a client out by naming it.

The per-client rate counts only requests whose client authentication succeeded. A failed one
counts against the address it came from, and against the client_id it named only in a separate,
higher rate that refuses failures, never the client's correctly authenticated requests
(docs/security.md, "Rate limits").
"""

import base64

import pytest

from tests.helpers import REDIRECT_URI, HttpsClient, get_code, headers, signin

TOKEN = "/auth/oauth/token"


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@pytest.fixture
def limited(make_app, setup):
    def make(**config):
        app = make_app(
            **{
                "AUTHSVC_TOKEN_RATE_LIMIT": "1000/minute",
                "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT": "1000/minute",
                "AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT": "1000/minute",
                **config,
            }
        )
        app.test_client_class = HttpsClient
        return app.test_client()

    return make


@pytest.fixture
def robot(world, setup):
    """A confidential application with a service account: the client_credentials grant."""
    return world.application(setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[])


def credentials(client, client_id, secret, address="192.0.2.1"):
    return client.post(
        TOKEN,
        data={"grant_type": "client_credentials"},
        headers=headers(Authorization=basic(client_id, secret)),
        environ_base={"REMOTE_ADDR": address},
    )


def test_wrong_secrets_from_many_addresses_do_not_lock_the_client_out(limited, robot):
    application, secret = robot
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="3/minute")
    for n in range(22):
        assert credentials(client, application.client_id, "wrong", address=f"198.51.100.{n}").status_code == 401
    assert credentials(client, application.client_id, secret).status_code == 200


def test_wrong_secrets_from_one_address_are_refused_there_only(limited, robot):
    application, secret = robot
    client = limited(AUTHSVC_CLIENT_FAILURE_RATE_LIMIT="3/minute")
    for _ in range(3):
        assert credentials(client, application.client_id, "wrong", address="198.51.100.7").status_code == 401
    refused = credentials(client, application.client_id, secret, address="198.51.100.7")
    assert refused.status_code == 429, refused.get_json()
    assert refused.get_json()["error"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1
    assert credentials(client, application.client_id, secret).status_code == 200


def test_failures_naming_a_client_past_its_rate_are_refused_but_its_own_requests_are_not(limited, robot):
    """Failures spread over many addresses meet the client_id's own failure rate; the client does not."""
    application, secret = robot
    client = limited(AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT="3/minute", AUTHSVC_TOKEN_RATE_LIMIT="10/minute")
    for n in range(3):
        assert credentials(client, application.client_id, "wrong", address=f"198.51.100.{n}").status_code == 401
    refused = credentials(client, application.client_id, "wrong", address="198.51.100.99")
    assert refused.status_code == 429, refused.get_json()
    assert refused.get_json()["error"] == "rate_limited"
    for _ in range(3):
        assert credentials(client, application.client_id, secret).status_code == 200


def test_authenticated_requests_still_count_per_client(limited, robot):
    application, secret = robot
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="2/minute")
    for n in range(2):
        assert credentials(client, application.client_id, secret, address=f"198.51.100.{n}").status_code == 200
    assert credentials(client, application.client_id, secret, address="198.51.100.50").status_code == 429


def test_bad_grants_naming_a_public_client_do_not_lock_it_out(limited, setup):
    """A public client (RFC 6749 2.1) proves nothing by its client_id: anyone may send it with a made-up code
    or refresh token. Such requests count against their address, or the whole application's users would
    share the lock-out one sender caused."""
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="3/minute")
    data = {"grant_type": "refresh_token", "refresh_token": "made-up", "client_id": setup.public_app.client_id}
    for n in range(6):
        answer = client.post(TOKEN, data=data, headers=headers(), environ_base={"REMOTE_ADDR": f"198.51.100.{n}"})
        assert answer.status_code == 400, answer.get_json()
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI}
    exchanged = client.post(TOKEN, data={**data, "client_id": setup.public_app.client_id}, headers=headers())
    assert exchanged.status_code == 200, exchanged.get_json()


def test_a_client_over_its_rate_is_refused_only_once_it_has_authenticated(limited, robot):
    """The client's rate counts its authenticated requests, and it is checked where the client has just
    authenticated (one round trip that tests and counts): a wrong secret is told it is wrong, and counts
    against its address, whether or not the client is over its rate."""
    application, secret = robot
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="1/minute", AUTHSVC_CLIENT_FAILURE_RATE_LIMIT="2/minute")
    assert credentials(client, application.client_id, secret).status_code == 200
    assert credentials(client, application.client_id, secret).status_code == 429
    assert credentials(client, application.client_id, "wrong").status_code == 401
    assert credentials(client, application.client_id, "wrong").status_code == 401
    assert credentials(client, application.client_id, "wrong").status_code == 429  # the address's failures


def test_a_public_client_over_its_rate_is_refused_before_its_grant_runs(limited, setup):
    """A public client's answered requests count after the view; the next one over the rate is refused as soon as
    the grant has read the client, before the code is looked at."""
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="1/minute")
    signin(client)
    data = {"grant_type": "authorization_code", "redirect_uri": REDIRECT_URI, "client_id": setup.public_app.client_id}
    first = client.post(TOKEN, data={**data, "code": get_code(client, setup.public_app.client_id)}, headers=headers())
    assert first.status_code == 200, first.get_json()
    refused = client.post(TOKEN, data={**data, "code": get_code(client, setup.public_app.client_id)}, headers=headers())
    assert refused.status_code == 429, refused.get_json()
    assert int(refused.headers["Retry-After"]) >= 1


@pytest.mark.parametrize(
    "authorization",
    [
        # The user name percent-encoded: Authlib decodes it, so it is the same client.
        lambda client_id, secret: basic("".join(f"%{ord(c):02X}" for c in client_id), secret),
        # A character base64 does not have, after the base64: Authlib's decoder skips it.
        lambda client_id, secret: basic(client_id, secret) + "*",
    ],
    ids=["percent-encoded name", "stray character"],
)
def test_a_client_over_its_rate_is_refused_however_it_spells_its_name(limited, robot, authorization):
    application, secret = robot
    client = limited(AUTHSVC_TOKEN_RATE_LIMIT="2/minute")
    for _ in range(2):
        assert credentials(client, application.client_id, secret).status_code == 200
    spelled = client.post(
        TOKEN,
        data={"grant_type": "client_credentials"},
        headers=headers(Authorization=authorization(application.client_id, secret)),
        environ_base={"REMOTE_ADDR": "192.0.2.1"},
    )
    assert spelled.status_code == 429
    assert spelled.headers["Retry-After"]
