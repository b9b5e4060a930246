"""Every endpoint whose view declares limits answers 429 past its rate, whatever the method.

The limits are declared on each endpoint's view (``@rate_limited``, authsvc.core.policy), and
the table of them is read from the app (authsvc.app.limits.endpoint_limits). A method added, or
a declaration the limiter does not apply, would otherwise go unlimited without a test noticing.
Each endpoint gets the same request twice with every rate at one a minute: the second is
refused before the view does anything.
"""

import pytest

from authsvc.app.limits import endpoint_limits
from tests.helpers import HOST, HttpsClient, headers

ONE_A_MINUTE = {
    name: "1/minute"
    for name in (
        "AUTHSVC_SIGNIN_RATE_LIMIT",
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT",
        "AUTHSVC_TOKEN_RATE_LIMIT",
        "AUTHSVC_REGISTRATION_RATE_LIMIT",
        "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT",
        "AUTHSVC_SSO_START_RATE_LIMIT",
        "AUTHSVC_DEVICE_VERIFY_RATE_LIMIT",
        "AUTHSVC_ACCOUNT_MAIL_RATE_LIMIT",
        "AUTHSVC_ACCOUNT_MAIL_CLIENT_RATE_LIMIT",
    )
}
# A body every limit counts: a password attempt (signin-address, and signin-account once it
# fails), a client (token-client), a user code entered (device-verify-address).
BODY = {
    "grant_type": "password",
    "username": "nobody@example.com",
    "email": "nobody@example.com",
    "password": "wrong",
    "client_id": "some-client",
    "user_code": "BCDF-GHJK",
}


# The verification page opened from verification_uri_complete (RFC 8628 3.3.1) only fills its
# form in: entering a user code is the POST, and that is what the device-verify rate counts.
NOT_COUNTED = {("device.verify", "GET"), ("device.verify", "HEAD")}


def _app():
    from authsvc import create_app
    from tests.helpers import base_config

    return create_app(base_config())


APP = _app()
ENDPOINT_LIMITS = endpoint_limits(APP)


def _cases(app=APP):
    cases = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint not in ENDPOINT_LIMITS:
            continue
        for method in sorted(rule.methods - {"OPTIONS"}):
            path = rule.rule
            for argument in rule.arguments:
                path = path.replace(f"<{argument}>", "x").replace(f"<string:{argument}>", "x")
            counted = (rule.endpoint, method) not in NOT_COUNTED
            cases.append(pytest.param(method, path, counted, id=f"{rule.endpoint}-{method}"))
    return cases


CASES = _cases()


def test_every_endpoint_of_the_table_is_reached_by_a_case():
    reached = {case.id.rsplit("-", 1)[0] for case in CASES}
    assert reached == set(ENDPOINT_LIMITS)


@pytest.mark.parametrize("method,path,counted", CASES)
def test_the_second_request_past_a_rate_of_one_is_refused(make_app, setup, method, path, counted):
    app = make_app(**ONE_A_MINUTE)
    app.test_client_class = HttpsClient
    client = app.test_client()
    query = {"id": "x"} if path == "/auth/oauth2" else None
    send = lambda: client.open(  # noqa: E731 - the same request twice
        path, method=method, data=BODY if method == "POST" else None, query_string=query, headers=headers()
    )
    first = send()
    assert first.status_code < 500, first.get_data(as_text=True)
    second = send()
    if not counted:
        assert second.status_code == first.status_code != 429
        return
    assert second.status_code == 429, (HOST, method, path, second.status_code, second.get_data(as_text=True)[:300])
    assert int(second.headers["Retry-After"]) >= 1
