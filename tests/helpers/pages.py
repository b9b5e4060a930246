"""What the tests of the browser's pages share: the CSRF token of a page's form, the sign-in and
consent forms as a browser posts them, and the endpoint that says whether a token still works.

Used by tests/api/auth/test_pages.py, tests/api/auth/test_sessions.py and every test that posts a form.
"""

import re

from tests.helpers import PASSWORD, authorize, headers

INSPECT = "/api/engine/v2/api_keys/inspect"


def csrf_token(response) -> str:
    match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', response.get_data(as_text=True))
    assert match, "the page has no CSRF token"
    return match.group(1)


def login_page(client, next_url="/auth/oauth/authorize?client_id=x"):
    return client.get("/auth/login", query_string={"continue": next_url}, headers=headers())


def submit_login(client, email="person@example.com", password=PASSWORD, next_url="", token=None):
    page = login_page(client, next_url)
    data = {
        "csrf_token": token if token is not None else csrf_token(page),
        "email": email,
        "password": password,
        "continue": next_url,
    }
    return client.post("/auth/login", data=data, headers=headers())


def post_consent(client, application, decision, scope="public mqtt.read"):
    page = authorize(client, application.client_id, scope=scope, state="s")
    action = re.search(r'<form method="post" action="([^"]+)"', page.get_data(as_text=True)).group(1)
    action = action.replace("&amp;", "&")
    return client.post(action, data={"csrf_token": csrf_token(page), decision: "1"}, headers=headers())
